"""Retrying a store operation through transient errors (start-up of a broker while its store is busy).

A *transient* error is a connectivity one (``CONNECTIVITY_ERRORS``: the request may not have reached
the server, or the session ended under it, e.g. etcd's "requested lease not found" for a lease that
expired while the broker was starting): the same step is tried again after a backoff that doubles from
``initial`` to ``maximum`` seconds, until ``deadline`` seconds have passed since the first attempt;
then the last error is raised.  Every other error is raised at once.  The step must be safe to repeat
(every start-up step is: a lock acquire revalidates its own node, an election re-reads, a fill
re-reads).  ``delays`` is the pure schedule, tested on its own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from bundlewise.live.store.errors import CONNECTIVITY_ERRORS

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_INITIAL = 0.1
RETRY_MAX = 2.0
RETRY_DEADLINE = 60.0


def delays(initial: float = RETRY_INITIAL, maximum: float = RETRY_MAX) -> Iterator[float]:
    """The backoff before each retry: ``initial``, doubled each time, capped at ``maximum``."""
    delay = initial
    while True:
        yield delay
        delay = min(delay * 2, maximum)


async def retry_transient(
    step: Callable[[], Awaitable[T]],
    what: str,
    *,
    deadline: float = RETRY_DEADLINE,
    initial: float = RETRY_INITIAL,
    maximum: float = RETRY_MAX,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``step`` until it succeeds, retrying transient errors (module docstring)."""
    give_up_at = clock() + deadline
    backoff = delays(initial, maximum)
    while True:
        try:
            return await step()
        except CONNECTIVITY_ERRORS as e:
            delay = next(backoff)
            if clock() + delay > give_up_at:
                raise
            log.warning("%s failed (%s); retrying in %.1f s", what, e, delay)
            await asyncio.sleep(delay)
