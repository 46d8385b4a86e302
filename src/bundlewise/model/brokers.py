"""Broker identities compared as Pulsar compares addresses (docs/formats.md, "Input rules").

A broker is named by its id ``host:port`` (``LeaderBroker#getBrokerId``: the web service address) or by one of
its URLs.  Two spellings name the same broker when they agree after:

* the scheme dropped (``http://b:8080`` is ``b:8080``) and a path or trailing ``/`` ignored;
* the host in lower case (host names are case-insensitive: ``java.net.URI#equals`` compares them so);
* a missing port filled with the scheme's default, as Pulsar's ``ServiceURI`` fills it (``http`` 80,
  ``https`` 443, ``pulsar`` 6650, ``pulsar+ssl`` 6651).

A name without a scheme or a port (``broker-1``) is an opaque key (Pulsar's unit tests use such names) and is
compared by its lower-case spelling.  ``check_distinct`` refuses two spellings of one broker in one list, so a
plan can never unload a bundle twice from one broker or "move" it to its own host.
"""

from __future__ import annotations

from collections.abc import Iterable

from bundlewise.model.errors import InputError

DEFAULT_PORTS = {"http": 80, "https": 443, "pulsar": 6650, "pulsar+ssl": 6651}


def broker_key(name: str) -> str:
    """The identity of a broker name or URL (see the module's docstring)."""
    text = name.strip()
    scheme = ""
    if "://" in text:
        scheme, text = text.split("://", 1)
        scheme = scheme.lower()
    authority = text.split("/", 1)[0]
    if authority.startswith("["):  # [IPv6]:port
        host, _, rest = authority.partition("]")
        host, port = host + "]", rest.removeprefix(":")
    else:
        host, sep, port = authority.rpartition(":")
        if not sep or not port.isdigit():
            host, port = authority, ""
    if not port and scheme in DEFAULT_PORTS:
        port = str(DEFAULT_PORTS[scheme])
    if port.isdigit():
        port = str(int(port))
    return f"{host.lower()}:{port}" if port else host.lower()


def check_distinct(names: Iterable[str], where: str) -> None:
    """Refuse two names of one broker in ``names`` (``where`` names the list)."""
    seen: dict[str, str] = {}
    for name in names:
        key = broker_key(name)
        if key in seen:
            first = seen[key]
            same = "listed twice" if first == name else f"and {first!r} are the same broker ({key})"
            raise InputError(f"{name!r} {same}; expected each broker once", field=where)
        seen[key] = name


def spelled_as(name: str, names: Iterable[str]) -> str:
    """``name`` as ``names`` spell the same broker (``name`` itself when none does)."""
    key = broker_key(name)
    return next((n for n in names if broker_key(n) == key), name)
