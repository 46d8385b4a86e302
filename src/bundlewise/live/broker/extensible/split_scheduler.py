"""Every extensible broker's split scheduler (``SplitScheduler#execute``, ``SplitManager``).

Every ``loadBalancerSplitIntervalMinutes`` (Pulsar time), when ``loadBalancerEnabled`` and
``loadBalancerAutoBundleSplitEnabled``: the family's split strategy for this broker
(``ExtensibleFamily.broker_splits``, ``DefaultNamespaceBundleSplitStrategyImpl``: hit counts kept per
broker across cycles) over the stats of the bundles this broker serves, with each namespace's current
bundle count and the bundles now ``Splitting`` in the channel.  Each decision is split at the boundary
of ``defaultNamespaceBundleSplitAlgorithm`` (one boundary, else ``Failure``) and published as
``Splitting(src = this broker, {left: ∅, right: ∅})``; the scheduler waits for each split to complete
(the parent tombstoned) up to ``namespaceBundleUnloadingTimeoutMs``.  Splits carried out are logged in
the ``decisions.jsonl`` row shape and counted (``brk_lb_bundles_split_total``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.splitting.algorithms import (
    SplitRequest,
    measured_children,
    resolve_algorithm_name,
    split_bundle,
)
from bundlewise.config.views import LeaderSettings
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel
from bundlewise.live.broker.manager import BrokerContext, Sample
from bundlewise.live.broker.tasks import Tasks
from bundlewise.model.bundles import Bundle
from bundlewise.model.channel import ServiceUnitState
from bundlewise.model.decisions import Label, Logged, SplitDecision
from bundlewise.results.decisions import decision_row

log = logging.getLogger(__name__)
Splitter = Callable[[Bundle, list[Bundle]], Awaitable[str | None]]


class SplitScheduler:
    def __init__(
        self,
        ctx: BrokerContext,
        family: ExtensibleFamily,
        channel: ServiceUnitStateChannel,
        split: Splitter,
        tasks: Tasks,
    ) -> None:
        self.ctx = ctx
        self.scope = tasks.scope()
        self.family = family
        self.channel = channel
        self.split = split
        self.cycles = 0
        self.ran = False
        self.split_total = 0
        self.breakdown: dict[str, int] = {}

    def start(self) -> None:
        period = self.ctx.clock.real_seconds(self.ctx.config.view(LeaderSettings).split_interval_ms)
        self.scope.every(period, self.execute, "split cycle")

    def stop(self) -> None:
        self.scope.cancel()

    async def execute(self) -> None:
        """One ``SplitScheduler#execute``."""
        config = self.ctx.config
        if not config.view(LeaderSettings).splitting_active:
            return
        me = self.ctx.identity.broker_id
        stats = {b: s for b, s in self.ctx.sample_load().lastStats.items() if self.channel.serving(b)}
        counts: dict[str, int] = {}
        for name in stats:
            ns = Bundle.parse(name).namespace
            if ns not in counts:
                counts[ns] = len((await self.ctx.bundles.get(ns)).bundles)
        splitting = [
            k for k, v in self.channel.items().items() if v is not None and v.state is ServiceUnitState.Splitting
        ]
        decisions = self.family.broker_splits(me, stats, lambda ns: counts.get(ns, 0), splitting, config)
        self.cycles += 1
        self.ran = True
        algorithm = resolve_algorithm_name(None, config)
        for d in decisions:
            bundle = Bundle.parse(d.bundle)
            topics = self.ctx.topic_loads(bundle)
            result = split_bundle(algorithm, SplitRequest(bundle, topics), config)
            if result is None or len(result[0]) != 1:
                self._count(Label.FAILURE, "Unknown")
                continue
            children = result[1]
            error = await self.split(bundle, children)
            if error is not None:
                self._count(Label.FAILURE, "Unknown")
                log.warning("split of %s failed: %s", d.bundle, error)
                continue
            self.split_total += 1
            self._count(Label.SUCCESS, str(d.reason))
            done = d.done(algorithm, [c.name for c in children], measured_children(children, topics))
            self.log(done, self.cycles)

    def _count(self, label: Label, reason: str) -> None:
        key = f"{label}.{reason}"
        self.breakdown[key] = self.breakdown.get(key, 0) + 1

    def log(self, d: SplitDecision, tick: int) -> None:
        now, me = self.ctx.clock.now_ms(), self.ctx.identity.broker_id
        self.ctx.log_decision(decision_row(Logged(self.family.name, tick, now, d, leader=me)))

    def metrics(self) -> list[Sample]:
        """``SplitCounter#toMetrics``."""
        if not self.ran and not self.split_total:
            return []
        base = (("broker", self.ctx.identity.host), ("metric", "bundlesSplit"))
        out = [Sample("pulsar_lb_bundles_split_total", base, self.split_total)]
        for key, n in sorted(self.breakdown.items()):
            result, reason = key.split(".", 1)
            out.append(
                Sample("pulsar_lb_bundles_split_breakdown_total", (*base, ("result", result), ("reason", reason)), n)
            )
        return out
