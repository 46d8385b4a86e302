"""The extensible leader's work (``ExtensibleLoadManagerImpl#playLeader``, ``UnloadScheduler#execute``,
``ServiceUnitStateChannelImpl#scheduleOwnershipMonitor``).

Started when this broker wins ``/loadbalance/extension/leader`` and stopped when it loses it; a new leader
starts with a fresh family (empty recently-unloaded maps and TransferShedder hit counter), as Pulsar's
``UnloadScheduler`` is closed on every role change.

* **Unload cycle**, every ``loadBalancerSheddingIntervalMinutes`` (Pulsar time), first one interval after
  winning: the family's ``UnloadScheduler`` (``ExtensibleFamily.shed``: the gates, the grace period, the
  cool-downs, TransferShedder) over what the load stores and the registry hold right now; then every
  ``Success`` decision is carried out through the channel -- ``Releasing(dst = destination, src =
  broker)``, a transfer when TransferShedder pre-assigned a destination (``loadBalancerTransferEnabled``),
  else a plain unload -- all at once, each waited for up to ``namespaceBundleUnloadingTimeoutMs``,
  leadership re-checked before each publish.  A decision that could not be carried out is logged as
  ``Skip`` and forgotten from the recently-unloaded maps.
* **Ownership monitor**, every ``loadBalancerServiceUnitStateMonitorIntervalInSeconds`` (real time: the
  channel's timings are metadata timings), first run at once (``cleanup.OrphanCleanup.monitor``).

Every cycle's input is logged (``log_load_data``) as an extensible snapshot -- the broker-load and
top-bundles stores, the registered brokers and their lookup data, the scheduler's recently unloaded
bundles and brokers -- with the cycle's counters (``Label.Reason``) and load statistics; ``bundlewise
shed --strategy TransferShedder`` on those snapshots as steps gives the leader's decisions back.  Every
decision carried out is logged (``log_decision``) in the ``decisions.jsonl`` row shape with its label.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.config.views import LeaderSettings
from bundlewise.live.broker.extensible.cleanup import OrphanCleanup
from bundlewise.live.broker.manager import BrokerContext, Sample, decision_samples
from bundlewise.live.broker.tasks import Tasks
from bundlewise.model.decisions import Label, Logged, Unload, UnloadReason, counter_key
from bundlewise.model.extensible import ExtensibleSnapshot
from bundlewise.results.decisions import decision_row

log = logging.getLogger(__name__)
SnapshotSource = Callable[[int], tuple[ExtensibleSnapshot, dict[str, Any]]]
Unloader = Callable[[Unload], Awaitable[str | None]]


def _num(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else x


class LeaderWork:
    def __init__(
        self,
        ctx: BrokerContext,
        make_family: Callable[[], ExtensibleFamily],
        cleanup: OrphanCleanup,
        snapshot: SnapshotSource,
        unload: Unloader,
        is_leader: Callable[[], bool],
        monitor_interval_s: float,
        tasks: Tasks,
    ) -> None:
        self.ctx = ctx
        self.scope = tasks.scope()
        self.make_family = make_family
        self.family = make_family()
        self.cleanup = cleanup
        self.snapshot = snapshot
        self.unload = unload
        self.is_leader = is_leader
        self.monitor_interval_s = monitor_interval_s
        self.cycles = 0
        self.decision_ms = 0.0  # the last cycle's decision, wall ms (``decision_samples``)
        self.shed_ran = False
        self.unload_bundle_total = 0
        self.unload_broker_total = 0
        self.breakdown: dict[str, int] = {}
        self.load_avg = 0.0
        self.load_std = 0.0

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.scope.running

    def start(self) -> None:
        self.stop()
        self.family = self.make_family()
        period = self.ctx.clock.real_seconds(self.ctx.config.view(LeaderSettings).shedding_interval_ms)
        self.scope.every(period, self.shed, "unload cycle")
        self.scope.every(self.monitor_interval_s, self._monitor, "ownership monitor", at_start=True)

    def stop(self) -> None:
        self.scope.cancel()

    async def _monitor(self) -> None:
        await self.cleanup.monitor()

    # -- the unload cycle --------------------------------------------------------------------
    async def shed(self) -> None:
        """One ``UnloadScheduler#execute``."""
        if not self.is_leader():
            return
        now = self.ctx.clock.now_ms()
        started = time.perf_counter()
        scheduler = self.family.scheduler
        snap, doc = self.snapshot(now)
        doc["recentlyUnloadedBundles"] = dict(scheduler.recently_unloaded_bundles)
        doc["recentlyUnloadedBrokers"] = dict(scheduler.recently_unloaded_brokers)
        before = (dict(scheduler.recently_unloaded_bundles), dict(scheduler.recently_unloaded_brokers))
        result = self.family.shed(snap, self.ctx.config, now)
        self.decision_ms = (time.perf_counter() - started) * 1000
        self.cycles += 1
        self.shed_ran = True
        line: dict[str, Any] = {"cycle": self.cycles, "leader": self.ctx.identity.broker_id, **doc}
        if result is None:
            line.update(counters={}, stats=None)
            self.ctx.log_load_data(line)
            return
        line["counters"] = dict(result.counters)
        line["stats"] = {"avg": _num(result.avg), "std": _num(result.std), "finalStd": _num(result.final_std)}
        self.ctx.log_load_data(line)
        for key, n in result.counters.items():
            self.breakdown[key] = self.breakdown.get(key, 0) + n
        if not math.isnan(result.avg) and not math.isnan(result.std):
            self.load_avg, self.load_std = result.avg, result.std
        outcomes = await asyncio.gather(*(self._carry_out(d) for d in result.decisions))
        failed = [d for d, ok in zip(result.decisions, outcomes, strict=True) if not ok]
        for d in failed:  # forgotten, as the modular leader forgets a failed unload
            for remembered, previous, key in (
                (scheduler.recently_unloaded_bundles, before[0], d.bundle),
                (scheduler.recently_unloaded_brokers, before[1], d.broker),
            ):
                remembered.pop(key, None)
                if key in previous:
                    remembered[key] = previous[key]

    async def _carry_out(self, d: Unload) -> bool:
        now = self.ctx.clock.now_ms()
        if not self.is_leader():
            self._log(d.skipped("no longer the leader"), now)
            return False
        error = await self.unload(d)
        if error is not None:
            self._log(d.skipped(f"the unload failed: {error}"), now)
            return False
        self.unload_bundle_total += 1
        self.unload_broker_total += 1
        self._log(d, now)
        return True

    def _log(self, d: Unload, now: int) -> None:
        leader = self.ctx.identity.broker_id
        self.ctx.log_decision(decision_row(Logged(self.family.name, self.cycles, now, d, leader=leader)))

    def log_admin(self, d: Unload) -> None:
        """An admin unload or transfer carried out on this broker (``UnloadDecision.Reason.Admin``)."""
        self.breakdown[counter_key(Label.SUCCESS, UnloadReason.ADMIN)] = (
            self.breakdown.get(counter_key(Label.SUCCESS, UnloadReason.ADMIN), 0) + 1
        )
        self._log(d, self.ctx.clock.now_ms())

    # -- metrics -----------------------------------------------------------------------------
    def metrics(self) -> list[Sample]:
        """``UnloadCounter#toMetrics``."""
        if not self.shed_ran and not self.breakdown:
            return []
        base = (("broker", self.ctx.identity.host), ("metric", "bundleUnloading"))
        out = [
            Sample("pulsar_lb_unload_broker_total", base, self.unload_broker_total),
            Sample("pulsar_lb_unload_bundle_total", base, self.unload_bundle_total),
            *decision_samples(self.cycles, self.decision_ms),
        ]
        for key, n in sorted(self.breakdown.items()):
            result, reason = key.split(".", 1)
            out.append(
                Sample("pulsar_lb_unload_broker_breakdown_total", (*base, ("result", result), ("reason", reason)), n)
            )
        if self.load_avg > 0 and self.load_std > 0:
            for stat, value in (("avg", self.load_avg), ("std", self.load_std)):
                labels = (*base, ("feature", "max_ema"), ("stat", stat))
                out.append(Sample("pulsar_lb_resource_usage_stats", labels, value))
        return out
