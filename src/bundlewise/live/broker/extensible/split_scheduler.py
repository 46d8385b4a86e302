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

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.splitting.algorithms import SplitRequest, TopicLoad, resolve_algorithm_name, split_bundle
from bundlewise.config.views import LeaderSettings
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel
from bundlewise.live.broker.manager import BrokerContext, Sample
from bundlewise.model.bundles import Bundle
from bundlewise.model.channel import ServiceUnitState
from bundlewise.model.decisions import Label, Logged, SplitDecision

log = logging.getLogger(__name__)
Splitter = Callable[[Bundle, list[Bundle]], Awaitable[str | None]]


class SplitScheduler:
    def __init__(
        self, ctx: BrokerContext, family: ExtensibleFamily, channel: ServiceUnitStateChannel, split: Splitter
    ) -> None:
        self.ctx = ctx
        self.family = family
        self.channel = channel
        self.split = split
        self.cycles = 0
        self.ran = False
        self.split_total = 0
        self.breakdown: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="split-scheduler")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _loop(self) -> None:
        period = self.ctx.clock.real_seconds(self.ctx.config.view(LeaderSettings).split_interval_ms)
        while True:
            await asyncio.sleep(period)
            try:
                await self.execute()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("split cycle failed: %r", e)

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
            topics = [TopicLoad(t) for t in self.ctx.topic_names(bundle)]
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
            done = d.done(algorithm, [c.name for c in children])
            self.log(done, self.cycles)

    def _count(self, label: Label, reason: str) -> None:
        key = f"{label}.{reason}"
        self.breakdown[key] = self.breakdown.get(key, 0) + 1

    def log(self, d: SplitDecision, tick: int) -> None:
        line = Logged(self.family.name, tick, self.ctx.clock.now_ms(), d).to_json()
        line["label"] = str(d.label)
        line["broker"] = self.ctx.identity.broker_id
        self.ctx.log_decision(line)

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
