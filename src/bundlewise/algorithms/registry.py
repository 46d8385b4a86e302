"""The one registry of strategies: every shedding strategy with its family, every placement strategy.

Names are accepted short (``ThresholdShedder``) or as Pulsar class names
(``org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder``); each call makes FRESH instances, since
strategies keep state (histories, hit counters, round-robin positions) where Pulsar's objects do.

Registering a strategy is one line here (plus its module and its configuration keys):
``register_shedding(NAME, FAMILY, FACTORY)`` -- ``ModularFamily`` for a ``LoadSheddingStrategy`` over
the leader's ``LoadData``, ``ExtensibleFamily`` for the extensible manager's -- or
``register_placement(NAME, FACTORY)`` for a ``ModularLoadManagerStrategy``.  ``bundlewise shed``,
``simulate`` and ``sweep`` (and the live load manager) find strategies here and nowhere else.

The modular placement rule (``modular_placement``, Pulsar ``ModularLoadManagerImpl#initialize``): the
placement strategy is ``loadBalancerLoadPlacementStrategy``.  When that strategy is itself a shedding
strategy (AvgShedder), ``loadBalancerLoadSheddingStrategy`` must name the same one -- Pulsar refuses to
start otherwise -- and the one instance serves both roles, so the shedder's planned destinations are
used.  A shedding strategy that could place (AvgShedder) with another placement strategy sheds, and the
other one places (with a warning: its plans are not used).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bundlewise.algorithms.balanced.extensible import BalancedTransferShedder
from bundlewise.algorithms.balanced.merge import plan_merges
from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.extensible.transfer_shedder import TransferShedder
from bundlewise.algorithms.families import ExtensibleFamily, Family, ModularFamily
from bundlewise.algorithms.families.modular import MergePlanner
from bundlewise.algorithms.placement.base import PlacementStrategy
from bundlewise.algorithms.placement.least_long_term_message_rate import LeastLongTermMessageRate
from bundlewise.algorithms.placement.least_resource_usage import LeastResourceUsageWithWeight
from bundlewise.algorithms.placement.round_robin import RoundRobinBrokerSelector
from bundlewise.algorithms.shedding.avg import AvgShedder
from bundlewise.algorithms.shedding.overload import OverloadShedder
from bundlewise.algorithms.shedding.threshold import ThresholdShedder
from bundlewise.algorithms.shedding.uniform import UniformLoadShedder
from bundlewise.config import Config
from bundlewise.config.config import short_class_name
from bundlewise.config.views import PlacementSettings
from bundlewise.model.errors import InputError

PULSAR_PACKAGE = "org.apache.pulsar.broker.loadbalance.impl."

FamilyKind = type[ModularFamily] | type[ExtensibleFamily]


@dataclass(frozen=True, slots=True)
class SheddingEntry:
    """A registered shedding strategy: its name, the family it runs in and how to make one."""

    name: str
    family: FamilyKind
    factory: Callable[[], Any]
    own: bool = False  # bundlewise's own strategy, not one of Pulsar's
    merges: MergePlanner | None = None  # merges cold bundles at a namespace's cap (own strategies only)


SHEDDING: dict[str, SheddingEntry] = {}
PLACEMENT: dict[str, Callable[[], PlacementStrategy]] = {}


def register_shedding(
    name: str,
    family: FamilyKind,
    factory: Callable[[], Any],
    *,
    own: bool = False,
    merges: MergePlanner | None = None,
) -> SheddingEntry:
    """Register a shedding strategy (a later registration of the same name replaces it).

    ``own=True``: one of bundlewise's own strategies -- left out of the default list (Pulsar's strategies;
    ``--strategy all`` adds it); a modular one, being a placement strategy too, is registered as one.  ``merges``: the
    strategy's merge planner, which the modular family's split step consults (``ModularFamily.leader_split_step``);
    no Pulsar strategy merges, so only an own strategy may have one."""
    if merges is not None and not own:
        raise ValueError(f"{name}: only bundlewise's own strategies merge bundles (Pulsar has no merge)")
    entry = SheddingEntry(name, family, factory, own, merges)
    SHEDDING[name] = entry
    if own and family is ModularFamily:
        PLACEMENT[name] = factory
    return entry


def register_placement(name: str, factory: Callable[[], PlacementStrategy]) -> None:
    """Register a placement strategy of the modular load manager."""
    PLACEMENT[name] = factory


register_shedding("OverloadShedder", ModularFamily, OverloadShedder)
register_shedding("ThresholdShedder", ModularFamily, ThresholdShedder)
register_shedding("UniformLoadShedder", ModularFamily, UniformLoadShedder)
register_shedding("AvgShedder", ModularFamily, AvgShedder)
register_shedding("TransferShedder", ExtensibleFamily, TransferShedder)
EXTENSIBLE_FALLBACK = "TransferShedder"  # the extensible manager's strategy when another is configured
register_placement("LeastLongTermMessageRate", LeastLongTermMessageRate)
register_placement("LeastResourceUsageWithWeight", LeastResourceUsageWithWeight)
register_placement("RoundRobinBrokerSelector", RoundRobinBrokerSelector)
register_placement("AvgShedder", AvgShedder)
register_shedding("BalancedPlanShedder", ModularFamily, BalancedPlanShedder, own=True, merges=plan_merges)
register_shedding("BalancedTransferShedder", ExtensibleFamily, BalancedTransferShedder, own=True)


def shedding_names() -> tuple[str, ...]:
    """Every registered shedding strategy, in registration order."""
    return tuple(SHEDDING)


def default_shedding_names() -> tuple[str, ...]:
    """The strategies a run compares when none is named: every registered one but bundlewise's own."""
    return tuple(name for name, entry in SHEDDING.items() if not entry.own)


def expand_all(names: Sequence[str]) -> list[str]:
    """``all`` stands for every registered shedding strategy (bundlewise's own included)."""
    out: list[str] = []
    for n in names:
        out.extend(shedding_names() if n == "all" else (n,))
    return out


# bundlewise's own strategies exist in both families: configured under the other load manager, each runs as its
# counterpart there (a bundlewise rule; Pulsar's own strategies have no counterpart)
COUNTERPARTS = {"BalancedPlanShedder": "BalancedTransferShedder", "BalancedTransferShedder": "BalancedPlanShedder"}


def extensible_entry(name: str) -> SheddingEntry:
    """The strategy the extensible load manager runs when ``name`` is configured: ``name`` itself when it is an
    extensible strategy, its counterpart when it is one of bundlewise's own (``COUNTERPARTS``), else
    TransferShedder, as ``UnloadScheduler#createNamespaceUnloadStrategy`` falls back."""
    entry = SHEDDING.get(short_class_name(name))
    if entry is not None and entry.family is not ExtensibleFamily and entry.name in COUNTERPARTS:
        entry = SHEDDING[COUNTERPARTS[entry.name]]
    if entry is not None and entry.family is ExtensibleFamily:
        return entry
    return SHEDDING[EXTENSIBLE_FALLBACK]


def modular_entry(name: str, field: str = "loadBalancerLoadSheddingStrategy") -> SheddingEntry:
    """The strategy the modular load manager runs when ``name`` is configured: ``name`` itself, or the
    counterpart of one of bundlewise's own extensible strategies; an unknown name or another extensible
    strategy is an ``InputError`` (Pulsar's modular manager cannot load an extensible manager's strategy)."""
    entry = shedding_entry(name, field)
    if entry.family is ExtensibleFamily and entry.name in COUNTERPARTS:
        entry = SHEDDING[COUNTERPARTS[entry.name]]
    if entry.family is ExtensibleFamily:
        raise InputError(f"{entry.name} is not a strategy of the modular load manager", field=field)
    return entry


def placement_names() -> tuple[str, ...]:
    return tuple(PLACEMENT)


def shedding_entry(name: str, field: str = "--strategy") -> SheddingEntry:
    """The entry of ``name`` (short or class name); an unknown name is an ``InputError`` listing the known ones."""
    entry = SHEDDING.get(short_class_name(name))
    if entry is None:
        valid = ", ".join(SHEDDING)
        raise InputError(f"unknown shedding strategy {name!r}; expected one of {valid}", field=field)
    return entry


def canonical_placement_name(name: str, field: str = "--strategy") -> str:
    """The short name of a known placement strategy; ``InputError`` listing the valid names otherwise."""
    raw = name.strip()
    short = raw[len(PULSAR_PACKAGE) :] if raw.startswith(PULSAR_PACKAGE) else raw
    if short not in PLACEMENT:
        raise InputError(
            f"unknown placement strategy {name!r}; expected one of {', '.join(PLACEMENT)} (or {PULSAR_PACKAGE}<name>)",
            field=field,
        )
    return short


def make_placement(name: str) -> PlacementStrategy:
    """A new instance of the named placement strategy."""
    return PLACEMENT[canonical_placement_name(name)]()


def modular_placement(shedder: Any, config: Config) -> tuple[PlacementStrategy, tuple[str, ...]]:
    """The placement strategy a modular leader with ``shedder`` uses, and any warning (module docstring)."""
    if getattr(shedder, "own_placement", False):
        own: PlacementStrategy = shedder
        return own, ()
    name = canonical_placement_name(config.view(PlacementSettings).strategy, field="loadBalancerLoadPlacementStrategy")
    if name in SHEDDING:
        if shedder.name != name:
            raise InputError(
                f"loadBalancerLoadPlacementStrategy {name} is also a shedding strategy, so Pulsar requires "
                f"loadBalancerLoadSheddingStrategy to be {name} too (got {shedder.name})",
                field="loadBalancerLoadPlacementStrategy",
            )
        placement: PlacementStrategy = shedder
        return placement, ()
    notes: tuple[str, ...] = ()
    if shedder.name in PLACEMENT:
        notes = (
            f"warning: {shedder.name}'s planned destinations are used only when loadBalancerLoadPlacementStrategy "
            f"is {shedder.name} too; destinations come from {name}",
        )
    return PLACEMENT[name](), notes


def make_family(strategy: str | SheddingEntry, config: Config, *, placement: bool = True) -> Family:
    """A family around a fresh instance of ``strategy``; ``placement=False`` skips choosing the modular
    placement strategy (for a caller that only plans)."""
    entry = strategy if isinstance(strategy, SheddingEntry) else shedding_entry(strategy)
    shedder = entry.factory()
    if entry.family is ExtensibleFamily:
        return ExtensibleFamily(shedder)
    if not placement:
        return ModularFamily(shedder, merges=entry.merges)
    chosen, notes = modular_placement(shedder, config)
    return ModularFamily(shedder, chosen, notes, entry.merges)
