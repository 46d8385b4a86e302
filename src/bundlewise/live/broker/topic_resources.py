"""Topics as the metadata store knows them (``TopicResources``, ``NamespaceResources.PartitionedTopicResources``,
``BrokerService#fetchPartitionedTopicMetadataCheckAllowAutoCreationAsync``).

* A partitioned topic is the node P12 ``/admin/partitioned-topics/{tenant}/{ns}/{domain}/{topic}`` holding
  ``PartitionedTopicMetadata`` (``{"partitions": n, "deleted": false}``); its partitions are the topics
  ``{topic}-partition-{i}``.  ``partitions_for_client`` answers what a client asks before it looks a topic
  up: ``n`` for a partitioned topic, 0 otherwise -- after creating the metadata when ``allowAutoTopicCreation``
  holds with ``allowAutoTopicCreationType=partitioned`` (``defaultNumPartitions`` partitions), for a topic
  that is neither a partition nor an existing non-partitioned topic.
* A persistent topic that was loaded once has the node P13 ``/managed-ledgers/{tenant}/{ns}/persistent/{topic}``
  (Pulsar's managed ledger); ``topics_of`` lists a namespace's topics from both (``GET …/namespaces/{t}/{ns}/topics``).
* Local names are URL-encoded in paths (``Codec#encode``: ``URLEncoder``, so a space is ``+``).
"""

from __future__ import annotations

import contextlib
import json
from urllib.parse import quote_plus, unquote_plus

from bundlewise.config.views import TopicSettings
from bundlewise.live.store import MetadataStore, layout
from bundlewise.live.store.errors import BadVersionError
from bundlewise.model.names import PARTITION_SUFFIX, TopicName


class TopicExists(Exception):
    """The partitioned topic (or a non-partitioned topic of that name) already exists."""


class PartitionsError(Exception):
    """An update that does not grow the topic, or of a topic that is not partitioned."""


def metadata(partitions: int) -> bytes:
    return json.dumps({"partitions": partitions, "deleted": False}).encode()


def _path(topic: TopicName) -> str:
    return layout.partitioned_topic(str(topic.namespace), topic.domain, quote_plus(topic.local_name))


def _ledger_path(topic: TopicName) -> str:
    return layout.managed_ledger(str(topic.namespace), topic.domain, quote_plus(topic.local_name))


class TopicResources:
    def __init__(self, store: MetadataStore, settings: TopicSettings) -> None:
        self.store = store
        self.settings = settings

    async def namespace_policies(self, topic: TopicName) -> bytes | None:
        """The raw policies document of the topic's namespace (``/admin/policies/{tenant}/{ns}``), if any."""
        found = await self.store.get(layout.policies(str(topic.namespace)))
        return None if found is None else found.value

    async def partitions(self, topic: TopicName) -> int | None:
        """The partition count of a partitioned topic, None when it is not one."""
        found = await self.store.get(_path(topic))
        if found is None:
            return None
        value = json.loads(found.value) if found.value else {}
        return int(value.get("partitions", 0)) if isinstance(value, dict) else None

    async def create_partitioned(self, topic: TopicName, partitions: int) -> None:
        if await self.store.exists(_ledger_path(topic)):
            raise TopicExists(f"This topic already exists: {topic}")
        try:
            await self.store.put(_path(topic), metadata(partitions), expected_version=-1)
        except BadVersionError:
            raise TopicExists("Partitioned topic already exists") from None

    async def update_partitions(self, topic: TopicName, partitions: int) -> None:
        found = await self.store.get(_path(topic))
        if found is None:
            raise PartitionsError(f"Topic {topic} is not a partitioned topic")
        current = int(json.loads(found.value).get("partitions", 0))
        if partitions <= current:
            raise PartitionsError(f"Expect partitions {partitions} grater than current partitions {current}")
        await self.store.put(_path(topic), metadata(partitions), expected_version=found.stat.version)

    async def partitions_for_client(self, topic: TopicName, auto_create: bool = True) -> int:
        """What a client's partitioned-metadata request answers (module docstring)."""
        existing = await self.partitions(topic)
        if existing is not None:
            return existing
        s = self.settings
        if (
            not auto_create
            or not s.auto_create
            or not s.auto_create_partitioned
            or topic.partition_index >= 0
            or await self.store.exists(_ledger_path(topic))
        ):
            return 0
        with contextlib.suppress(BadVersionError):  # another broker created it first
            await self.store.put(_path(topic), metadata(s.default_partitions), expected_version=-1)
        return await self.partitions(topic) or 0

    async def record_loaded(self, topic: TopicName) -> None:
        """Note a persistent topic in P13 (once; a present node is left as it is)."""
        if not topic.persistent:
            return
        path = _ledger_path(topic)
        if await self.store.exists(path):
            return
        with contextlib.suppress(BadVersionError):
            await self.store.put(path, b"{}", expected_version=-1)

    async def topics_of(self, namespace: str, domain: str = "persistent") -> list[str]:
        """The namespace's topics: every partition of its partitioned topics and every loaded topic."""
        out: list[str] = []
        for name in await self.store.get_children(f"{layout.MANAGED_LEDGERS_ROOT}/{namespace}/{domain}"):
            out.append(f"{domain}://{namespace}/{unquote_plus(name)}")
        for name in await self.store.get_children(f"{layout.PARTITIONED_TOPICS_ROOT}/{namespace}/{domain}"):
            base = TopicName.parse(f"{domain}://{namespace}/{unquote_plus(name)}")
            n = await self.partitions(base) or 0
            out.extend(f"{base}{PARTITION_SUFFIX}{i}" for i in range(n))
        return sorted(set(out))

    async def partitioned_of(self, namespace: str, domain: str = "persistent") -> list[str]:
        names = await self.store.get_children(f"{layout.PARTITIONED_TOPICS_ROOT}/{namespace}/{domain}")
        return [f"{domain}://{namespace}/{unquote_plus(n)}" for n in names]
