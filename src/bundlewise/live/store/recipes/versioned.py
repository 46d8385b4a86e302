"""Versioned read-modify-write (``MetadataCacheImpl#readModifyUpdateOrCreate``).

Read the node and its version, compute the new value from the current one (None when the node
does not exist), write it back with the version read (``-1`` = create), and start again from
the read when another writer got there first (BadVersion).  ``modify`` may be called several
times, so it must be a pure function of its argument; an exception it raises (e.g.
``ConflictError``) ends the loop and propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from bundlewise.live.store.api import MetadataStore, Stat
from bundlewise.live.store.codec import JSON, Codec
from bundlewise.live.store.errors import BadVersionError

T = TypeVar("T")


async def read_modify_write(
    store: MetadataStore,
    path: str,
    modify: Callable[[T | None], T],
    *,
    codec: Codec[T] = JSON,
    ephemeral: bool = False,
    max_attempts: int | None = None,
) -> tuple[T, Stat]:
    """Apply ``modify`` atomically to the node at ``path``; returns the value written and its stat.

    ``max_attempts`` bounds the retries on BadVersion (None: retry until it succeeds), after which
    the last ``BadVersionError`` propagates."""
    attempt = 0
    while True:
        attempt += 1
        current = await store.get(path)
        new_value = modify(codec.decode(current.value) if current is not None else None)
        expected = current.stat.version if current is not None else -1
        try:
            stat = await store.put(path, codec.encode(new_value), expected, ephemeral=ephemeral)
        except BadVersionError:
            if max_attempts is not None and attempt >= max_attempts:
                raise
            continue
        return new_value, stat
