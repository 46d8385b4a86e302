"""``GET /metrics``: Prometheus text as ``PrometheusMetricsGenerator`` writes the load manager's metrics.

Each name gets one ``# TYPE <name> gauge`` line before its first sample (Pulsar declares even the
``_total`` counters as gauges; no ``# HELP``, no timestamps); labels are ``cluster`` first, then the
sample's own labels, joined by comma and space; integers print without a decimal point, floats as
Java prints doubles.  Besides the load-balancer metrics (``ModularLoadManagerImpl#getLoadBalancingMetrics``:
``pulsar_lb_*``), the lookup counters ``pulsar_broker_lookup_answers``, ``…_redirects`` and ``…_failures``
(``NamespaceService``) are written as counters with their own names, and so are this broker's metadata-store
traffic since it connected (``store_counters``: bundlewise's own names; Pulsar's ``MetadataStoreStats`` times each
operation instead of counting it): ``bundlewise_metadata_store_puts``, ``…_put_bytes``, ``…_deletes`` and
``…_notifications``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from bundlewise.live.broker.manager import Sample
from bundlewise.live.store.api import StoreOps

CONTENT_TYPE = "text/plain;charset=utf-8"


def _number(value: float | int) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def store_counters(ops: StoreOps) -> list[tuple[str, int]]:
    """The metadata-store counters (module docstring) of one client."""
    return [
        ("bundlewise_metadata_store_puts", ops.puts),
        ("bundlewise_metadata_store_put_bytes", ops.put_bytes),
        ("bundlewise_metadata_store_deletes", ops.deletes),
        ("bundlewise_metadata_store_notifications", ops.notifications),
    ]


def render(cluster: str, samples: Iterable[Sample], counters: Iterable[tuple[str, float | int]] = ()) -> str:
    lines: list[str] = []
    typed: set[str] = set()
    for s in samples:
        if s.name not in typed:
            typed.add(s.name)
            lines.append(f"# TYPE {s.name} gauge")
        labels = ", ".join(f'{k}="{_escape(v)}"' for k, v in (("cluster", cluster), *s.labels))
        lines.append(f"{s.name}{{{labels}}} {_number(s.value)}")
    for name, value in counters:
        lines.append(f"# TYPE {name} counter")
        lines.append(f'{name}{{cluster="{_escape(cluster)}"}} {_number(value)}')
    return "\n".join(lines) + "\n"


def sample_value(text: str, name: str) -> float | None:
    """The value of the first sample named ``name`` (any labels) in exposition ``text`` such as ``render``
    writes; None when there is none (a reader's side: tests and benchmarks time the leader by its gauges)."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None
