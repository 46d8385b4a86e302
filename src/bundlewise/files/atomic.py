"""Atomic outputs: the one policy of every command that writes ``--out`` (docs/commands.md).

* **Checked before the work.**  ``check(path, overwrite)``: ``--out ''`` is refused; an existing non-empty
  target (a directory with entries, a non-empty file) is refused with one line unless ``overwrite``, and even
  with it unless bundlewise wrote it (``is_ours``: a folder holds the marker file ``_SUCCESS`` starting with
  ``MARKER_TEXT``; a file carries ``FILE_MARK`` in its trailing metadata, e.g. a Parquet file's key-value
  metadata); an existing file is never turned into a folder; a file system root, the home directory, the
  working directory or one of its parents is never replaced.  ``stage(...)`` then makes
  the parent folders and creates the staging entry, so an unwritable place fails before any work is done.
* **Staged beside the target.**  The work writes into ``<parent>/.<name>.bundlewise-<pid>-<random>`` (the
  same directory, hence the same file system, so the final move is one ``rename``).
* **Published whole.**  ``Staging.publish()``: a file replaces the target in one ``rename``; a directory
  gets the marker ``_SUCCESS`` and takes the place of an absent or empty target in one ``rename``, and with
  ``overwrite`` the old target is first renamed aside, then deleted — never merged, so no stale dataset of an
  earlier run survives.  Ctrl-C is held back for the few renames and acted on once they are done.
* **Nothing on failure.**  Any error, or Ctrl-C (``KeyboardInterrupt``), before the publication deletes the
  staging entry and leaves the target exactly as it was; Ctrl-C becomes ``Interrupted``, whose message says
  so.  Staging entries of processes that died without cleaning up (SIGKILL) are removed by the next run
  for the same target.

Like Hadoop's ``FileOutputCommitter`` (a job's output moved into place by its commit, ``_SUCCESS`` written
last), but for local paths and with the whole target as the unit.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import threading
from collections.abc import Iterator
from types import FrameType, TracebackType

from bundlewise.model.errors import InputError

MARK = ".bundlewise-"
_OPEN: set[str] = set()
"""Staging entries this process created and has neither published nor discarded (``discard_open``)."""
MARKER = "_SUCCESS"
"""The file a folder bundlewise wrote holds (Hadoop's name: readers skip names starting with ``_``)."""
MARKER_TEXT = "written by bundlewise\n"
"""How ``MARKER`` starts: what tells bundlewise's outputs from folders of anything else (Spark's ``_SUCCESS`` is
empty)."""
FILE_MARK = b"written-by-bundlewise"
"""The key a file output carries in its trailing metadata (a Parquet footer's key-value metadata)."""
TAIL_BYTES = 1 << 16
_STAGING = re.compile(r"^\.(?P<name>.+)\.bundlewise-(?P<pid>\d+)-[0-9a-f]{8}(?:\.old)?(?P<suffix>\.[^.]*)?$")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while a command worked towards ``--out``: nothing was written, the target is as it was — or,
    ``published``, Ctrl-C came while the finished results were being moved into place, which completed."""

    def __init__(self, target: str | None = None, published: bool = False) -> None:
        super().__init__(target)
        self.target = target
        self.published = published

    def __str__(self) -> str:
        if self.target is None:
            return "interrupted"
        if self.published:
            return f"interrupted after {self.target} was written in full"
        return f"interrupted: {self.target} was left as it was"


def _is_nonempty(path: str) -> bool:
    if os.path.isdir(path):
        with os.scandir(path) as entries:
            return any(True for _ in entries)
    return os.path.getsize(path) > 0


def is_ours(path: str) -> bool:
    """Did bundlewise write ``path``: a folder with the marker file, a file with the mark in its last 64 KiB."""
    try:
        if os.path.isdir(path):
            with open(os.path.join(path, MARKER), "rb") as fh:
                return fh.read(len(MARKER_TEXT)) == MARKER_TEXT.encode()
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - TAIL_BYTES))
            return FILE_MARK in fh.read()
    except OSError:
        return False


def mark(folder: str) -> None:
    """Leave the marker in ``folder`` (a staging folder, just before it is published)."""
    with open(os.path.join(folder, MARKER), "w", encoding="utf-8") as fh:
        fh.write(MARKER_TEXT)


def _protected(path: str) -> bool:
    """Places ``--overwrite`` never replaces: a root, the home directory, the working directory or a parent."""
    real = os.path.realpath(path)
    if os.path.ismount(real) or real == os.path.realpath(os.path.expanduser("~")):
        return True
    cwd = os.path.realpath(os.getcwd())
    return cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep)


def check(path: str, overwrite: bool, *, directory: bool = True, flag: str = "--out") -> str:
    """The absolute target after the policy's checks (nothing is created); ``InputError`` when refused."""
    if not path:
        raise InputError("expected a path, got an empty string", field=flag)
    target = os.path.abspath(path)
    if os.path.lexists(target):
        if not directory and os.path.isdir(target):
            raise InputError("is a directory; expected a file name", source=path, field=flag)
        if directory and not os.path.isdir(target):
            raise InputError("is a file; expected a folder (a file is never replaced by one)", source=path, field=flag)
        if _protected(target):
            raise InputError("refusing to write over this directory; name a new folder", source=path, field=flag)
        try:
            nonempty = _is_nonempty(target)
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=path, field=flag) from None
        if nonempty and not overwrite:
            what = "is not empty" if os.path.isdir(target) else "exists"
            raise InputError(f"{what}; pass --overwrite to replace it", source=path, field=flag)
        if nonempty and not is_ours(target):
            what = f"has no {MARKER} of bundlewise" if directory else "has no mark of bundlewise"
            raise InputError(
                f"was not written by bundlewise ({what}); --overwrite replaces only bundlewise's own outputs: "
                "name a new one, or empty or remove it yourself",
                source=path,
                field=flag,
            )
    return target


class Staging:
    """The staging entry of one target: written by the work, then published or discarded (a context manager:
    published when the block ends normally, discarded when it raises)."""

    def __init__(self, target: str, path: str, directory: bool, overwrite: bool, given: str) -> None:
        self.target = target
        self.path = path
        self.directory = directory
        self.overwrite = overwrite
        self.given = given

    def __enter__(self) -> Staging:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if error is None:
            self.publish()
            return
        self.discard()
        if isinstance(error, KeyboardInterrupt) and not isinstance(error, Interrupted):
            raise Interrupted(self.given) from None

    def publish(self) -> None:
        """Move the staging entry into place (see the module's docstring); Ctrl-C waits until it is done."""
        try:
            with held_interrupts():
                self._publish()
        except KeyboardInterrupt:
            raise Interrupted(self.given, published=True) from None

    def _publish(self) -> None:
        if not self.directory:
            os.replace(self.path, self.target)
            _OPEN.discard(self.path)
            return
        mark(self.path)
        aside = None
        if os.path.lexists(self.target) and (not os.path.isdir(self.target) or _is_nonempty(self.target)):
            if not self.overwrite or not is_ours(self.target):  # filled by someone else meanwhile: keep both
                raise InputError(f"was filled while this run worked; its results are in {self.path}", source=self.given)
            aside = f"{self.path}.old"
            os.rename(self.target, aside)
        try:
            os.rename(self.path, self.target)
        except OSError as e:
            if aside is not None:
                os.rename(aside, self.target)
            raise InputError(f"cannot move the results into place: {e.strerror}", source=self.given) from None
        _OPEN.discard(self.path)
        if aside is not None:
            _remove(aside)

    def discard(self) -> None:
        """Delete the staging entry (the target is untouched)."""
        with contextlib.suppress(OSError):
            _remove(self.path)
        _OPEN.discard(self.path)


def discard_open() -> None:
    """Delete every staging entry of this process still open: a Ctrl-C that lands between ``stage`` and the
    ``with`` block (or anywhere outside it) leaves no staging folder behind."""
    for path in sorted(_OPEN):
        with contextlib.suppress(OSError):
            _remove(path)
    _OPEN.clear()


def stage(path: str, overwrite: bool, *, directory: bool = True, flag: str = "--out") -> Staging:
    """Check the target, make its parent folders and create its staging entry beside it."""
    target = check(path, overwrite, directory=directory, flag=flag)
    parent, name = os.path.split(target)
    blocker = parent
    while blocker and not os.path.exists(blocker):
        blocker = os.path.dirname(blocker)
    if blocker and not os.path.isdir(blocker):
        raise InputError(f"{blocker} is a file, not a folder", source=path, field=flag)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the folder {parent}: {e.strerror}", source=path, field=flag) from None
    _clean_stale(parent, name)
    suffix = "" if directory else os.path.splitext(name)[1]
    staging = os.path.join(parent, f".{name}{MARK}{os.getpid()}-{secrets.token_hex(4)}{suffix}")
    try:
        with held_interrupts():  # created and remembered as one step
            if directory:
                os.mkdir(staging)
            else:
                with open(staging, "xb"):
                    pass
            _OPEN.add(staging)
    except OSError as e:
        raise InputError(f"cannot write here: {e.strerror}", source=path, field=flag) from None
    return Staging(target, staging, directory, overwrite, path)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(parent: str, name: str) -> None:
    """Remove staging entries of ``name`` left by processes that no longer run."""
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        m = _STAGING.match(entry)
        if m is None or m.group("name") != name:
            continue
        pid = int(m.group("pid"))
        if pid != os.getpid() and not _alive(pid):
            with contextlib.suppress(OSError):
                _remove(os.path.join(parent, entry))


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Ctrl-C during the block is remembered and raised as ``KeyboardInterrupt`` when it ends (also used
    while Spark's JVM starts: interrupted half-way, it would outlive the command)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    previous = signal.signal(signal.SIGINT, remember)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt
