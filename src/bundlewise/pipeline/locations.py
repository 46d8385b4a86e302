"""Paths of the pipeline as absolute URIs, and the file systems behind them.

Executors run elsewhere, with another working directory, so every path a user gives is made absolute on the
driver before anything reaches a task (``Location.of``):

* a local path (``data/x``, ``/abs/x``, ``file:data/x``) becomes ``file:///cwd/data/x``;
* a URI with a scheme (``hdfs://nn:8020/x``, ``s3a://bucket/x``, ``gs://bucket/x``, ``viewfs://c/x``) stays as
  it is: it is never touched with ``os.path`` (no local ``hdfs:`` folder is ever created).

Two ways reach the bytes of a location:

* ``arrow_fs()``: a ``pyarrow.fs`` file system — the local one for ``file:``, else
  ``pyarrow.fs.FileSystem.from_uri`` (S3 for ``s3``/``s3a``/``s3n``, GCS for ``gs``, HDFS through libhdfs)
  when pyarrow can open it on this machine; ``None`` otherwise.  The fast path's tasks read and write through
  it (``columnar``).
* Spark's own Hadoop file systems: the general path reads and writes with Spark's data sources, and the
  driver checks, lists and renames through Hadoop's ``FileSystem`` API (``hadoop_*`` functions here, which
  need the session).

A local path's file names are taken literally (no percent-decoding), as Spark and Hadoop take them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow.fs as pafs

from bundlewise.model.errors import InputError
from bundlewise.traffic.readers import data_files

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_ARROW_SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "hdfs": "hdfs", "abfs": "abfs"}
"""Schemes pyarrow may open, and the scheme ``FileSystem.from_uri`` knows them by."""


@dataclass(frozen=True)
class Location:
    """An absolute location: ``uri`` for Spark; ``path`` is the local path of a ``file:`` URI, else None."""

    uri: str
    path: str | None = None

    @classmethod
    def of(cls, given: str) -> Location:
        """A user's path or URI → an absolute location (relative local paths against the working directory)."""
        if not given:
            raise InputError("expected a path, got an empty string")
        m = _SCHEME.match(given)
        if m is not None and m.group(1).lower() != "file":
            authority, slash, key = given[m.end() :].partition("/")
            return cls(given[: m.end()] + authority + slash + key.rstrip("/"))
        local = given
        if given.startswith("file:"):
            local = given[len("file:") :]
            if local.startswith("//"):
                rest = local[2:]
                host, _, tail = rest.partition("/")
                if host not in ("", "localhost"):
                    raise InputError(f"expected a file: URI on this host, got {given!r}")
                local = "/" + tail
        absolute = os.path.abspath(local)
        return cls("file://" + absolute, absolute)

    @property
    def is_local(self) -> bool:
        return self.path is not None

    @property
    def scheme(self) -> str:
        m = _SCHEME.match(self.uri)
        return m.group(1).lower() if m else "file"

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    def child(self, name: str) -> Location:
        if self.path is not None:
            return Location.of(os.path.join(self.path, name))
        return Location(self.uri.rstrip("/") + "/" + name)

    def sibling(self, name: str) -> Location:
        """A location in the same directory as this one."""
        if self.path is not None:
            return Location.of(os.path.join(os.path.dirname(self.path), name))
        return Location(self.uri.rstrip("/").rsplit("/", 1)[0] + "/" + name)

    def arrow_fs(self) -> tuple[pafs.FileSystem, str] | None:
        """``(pyarrow file system, path inside it)``, or None when pyarrow cannot open this location here."""
        if self.path is not None:
            return pafs.LocalFileSystem(), self.path
        return _remote_fs(self.uri)


def _remote_fs(uri: str) -> tuple[pafs.FileSystem, str] | None:
    m = _SCHEME.match(uri)
    scheme = m.group(1).lower() if m else ""
    known = _ARROW_SCHEMES.get(scheme)
    if known is None:
        return None
    rest = uri[len(scheme) + 3 :]
    opened = _open_fs(f"{known}://{rest.split('/', 1)[0]}")
    if opened is None:
        return None
    fs, root = opened
    key = rest.split("/", 1)[1] if "/" in rest else ""
    if known in ("s3", "gs"):  # bucket/key paths
        return fs, f"{rest.split('/', 1)[0]}/{key}".rstrip("/")
    return fs, ("/" + key) if not root else root.rstrip("/") + "/" + key


@lru_cache(maxsize=16)
def _open_fs(authority_uri: str) -> tuple[pafs.FileSystem, str] | None:
    """One pyarrow file system per scheme and authority and process (connecting costs)."""
    try:
        fs, root = pafs.FileSystem.from_uri(authority_uri)
    except Exception:  # unsupported here (e.g. no libhdfs), or unreachable: Spark's Hadoop file systems take it
        return None
    return fs, root


def arrow_files(fs: pafs.FileSystem, path: str) -> list[str] | None:
    """The data files at ``path`` (itself, or every file below it), sorted; None when it does not exist —
    ``traffic.readers.data_files``, the one rule (names starting with ``.`` or ``_`` skipped, as Spark does)."""
    return data_files(path, fs)


def _hadoop(spark: Any, location: Location) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(location.uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def hadoop_files(spark: Any, location: Location) -> list[str] | None:
    """Like ``arrow_files``, through Hadoop's ``FileSystem`` (URIs); None when the location does not exist."""
    try:
        fs, path = _hadoop(spark, location)
        if not fs.exists(path):
            return None
        if fs.getFileStatus(path).isFile():
            return [location.uri]
        found = fs.listFiles(path, True)
        root = path.toString().rstrip("/") + "/"
        files = []
        while found.hasNext():
            name = found.next().getPath().toString()
            relative = name[len(root) :] if name.startswith(root) else name
            if not any(part.startswith((".", "_")) for part in relative.split("/")):
                files.append(name)
        return sorted(files)
    except Exception as e:  # Py4J errors: an unknown scheme, an unreachable name node, a permission
        raise InputError(f"cannot read: {first_line(e)}", source=location.uri) from None


def hadoop_bytes(spark: Any, location: Location) -> int:
    """The bytes of every file at the location, through Hadoop's ``FileSystem`` (0 when it cannot say)."""
    try:
        fs, path = _hadoop(spark, location)
        return int(fs.getContentSummary(path).getLength())
    except Exception:  # Py4J errors: the estimate is then unknown
        return 0


def hadoop_mkdirs(spark: Any, location: Location) -> None:
    try:
        fs, path = _hadoop(spark, location)
        fs.mkdirs(path)
    except Exception as e:
        raise InputError(f"cannot write: {first_line(e)}", source=location.uri) from None


def hadoop_exists(spark: Any, location: Location) -> bool:
    fs, path = _hadoop(spark, location)
    return bool(fs.exists(path))


def hadoop_nonempty(spark: Any, location: Location) -> bool:
    """An existing location is a file, or a folder with at least one entry."""
    fs, path = _hadoop(spark, location)
    return not fs.getFileStatus(path).isDirectory() or len(fs.listStatus(path)) > 0


def hadoop_touch(spark: Any, location: Location) -> None:
    """An empty file (Hadoop's ``_SUCCESS`` marker)."""
    fs, path = _hadoop(spark, location)
    fs.create(path, True).close()


def hadoop_rename(spark: Any, source: Location, target: Location) -> None:
    fs, src = _hadoop(spark, source)
    _, dst = _hadoop(spark, target)
    if not fs.rename(src, dst):
        raise InputError(f"cannot move {source.uri} into place", source=target.uri)


def hadoop_delete(spark: Any, location: Location) -> None:
    fs, path = _hadoop(spark, location)
    fs.delete(path, True)


def first_line(e: BaseException) -> str:
    """The Java exception's own message, in one line (Py4J wraps it in a multi-line report)."""
    text = str(e).strip()
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    found = next((x for x in lines if "Exception" in x and not x.startswith("at ")), lines[0] if lines else "")
    found = re.sub(r"^[:\s]*", "", found)
    found = re.sub(r"\b(?:[a-z_]+\.)+([A-Z]\w*(?:Exception|Error))", r"\1", found)
    return found.split("; For more details", 1)[0] or type(e).__name__
