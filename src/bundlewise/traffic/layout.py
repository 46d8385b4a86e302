"""A recorded layout: each namespace's bundle boundaries and each bundle's owner when a recording starts.

Read from the pipeline's outputs (``traffic.recording``) so that a replay starts from the cluster as it was
(``ModularLoadManagerImpl`` keeps the same facts: the namespaces' bundles under ``/namespace`` and each bundle's
owner under ``/namespace/TENANT/NS/0x…_0x…``).  ``boundaries`` tile 0x00000000..0xffffffff; ``owners`` name the
broker of a bundle at its first sample.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RecordedLayout:
    boundaries: Mapping[str, tuple[int, ...]]
    owners: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    def brokers(self) -> list[str]:
        """The recorded owners, by name."""
        return sorted(set(self.owners.values()))
