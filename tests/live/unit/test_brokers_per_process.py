"""Several brokers to a process, without starting one: what the harness runs (``live.harness.broker_group``), what
it refuses (``live up --brokers-per-process``), each broker's share of the process's memory and its log field."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bundlewise.cli.main import main
from bundlewise.live.broker.logcontext import BrokerField, context_of
from bundlewise.live.broker.service import process_memory
from bundlewise.live.harness.broker_group import BrokerGroup, GroupedBroker, SharedProcessError
from bundlewise.live.harness.cluster import LocalCluster


def _group(tmp_path: Path) -> BrokerGroup:
    members = [
        GroupedBroker(
            "etcd://h:1/r",
            log_dir=tmp_path,
            settings={"brokerServicePort": 7000 + i, "x": True},
            args=("--cores", str(4 * (i + 1))),
            port=8000 + i,
        )
        for i in range(2)
    ]
    return BrokerGroup("etcd://h:1/r", members, log_dir=tmp_path, settings={"x": True}, args=("--time-scale", "60"))


def test_a_group_is_one_broker_command_with_each_brokers_ports_files_and_flags(tmp_path: Path) -> None:
    cmd = _group(tmp_path)._command()
    assert cmd[1:] == [
        "-m", "bundlewise.cli.main", "broker", "--store", "etcd://h:1/r",
        "--web", "127.0.0.1:8000", "--broker-service-port", "7000",
        "--decisions", str(tmp_path / "decisions-8000.jsonl"),
        "--load-data-log", str(tmp_path / "load-data-8000.jsonl"),
        "--web", "127.0.0.1:8001", "--broker-service-port", "7001",
        "--decisions", str(tmp_path / "decisions-8001.jsonl"),
        "--load-data-log", str(tmp_path / "load-data-8001.jsonl"),
        "--set", "x=true", "--time-scale", "60", "--cores", "4", "--cores", "8",
    ]  # fmt: skip


def test_a_broker_of_a_group_refuses_the_faults_that_would_reach_its_neighbours(tmp_path: Path) -> None:
    group = _group(tmp_path)
    member = group.members[1]
    for fault in (member.kill, member.pause, member.resume, member.stop, member.start):
        with pytest.raises(SharedProcessError, match="shares its process with 1 other brokers"):
            fault()
    assert member.log_path == group.log_path == tmp_path / "8000.log"
    assert not member.is_running and member.pid is None


def test_live_up_refuses_several_brokers_per_process_with_a_scenario_that_kills_brokers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["live", "up", "--cluster", "rolling-restart", "--brokers-per-process", "2"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: --brokers-per-process: expected 1 with a scenario that kills or stops brokers (6 restart/remove "
        "events: the signal would reach all 2 brokers of the process), got 2\n"
    )
    assert main(["live", "up", "--brokers-per-process", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --brokers-per-process: expected a number from 1 to 100")


def test_a_cluster_needs_at_least_one_broker_per_process() -> None:
    with pytest.raises(ValueError, match="brokers_per_process"):
        LocalCluster(2, brokers_per_process=0)


def test_each_of_k_brokers_reports_a_kth_of_the_process_memory() -> None:
    one, three = process_memory(), process_memory(3)
    assert one.usage > 0 and three.limit == one.limit
    assert three.usage == pytest.approx(one.usage / 3, rel=0.05)


def test_a_log_record_names_the_broker_whose_context_emitted_it() -> None:
    field = BrokerField()
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    field.filter(record)
    assert record.broker == "-"
    context_of("127.0.0.1:8080").run(field.filter, record)
    assert record.broker == "127.0.0.1:8080"


def test_a_plan_with_kills_is_refused_by_the_harness_too_before_anything_starts() -> None:
    from bundlewise.live.harness.events import LiveEvent
    from bundlewise.live.harness.up import LivePlan, run_live

    plan = LivePlan(
        name="x", brokers=(), initial=(), events=(LiveEvent(60_000, "restart", "broker-1"),), namespaces=(),
        workload=None, workload_path="", config=None, strategy="ThresholdShedder", time_scale=60.0,
        duration=60_000, step=60_000, brokers_per_process=2,
    )  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(ValueError, match="1 restart/remove events would signal processes of 2 brokers"):
        run_live(plan)
