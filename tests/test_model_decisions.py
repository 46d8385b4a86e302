"""Decisions as data (``model.decisions``) and broker versions (``model.semver``)."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.extensible.placement import FilterContext, apply_filters
from bundlewise.algorithms.placement import filters
from bundlewise.config import Config
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER
from bundlewise.model.decisions import (
    Label,
    SplitDecision,
    SplitReason,
    Unload,
    UnloadReason,
    counter_key,
)
from bundlewise.model.extensible import BrokerLookupData
from bundlewise.model.load import BrokerData, LoadData, LocalBrokerData
from bundlewise.model.semver import InvalidVersion, Version, latest

B = "t/ns/0x00000000_0x40000000"


def test_an_unload_prints_the_commands_fields_and_counts_as_pulsar_labels_it() -> None:
    plan = Unload("b1", B, "OverloadShedder: 99% >= 85%")
    assert plan.to_json() == {"broker": "b1", "bundle": B, "destination": None, "reason": "OverloadShedder: 99% >= 85%"}
    moved = plan.to("b2")
    assert moved.to_json()["destination"] == "b2" and moved.counter == "Success.Overloaded"
    skipped = plan.skipped("destination b1 is the current owner")
    assert skipped.label is Label.SKIP and skipped.to_json() == {
        "broker": "b1",
        "bundle": B,
        "reason": "destination b1 is the current owner",
    }
    transfer = Unload.of("b5", B, UnloadReason.UNDERLOADED, "b1")
    assert transfer.reason == "Underloaded" and transfer.counter == "Success.Underloaded"
    assert counter_key(Label.SKIP, UnloadReason.HIT_COUNT) == "Skip.HitCount"


def test_one_split_decision_for_both_load_managers() -> None:
    modular = SplitDecision(B, "b1", (SplitReason.TOPICS, SplitReason.MSG_RATE), "Topics (2000 topics > 1000); ...")
    assert modular.to_json() == {"bundle": B, "broker": "b1", "reasons": ["Topics", "MsgRate"]}
    assert modular.reason == "Topics"  # the extensible strategy's single reason is the first condition met
    done = modular.done("range_equally_divide", ["c1", "c2"])
    assert (done.algorithm, done.children, done.reasons) == ("range_equally_divide", ("c1", "c2"), modular.reasons)


# -- broker versions (jsemver 0.9, as both BrokerVersionFilters read them) --------------------------------


@pytest.mark.parametrize(
    "bad", ["01.2.3", "1.02.3", "1.2.3-01", "1.2.3-", "1.2.3+", "1.2.3-a..b", " 1.2.3", "1.2.3.4", "2147483648.0.0"]
)
def test_versions_jsemver_refuses(bad: str) -> None:
    with pytest.raises(InvalidVersion):
        Version.parse(bad)


def test_version_order_follows_jsemver() -> None:
    v = Version.parse
    assert v("1.2.3+007").build == ("007",)  # build identifiers may have leading zeros
    assert v("1.0.0-alpha.1") < v("1.0.0-alpha.beta")  # "1" < "beta" as strings, as Java compares them
    assert v("1.0.0-x.-1") < v("1.0.0-x.0")  # "-1" reads as a Java int
    assert v("1.0.0-rc.2") < v("1.0.0") and v("1.0.0") == v("1.0.0+b7")
    assert v("1.0.0").compare_build_aware(v("1.0.0+b7")) < 0
    assert v("1.0.0+b10").compare_build_aware(v("1.0.0+b9")) < 0  # not ints: compared as strings
    assert v("1.0.0+10").compare_build_aware(v("1.0.0+9")) > 0
    assert latest([v("3.2.0"), v("3.2.0+b1"), v("3.1.9")]) == v("3.2.0+b1")


def test_both_version_filters_keep_the_same_brokers() -> None:
    versions = {"a": "3.2.0", "b": "3.2.0+build7", "c": "3.2.0-rc1", "d": "3.10.0-rc1", "e": "3.10.0+x"}
    prefer = Config().with_values({"preferLaterVersions": True})
    load = LoadData({n: BrokerData(LocalBrokerData(brokerVersionString=s)) for n, s in versions.items()})
    modular = filters.filter_broker_version(list(versions), load, prefer)
    lookup = {n: BrokerLookupData(s, EXTENSIBLE_LOAD_MANAGER) for n, s in versions.items()}
    extensible = apply_filters(tuple(versions), "x", FilterContext({}, lookup, prefer))
    assert modular == list(extensible) == ["e"]
    versions["f"] = "3.10.0"  # equal to e once build metadata is ignored
    load.brokers["f"] = BrokerData(LocalBrokerData(brokerVersionString="3.10.0"))
    lookup["f"] = BrokerLookupData("3.10.0", EXTENSIBLE_LOAD_MANAGER)
    assert filters.filter_broker_version(list(versions), load, prefer) == ["e", "f"]
    assert apply_filters(tuple(versions), "x", FilterContext({}, lookup, prefer)) == ("e", "f")
