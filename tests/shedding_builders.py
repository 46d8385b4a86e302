"""Hand-built ``LoadData`` for the shedding tests, the way Pulsar's own shedder tests build it."""

from __future__ import annotations

from collections.abc import Iterable

from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageMessageData
from bundlewise.model.resources import ResourceUsage, SystemResources

MB = 1024 * 1024


def resources(cpu: float = 0.0, bandwidth_in: float = 0.0) -> SystemResources:
    """Percent values (0-100+) as ``{"usage": pct, "limit": 100}``."""
    return SystemResources(cpu=ResourceUsage(cpu, 100.0), bandwidth_in=ResourceUsage(bandwidth_in, 100.0))


def broker(
    cpu: float = 0.0,
    bundles: Iterable[str] = (),
    *,
    tput: float = 0.0,
    rate: float = 0.0,
    bandwidth_in: float = 0.0,
) -> BrokerData:
    """A broker at ``cpu`` percent with total throughput ``tput`` (B/s) and message rate ``rate``, split in/out."""
    local = LocalBrokerData(
        resources=resources(cpu, bandwidth_in),
        msgThroughputIn=tput / 2,
        msgThroughputOut=tput / 2,
        msgRateIn=rate / 2,
        msgRateOut=rate / 2,
        bundles=list(bundles),
    )
    return BrokerData(local)


def bundle(tput: float = 0.0, rate: float = 0.0) -> BundleData:
    """Bundle data whose short-term (and long-term) totals are ``tput`` B/s and ``rate`` msg/s."""

    def window(n: int) -> TimeAverageMessageData:
        return TimeAverageMessageData(n, n, tput / 2, tput / 2, rate / 2, rate / 2)

    return BundleData(window(10), window(1000), 1)


def load(
    brokers: dict[str, BrokerData],
    bundle_data: dict[str, BundleData] | None = None,
    recent: dict[str, int] | None = None,
) -> LoadData:
    return LoadData(brokers, dict(bundle_data or {}), dict(recent or {}))


def ten_bundle_broker(cpu: float = 0.0, bandwidth_in: float = 0.0) -> tuple[BrokerData, dict[str, BundleData]]:
    """Pulsar's OverloadShedderTest/ThresholdShedderTest broker: bundle-i has i MB/s in and i MB/s out (110 MB/s)."""
    data = {f"bundle-{i}": bundle(tput=2 * i * MB) for i in range(1, 11)}
    return broker(cpu, data, tput=110 * MB, bandwidth_in=bandwidth_in), data
