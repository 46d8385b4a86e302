"""Placement strategies by name (``loadBalancerLoadPlacementStrategy``, contract §1 and §4).

Names are accepted short (``LeastLongTermMessageRate``) or as Pulsar class names
(``org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate``).  ``AvgShedder`` is both a
shedding and a placement strategy (spec §4.4); its class lives with the shedders and is imported
only when asked for.  Each call returns a fresh instance: state (round-robin position, history) lives
on the instance the caller keeps.
"""

from __future__ import annotations

from collections.abc import Callable

from bundlewise.algorithms.placement.base import PlacementStrategy
from bundlewise.algorithms.placement.least_long_term_message_rate import LeastLongTermMessageRate
from bundlewise.algorithms.placement.least_resource_usage import LeastResourceUsageWithWeight
from bundlewise.algorithms.placement.round_robin import RoundRobinBrokerSelector
from bundlewise.model.errors import InputError

PULSAR_PACKAGE = "org.apache.pulsar.broker.loadbalance.impl."


def _avg_shedder() -> PlacementStrategy:
    try:
        from bundlewise.algorithms.shedding.avg import AvgShedder
    except ImportError:
        raise InputError("placement strategy AvgShedder is not available in this build") from None
    strategy: PlacementStrategy = AvgShedder()
    return strategy


FACTORIES: dict[str, Callable[[], PlacementStrategy]] = {
    "LeastLongTermMessageRate": LeastLongTermMessageRate,
    "LeastResourceUsageWithWeight": LeastResourceUsageWithWeight,
    "RoundRobinBrokerSelector": RoundRobinBrokerSelector,
    "AvgShedder": _avg_shedder,
}
PLACEMENT_NAMES = tuple(FACTORIES)


def canonical_placement_name(name: str) -> str:
    """The short name of a known strategy; InputError listing the valid names otherwise."""
    raw = name.strip()
    short = raw[len(PULSAR_PACKAGE) :] if raw.startswith(PULSAR_PACKAGE) else raw
    if short not in FACTORIES:
        raise InputError(
            f"unknown placement strategy {name!r}; expected one of {', '.join(PLACEMENT_NAMES)} "
            f"(or {PULSAR_PACKAGE}<name>)",
            field="--strategy",
        )
    return short


def make_placement_strategy(name: str) -> PlacementStrategy:
    """A new instance of the named placement strategy."""
    return FACTORIES[canonical_placement_name(name)]()
