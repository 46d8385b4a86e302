"""Which broker a log line is about, when several brokers share one process (``bundlewise broker --web A --web B``).

Every module logs through its own ``logging.getLogger(__name__)``; with one broker per process the log format
names the broker once (``cli.broker``).  With several in one event loop each broker's work runs in its own
``contextvars.Context`` where ``BROKER`` holds its id: asyncio copies the current context into every task and
callback it creates, so the web server's connections, the load manager's tasks and the store's callbacks
started by a broker run in that broker's context (a driver's own thread -- kazoo's -- hands its callbacks back
with the context the store captured when it connected, ``backends.zookeeper``).  ``BrokerField`` puts the id
on every record as ``%(broker)s`` (``-`` outside any broker: the process's own start and stop lines).
"""

from __future__ import annotations

import contextvars
import logging

BROKER: contextvars.ContextVar[str] = contextvars.ContextVar("bundlewise_broker", default="-")


def context_of(broker_id: str) -> contextvars.Context:
    """A fresh context, copied from the current one, in which ``BROKER`` is ``broker_id``."""
    ctx = contextvars.copy_context()
    ctx.run(BROKER.set, broker_id)
    return ctx


class BrokerField(logging.Filter):
    """Sets ``record.broker`` to the broker whose context emitted the record (a handler's filter)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.broker = BROKER.get()
        return True
