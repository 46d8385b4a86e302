"""``CLUSTER.toml``: the cluster, its events, the balancer settings and the built-in workload (docs/simulator.md).

Every key is optional except ``[[brokers]]``.  Beyond the core keys (``duration``, ``step``,
``seed``, ``[broker_defaults]``, ``[[brokers]]``, ``[[namespaces]]``, ``[[events]]``, ``[balancer]``)
a scenario may carry:

* ``name``, ``description`` — shown in the report;
* ``strategies = [...]`` — the shedding strategies run when ``--strategy`` is not given
  (default: every shedding strategy);
* per namespace, the built-in generator's settings: ``topics`` (count), ``msg_rate`` (msg/s in, the whole
  namespace), ``fanout`` (msg out per msg in), ``msg_size`` (bytes), ``zipf`` (exponent of the topic-rate
  skew, 0 = uniform), ``producers``/``consumers`` per topic, and ``owner`` (a broker that owns all the
  namespace's bundles at the start; otherwise bundles are dealt round-robin over the starting brokers);
* ``[dispatch]``: subscriptions draining backlogs through the dispatch rate limiters
  (``sim/dispatch/spec.py``);
* ``[clients]``: real producers and consumers of Pulsar's official client that ``live up`` runs
  (``traffic/clients.py``; the simulator ignores it);
* ``[workload]``: ``diurnal_amplitude`` (0–1), ``diurnal_period`` (duration), ``noise`` (relative
  std-dev of each topic's rate per tick), ``cpu_jitter`` (relative std-dev of measured CPU), and
  ``[[workload.bursts]]`` with ``namespace``, ``at``, ``duration``, ``factor``.

A broker's first event decides how it starts (``sim.events``): a listed broker whose first event is
``add`` starts absent and joins at that event with its listed capacity, any other listed broker is up at the
start; an ``add`` of an unlisted broker takes ``[broker_defaults]``.  An event that changes nothing is kept out
of the run with a warning.  Errors are one-line ``InputError``s naming the file and the field; a misspelt key of
any table names the closest valid one.  Bounds: a step of at least 1 s and at most 1,000,000 ticks per run; a
broker's capacity within ``traffic.cost.BROKER_BOUNDS``; a namespace's bundles and topics within
``MAX_NAMESPACE_BUNDLES``/``MAX_NAMESPACE_TOPICS``; broker names distinct in any letter case; events and bursts
before the run's end.  The file is read through ``model.textfiles`` (size cap, BOM and CRLF removed).
"""

from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bundlewise.config import Config
from bundlewise.model.brokers import broker_key
from bundlewise.model.durations import parse_duration
from bundlewise.model.errors import InputError
from bundlewise.model.fields import shown
from bundlewise.model.names import NamespaceName
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies
from bundlewise.model.textfiles import read_text, source_name
from bundlewise.sim.dispatch.spec import DispatchSpec, parse_dispatch
from bundlewise.sim.events import initial_brokers, transitions
from bundlewise.traffic.clients import CLIENT_KEYS, MAX_CLIENTS, MAX_MESSAGE_SIZE, SUBSCRIPTION_TYPES, ClientsSpec
from bundlewise.traffic.cost import BROKER_BOUNDS, BROKER_DEFAULTS, BROKER_FIELDS, BrokerSpec
from bundlewise.traffic.workload import Burst, NamespaceSpec, WorkloadSpec

ACTIONS = ("add", "remove", "restart")
MIN_STEP_MS = 1_000
"""The shortest tick: Pulsar's load reports and leader cycles run every few seconds at the fastest."""
MAX_TICKS = 1_000_000
MAX_NAMESPACE_BUNDLES = 65_536
"""The most bundles of one simulated namespace (Pulsar's default allows 128 before splitting stops)."""
MAX_NAMESPACE_TOPICS = 1_000_000
"""The most topics of one simulated namespace (the built-in generator holds each in memory)."""
"""The most ticks a run may have (about 11 days at a 1 s step, 2 years at 1 min)."""
TOP_KEYS = (
    "name",
    "description",
    "duration",
    "step",
    "seed",
    "broker_defaults",
    "brokers",
    "namespaces",
    "events",
    "balancer",
    "workload",
    "strategies",
    "dispatch",
    "policies",
    "clients",
)
NAMESPACE_KEYS = (
    "name",
    "bundles",
    "topics",
    "msg_rate",
    "fanout",
    "msg_size",
    "zipf",
    "producers",
    "consumers",
    "owner",
)
EVENT_KEYS = ("at", "action", "broker", "down_for")
WORKLOAD_KEYS = ("diurnal_amplitude", "diurnal_period", "noise", "cpu_jitter", "bursts")
BURST_KEYS = ("namespace", "at", "duration", "factor")


def check_keys(d: dict[str, Any], known: tuple[str, ...], where: str, source: str) -> None:
    """A key of a table that is not one of ``known``: one line naming the closest valid name."""
    for key in d:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InputError(
                f"unknown key; {hint}expected one of {', '.join(sorted(known))}", source=source, field=f"{where}{key}"
            )


@dataclass(frozen=True, slots=True)
class Event:
    at: int  # ms
    action: str
    broker: str
    down_for: int = 60_000  # ms, restart only


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    duration: int
    step: int
    seed: int
    brokers: tuple[BrokerSpec, ...]  # every broker ever known, in file order (then added ones)
    initial: tuple[str, ...]  # brokers up at time 0
    namespaces: tuple[NamespaceSpec, ...]
    events: tuple[Event, ...]
    config: Config
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    strategies: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # unknown balancer keys, events that change nothing: for the CLI to print
    dispatch: DispatchSpec | None = None  # the optional [dispatch] section (sim/dispatch/spec.py)
    broker_defaults: BrokerSpec = field(default_factory=lambda: BrokerSpec("defaults"))  # [broker_defaults]
    policies: PlacementPolicies = NO_POLICIES  # the optional [policies] section (docs/placement.md)
    clients: ClientsSpec | None = None  # the optional [clients] section: real clients, live up only

    def with_seed(self, seed: int | None) -> Scenario:
        return self if seed is None else replace(self, seed=seed)

    def broker(self, name: str) -> BrokerSpec:
        return next(b for b in self.brokers if b.name == name)


class _Reader:
    """Typed access to one TOML table with errors naming ``source`` and the dotted field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def err(self, where: str, expect: str, got: Any) -> InputError:
        return InputError(f"expected {expect}, got {got!r}", source=self.source, field=where)

    def table(self, d: dict[str, Any], key: str, where: str) -> dict[str, Any]:
        v = d.get(key, {})
        if not isinstance(v, dict):
            raise self.err(f"{where}{key}", "a table", v)
        return v

    def tables(self, d: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
        v = d.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise self.err(f"{where}{key}", f"an array of tables [[{key}]]", v)
        return v

    def num(
        self,
        d: dict[str, Any],
        key: str,
        where: str,
        default: float,
        *,
        positive: bool = False,
        bounds: tuple[float, float] | None = None,
    ) -> float:
        v = d.get(key, default)
        number = not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)
        if bounds is not None and (not number or not bounds[0] <= v <= bounds[1]):
            raise self.err(f"{where}{key}", f"a number from {shown(bounds[0])} to {shown(bounds[1])}", v)
        if not number or v < 0 or (positive and v <= 0):
            raise self.err(f"{where}{key}", "a finite number > 0" if positive else "a finite number >= 0", v)
        return float(v)

    def integer(
        self, d: dict[str, Any], key: str, where: str, default: int, *, minimum: int = 0, maximum: int = 2**63 - 1
    ) -> int:
        v = d.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
            raise self.err(f"{where}{key}", f"a whole number from {minimum:,} to {maximum:,}", v)
        return int(v)

    def text(self, d: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        v = d.get(key, default)
        if not isinstance(v, str) or not v.strip():
            raise self.err(f"{where}{key}", "a non-empty string", v)
        return v.strip()

    def duration(self, d: dict[str, Any], key: str, where: str, default: str) -> int:
        return parse_duration(d.get(key, default), f"{where}{key}", self.source)


def _broker(r: _Reader, d: dict[str, Any], defaults: dict[str, float], where: str, name: str) -> BrokerSpec:
    vals = {k: r.num(d, k, where, defaults[k], bounds=BROKER_BOUNDS[k]) for k in BROKER_FIELDS}
    return BrokerSpec(name, **vals)


def parse_scenario(doc: dict[str, Any], source: str) -> Scenario:
    """Build a ``Scenario`` from a parsed TOML document."""
    r = _Reader(source)
    check_keys(doc, TOP_KEYS, "", source)
    duration = r.duration(doc, "duration", "", "6h")
    step = r.duration(doc, "step", "", "1m")
    if step < MIN_STEP_MS:
        raise r.err(
            "step", "a duration of at least 1s (Pulsar reports load every few seconds at most)", doc.get("step")
        )
    if duration < step:
        raise r.err("duration", "a duration >= step", doc.get("duration"))
    if duration // step > MAX_TICKS:
        raise InputError(
            f"{duration // step:,} ticks of {doc.get('step', '1m')}; expected at most {MAX_TICKS:,} "
            "(a longer step or a shorter duration)",
            source=source,
            field="duration",
        )
    seed = r.integer(doc, "seed", "", 7)
    raw_defaults = r.table(doc, "broker_defaults", "")
    check_keys(raw_defaults, BROKER_FIELDS, "broker_defaults.", source)
    defaults = {
        k: r.num(raw_defaults, k, "broker_defaults.", BROKER_DEFAULTS[k], bounds=BROKER_BOUNDS[k])
        for k in BROKER_FIELDS
    }
    if "brokers" not in doc:
        raise InputError("missing; expected at least one [[brokers]] table with a name", source=source, field="brokers")
    brokers: list[BrokerSpec] = []
    for i, b in enumerate(r.tables(doc, "brokers", "")):
        where = f"brokers[{i}]."
        check_keys(b, ("name", *BROKER_FIELDS), where, source)
        name = r.text(b, "name", where)
        if any(broker_key(x.name) == broker_key(name) for x in brokers):
            raise r.err(f"{where}name", "a broker name not used before (letter case aside)", name)
        brokers.append(_broker(r, b, defaults, where, name))
    if not brokers:
        raise r.err("brokers", "at least one [[brokers]] table", [])
    events: list[Event] = []
    for i, e in enumerate(r.tables(doc, "events", "")):
        where = f"events[{i}]."
        check_keys(e, EVENT_KEYS, where, source)
        at = r.duration(e, "at", where, "0s")
        if at >= duration:
            within = f"a time within the run (before duration = {doc.get('duration', '6h')})"
            raise r.err(f"{where}at", within, e.get("at"))
        action = r.text(e, "action", where)
        if action not in ACTIONS:
            raise r.err(f"{where}action", "one of add, remove, restart", action)
        name = r.text(e, "broker", where)
        if action == "add":
            if all(b.name != name for b in brokers):
                brokers.append(_broker(r, {}, defaults, where, name))
        elif all(b.name != name for b in brokers):
            raise r.err(f"{where}broker", "a broker listed under [[brokers]] or added by an earlier event", name)
        down = r.duration(e, "down_for", where, "1m")
        events.append(Event(at, action, name, down))
    listed = [b.name for b in brokers[: len(r.tables(doc, "brokers", ""))]]
    initial = initial_brokers(listed, events)
    event_warnings = [f"warning: {source}: {w}" for w in transitions(initial, events)[1]]
    events.sort(key=lambda ev: ev.at)
    namespaces: list[NamespaceSpec] = []
    for i, n in enumerate(r.tables(doc, "namespaces", "")):
        where = f"namespaces[{i}]."
        check_keys(n, NAMESPACE_KEYS, where, source)
        name = r.text(n, "name", where)
        try:
            NamespaceName.parse(name)
        except InputError:
            raise r.err(f"{where}name", "a namespace 'tenant/namespace'", name) from None
        owner = n.get("owner")
        if owner is not None and owner not in initial:
            raise r.err(f"{where}owner", "a broker up at the start", owner)
        namespaces.append(
            NamespaceSpec(
                name=name,
                bundles=r.integer(n, "bundles", where, 4, minimum=1, maximum=MAX_NAMESPACE_BUNDLES),
                topics=r.integer(n, "topics", where, 0, maximum=MAX_NAMESPACE_TOPICS),
                msg_rate=r.num(n, "msg_rate", where, 0.0),
                fanout=r.num(n, "fanout", where, 1.0),
                msg_size=r.num(n, "msg_size", where, 1024.0),
                zipf=r.num(n, "zipf", where, 0.0),
                producers=r.integer(n, "producers", where, 1),
                consumers=r.integer(n, "consumers", where, 1),
                owner=owner,
                bundles_given="bundles" in n,
            )
        )
    wl = r.table(doc, "workload", "")
    check_keys(wl, WORKLOAD_KEYS, "workload.", source)
    bursts = []
    for i, b in enumerate(r.tables(wl, "bursts", "workload.")):
        where = f"workload.bursts[{i}]."
        check_keys(b, BURST_KEYS, where, source)
        ns = r.text(b, "namespace", where)
        if all(n.name != ns for n in namespaces):
            raise r.err(f"{where}namespace", "a namespace listed under [[namespaces]]", ns)
        burst_at = r.duration(b, "at", where, "0s")
        if burst_at >= duration:
            raise r.err(f"{where}at", "a time within the run (before duration)", b.get("at"))
        bursts.append(
            Burst(
                ns,
                burst_at,
                r.duration(b, "duration", where, "30m"),
                r.num(b, "factor", where, 3.0),
            )
        )
    amp = r.num(wl, "diurnal_amplitude", "workload.", 0.0)
    if amp > 1:
        raise r.err("workload.diurnal_amplitude", "a fraction between 0 and 1", amp)
    workload = WorkloadSpec(
        diurnal_amplitude=amp,
        diurnal_period=max(1, r.duration(wl, "diurnal_period", "workload.", "24h")),
        noise=r.num(wl, "noise", "workload.", 0.0),
        cpu_jitter=r.num(wl, "cpu_jitter", "workload.", 0.0),
        bursts=tuple(bursts),
    )
    balancer = r.table(doc, "balancer", "")
    warnings: list[str] = list(event_warnings)
    config = Config().with_values(balancer, source=f"{source}: balancer", warnings=warnings).check()
    strategies = doc.get("strategies", [])
    if not isinstance(strategies, list) or not all(isinstance(s, str) for s in strategies):
        raise r.err("strategies", "a list of shedding strategy names", strategies)
    return Scenario(
        name=str(doc.get("name") or Path(source).stem),
        description=str(doc.get("description", "")),
        duration=duration,
        step=step,
        seed=seed,
        brokers=tuple(brokers),
        initial=initial,
        namespaces=tuple(namespaces),
        events=tuple(events),
        config=config,
        workload=workload,
        strategies=tuple(strategies),
        warnings=tuple(warnings),
        dispatch=parse_dispatch(doc.get("dispatch"), source),
        broker_defaults=BrokerSpec("defaults", **defaults),
        policies=_policies(doc.get("policies"), source),
        clients=_clients(r, doc),
    )


def _clients(r: _Reader, doc: dict[str, Any]) -> ClientsSpec | None:
    """The ``[clients]`` table (traffic/clients.py), or None when the scenario has none."""
    if "clients" not in doc:
        return None
    d = r.table(doc, "clients", "")
    check_keys(d, CLIENT_KEYS, "clients.", r.source)
    w = "clients."
    subscription = r.text(d, "subscription", w, "Shared")
    if subscription not in SUBSCRIPTION_TYPES:
        raise r.err(f"{w}subscription", f"one of {', '.join(SUBSCRIPTION_TYPES)}", subscription)
    batching = d.get("batching", True)
    if not isinstance(batching, bool):
        raise r.err(f"{w}batching", "true or false", batching)
    return ClientsSpec(
        producers=r.integer(d, "producers", w, 0, maximum=MAX_CLIENTS),
        consumers=r.integer(d, "consumers", w, 0, maximum=MAX_CLIENTS),
        topics=r.integer(d, "topics", w, 0, maximum=MAX_CLIENTS),
        rate=r.num(d, "rate", w, 100.0, positive=True),
        message_size=r.integer(d, "message_size", w, 1024, minimum=1, maximum=MAX_MESSAGE_SIZE),
        subscription=subscription,
        batching=batching,
    )


def _policies(value: Any, source: str) -> PlacementPolicies:
    """``[policies]``: the ``--policies`` document as TOML tables (``namespaceIsolationPolicies``, ...)."""
    if value is None:
        return NO_POLICIES
    try:
        return PlacementPolicies.from_json(value, "policies")
    except InputError as e:
        raise e.within(source) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and parse a ``CLUSTER.toml`` file (``-``: stdin) through ``model.textfiles``."""
    source = source_name(str(path))
    text = read_text(str(path))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not valid TOML: {e}", source=source) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", source=source) from None
    return parse_scenario(doc, source)


SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
"""The scenarios shipped with the package (package data ``bundlewise/scenarios/*.toml``)."""


def bundled_names() -> list[str]:
    """The bundled scenarios, by file stem."""
    return sorted(p.stem for p in SCENARIOS.glob("*.toml"))


def bundled_scenario(name: str = "default") -> Scenario:
    """A bundled scenario by name (``default``, ``idle-broker``, ...)."""
    path = SCENARIOS / f"{name}.toml"
    if name not in bundled_names():
        raise InputError(
            f"no bundled scenario {name!r}; expected one of {', '.join(bundled_names())}", field="--cluster"
        )
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    return parse_scenario(doc, f"{name}.toml")
