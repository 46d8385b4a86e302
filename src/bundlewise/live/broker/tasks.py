"""A load manager's background work on one ``asyncio.TaskGroup`` (Pulsar's executors of ``PulsarService``).

``Tasks`` is opened once (``open``: the group is entered in a runner task) and closed once (``close``: every
task still running is cancelled and awaited).  In between:

* ``every(period, job, what)`` runs ``job`` every ``period`` seconds, sleeping first (``scheduleAtFixedRate``
  with an initial delay of one period) or, with ``at_start``, running it first;
* ``spawn(coro, what)`` runs one coroutine in the background;

and both return the ``asyncio.Task``.  A part that stops its own work early (a leader that starts following, a
part that closes before the broker does) runs it in its own ``Scope`` (``tasks.scope()``), which cancels
just its tasks.
A job's or coroutine's exception is logged (``"<what> failed: <error>"``) and never reaches the group, so one
failed step neither ends a periodic job nor cancels its siblings.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Tasks:
    def __init__(self) -> None:
        self._group: asyncio.TaskGroup | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closed = False

    async def open(self) -> None:
        """Enter the task group (in a runner task that lives until ``close``)."""
        if self._runner is not None:
            return
        entered = asyncio.get_running_loop().create_future()

        async def run() -> None:
            async with asyncio.TaskGroup() as group:
                self._group = group
                entered.set_result(None)
                await asyncio.get_running_loop().create_future()  # until close() cancels the runner

        self._runner = asyncio.get_running_loop().create_task(run(), name="background")
        await entered

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> asyncio.Task[None] | None:
        """Run ``coro`` in the group (errors logged); None (and the coroutine closed) once the group is closed."""
        if self._group is None or self._closed:
            coro.close()
            return None

        async def guarded() -> None:
            try:
                await coro
            except Exception as e:
                log.warning("%s failed: %r", what, e)

        task = self._group.create_task(guarded(), name=what)
        task.add_done_callback(lambda _: coro.close())  # cancelled before it ran: closed, not left unawaited
        return task

    def every(
        self, period: float, job: Callable[[], Awaitable[None]], what: str, *, at_start: bool = False
    ) -> asyncio.Task[None] | None:
        """Run ``job`` every ``period`` seconds, first after one period (``at_start``: at once)."""

        async def loop() -> None:
            if not at_start:
                await asyncio.sleep(period)
            while True:
                try:
                    await job()
                except Exception as e:
                    log.warning("%s failed: %r", what, e)
                await asyncio.sleep(period)

        return self.spawn(loop(), what)

    def scope(self) -> Scope:
        """A new scope for one part's tasks."""
        return Scope(self)

    async def close(self) -> None:
        """Cancel every task still running and wait for them."""
        self._closed = True
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner


class Scope:
    """One part's tasks in a ``Tasks`` group, stopped together (``cancel``) while the group runs on."""

    def __init__(self, tasks: Tasks) -> None:
        self._tasks = tasks
        self._running: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._running)

    def _track(self, task: asyncio.Task[None] | None) -> asyncio.Task[None] | None:
        if task is not None:
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return task

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> asyncio.Task[None] | None:
        return self._track(self._tasks.spawn(coro, what))

    def every(
        self, period: float, job: Callable[[], Awaitable[None]], what: str, *, at_start: bool = False
    ) -> asyncio.Task[None] | None:
        return self._track(self._tasks.every(period, job, what, at_start=at_start))

    def cancel(self) -> None:
        for task in list(self._running):
            task.cancel()
        self._running.clear()
