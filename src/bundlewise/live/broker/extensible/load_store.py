"""The two load-data stores of the extensible load manager (``LoadDataStore``, ``TableViewLoadDataStoreImpl``).

Pulsar keeps them on the non-persistent system topics ``loadbalancer-broker-load-data`` and
``loadbalancer-top-bundles-load-data``, keyed by broker id; bundlewise has no topics, so they live on
the metadata store, one persistent node per broker under a bundlewise-specific prefix
(``/loadbalance/extension/broker-load/{brokerId}`` and ``/loadbalance/extension/top-bundles/{brokerId}``).
Every broker mirrors a store through the store layer's table view (filled at start, re-read on each
notification); a broker writes only its own key (``push``), removes it when its reporter tombstones
(``remove``), and the leader removes a dead broker's keys at the end of its orphan cleanup.  As with
the topic, an entry is not ephemeral: a crashed broker's entry stays until the cleanup removes it.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from bundlewise.live.broker.extensible.records import ModelCodec
from bundlewise.live.store import MetadataStore, MetadataStoreTableView

T = TypeVar("T")


def _always_accept(existing: object, proposed: object) -> bool:
    return False


class LoadDataStore(Generic[T]):
    def __init__(self, store: MetadataStore, root: str, codec: ModelCodec[T]) -> None:
        self.root = root
        self.view: MetadataStoreTableView[T | None] = MetadataStoreTableView(
            store,
            root,
            should_keep_left=_always_accept,
            codec=codec,
            path_filter=lambda path: path.count("/") == root.count("/") + 1,
        )

    async def start(self) -> None:
        await self.view.start()

    async def close(self) -> None:
        await self.view.close()

    async def push(self, broker_id: str, value: T) -> None:
        await self.view.put(broker_id, value)

    async def remove(self, broker_id: str) -> None:
        await self.view.delete(broker_id)

    def get(self, broker_id: str) -> T | None:
        return self.view.get(broker_id)

    def items(self) -> dict[str, T]:
        """Every entry, by broker id."""
        return {k: v for k, v in sorted(self.view.items()) if v is not None}
