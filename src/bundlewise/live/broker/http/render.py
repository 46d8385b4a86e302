"""How the broker's answers look on the wire (``RestException``, Jetty's ``ErrorHandler``, ``LookupResult``).

* ``{"reason": …}`` JSON for errors with an explicit status (``ErrorData``).
* 500 for anything else: ``text/plain``, a newline, `` --- An unexpected error occurred in the server ---``,
  a blank line, ``Message: <msg>``, a blank line, ``Stacktrace:`` and a blank line (no Java trace here).
* Authentication failures and bodiless errors (401, 503) are Jetty error pages chosen by ``Accept``:
  JSON ``{"url", "status", "message"}`` (status as a string) for ``application/json`` / ``text/json``,
  plain text for ``text/plain``, HTML for ``text/html``, ``text/*``, ``*/*`` or no ``Accept``, nothing
  for any other type and for PUT/DELETE; always ``Cache-Control: must-revalidate,no-cache,no-store``.
* Redirects (307, ``Location`` only): the request's own URL with the target's scheme, host and port,
  ``authoritative`` set, and the named query parameters dropped (``LookupResult#toRedirectUri``).
"""

from __future__ import annotations

import html
import json
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bundlewise.live.broker.outcomes import Redirect

NO_CACHE = {"Cache-Control": "must-revalidate,no-cache,no-store"}
JSON_TYPE = "application/json"


def reason(status: int, text: str) -> Response:
    return JSONResponse({"reason": text}, status_code=status)


def server_error(message: str) -> Response:
    body = f"\n --- An unexpected error occurred in the server ---\n\nMessage: {message}\n\nStacktrace:\n\n"
    return Response(body, status_code=500, media_type="text/plain")


def error_page(request: Request, status: int, message: str) -> Response:
    """Jetty 9.4's error page for ``sendError(status, message)``."""
    if request.method in ("PUT", "DELETE"):
        return Response(b"", status_code=status, headers=NO_CACHE)
    accept = [
        part.split(";")[0].strip().lower() for part in request.headers.get("accept", "").split(",") if part.strip()
    ]
    uri = request.url.path
    for kind in accept or ["*/*"]:
        if kind in ("application/json", "text/json"):
            body = json.dumps({"url": uri, "status": str(status), "message": message}, indent=0)
            return Response(body, status_code=status, media_type=kind, headers=NO_CACHE)
        if kind == "text/plain":
            text = f"HTTP ERROR {status} {message}\nURI: {uri}\nSTATUS: {status}\nMESSAGE: {message}\n"
            return Response(text, status_code=status, media_type="text/plain;charset=iso-8859-1", headers=NO_CACHE)
        if kind in ("text/html", "text/*", "*/*"):
            m, u = html.escape(message), html.escape(uri)
            page = (
                '<html>\n<head>\n<meta http-equiv="Content-Type" content="text/html;charset=ISO-8859-1"/>\n'
                f"<title>Error {status} {m}</title>\n</head>\n<body><h2>HTTP ERROR {status} {m}</h2>\n"
                f"<table>\n<tr><th>URI:</th><td>{u}</td></tr>\n<tr><th>STATUS:</th><td>{status}</td></tr>\n"
                f"<tr><th>MESSAGE:</th><td>{m}</td></tr>\n</table>\n</body>\n</html>\n"
            )
            return Response(page, status_code=status, media_type="text/html;charset=iso-8859-1", headers=NO_CACHE)
    return Response(b"", status_code=status, headers=NO_CACHE)


def redirect_location(request: Request, target: Redirect) -> str:
    base = urlsplit(target.web_url)
    query = [(k, v) for k, v in parse_qsl(request.url.query, keep_blank_values=True) if k != "authoritative"]
    query = [(k, v) for k, v in query if k not in target.drop]
    query.append(("authoritative", "true" if target.authoritative else "false"))
    raw_path: bytes = request.scope.get("raw_path") or request.url.path.encode()
    return str(urlunsplit((base.scheme or "http", base.netloc, raw_path.decode("latin-1"), urlencode(query), "")))


def redirect(request: Request, target: Redirect) -> Response:
    return Response(status_code=307, headers={"Location": redirect_location(request, target)})
