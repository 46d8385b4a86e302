"""The ``[clients]`` section of a scenario: real Pulsar producers and consumers for ``live up``.

``live up`` starts them with Apache Pulsar's official client (``pulsar-client``, the ``clients`` extra), as
``pulsar-perf produce`` / ``pulsar-perf consume`` would: ``producers`` producers, each sending ``rate``
messages of ``message_size`` bytes per second to one of ``topics`` topics (round robin over the scenario's
namespaces), and ``consumers`` consumers of one subscription (``subscription`` type) spread over the same
topics.  The simulator has no real clients and ignores the section.
"""

from __future__ import annotations

from dataclasses import dataclass

SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
CLIENT_KEYS = ("producers", "consumers", "topics", "rate", "message_size", "subscription", "batching")
MAX_CLIENTS = 1000
MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Pulsar's default maxMessageSize


@dataclass(frozen=True, slots=True)
class ClientsSpec:
    producers: int = 0
    consumers: int = 0
    topics: int = 0  # 0: one topic per producer
    rate: float = 100.0  # messages per second, per producer
    message_size: int = 1024  # bytes
    subscription: str = "Shared"
    batching: bool = True

    @property
    def topic_count(self) -> int:
        return self.topics or max(1, self.producers)

    @property
    def any(self) -> bool:
        return self.producers > 0 or self.consumers > 0

    def topic_names(self, namespaces: tuple[str, ...]) -> list[str]:
        """The clients' topics: ``persistent://{tenant}/{ns}/bundlewise-client-{i}``, namespaces in turn."""
        return [
            f"persistent://{namespaces[i % len(namespaces)]}/bundlewise-client-{i}" for i in range(self.topic_count)
        ]
