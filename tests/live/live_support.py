"""What the live tests of every tier share: one event loop per test body with a deadline, and waits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from bundlewise.live.store.errors import MetadataStoreError

SESSION_TIMEOUT = 4.0  # seconds: small, so expiry tests are quick
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
    """Run one test body on a fresh event loop, with an overall deadline."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def eventually(predicate: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    """Wait until ``predicate`` holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
            if isinstance(value, Awaitable):
                value = await value
        except MetadataStoreError:  # e.g. a read during the instant a session is being replaced
            value = False
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for: {what}")
        await asyncio.sleep(0.05)
