"""The input rules of docs/formats.md ("Input rules"), each with its exact message: one input layer for every
file (``model.textfiles``), timestamps (``model.epoch``), broker identities (``model.brokers``), physical bounds
and counts, events inside the run, and the numeric options."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bundlewise.cli.main import main
from bundlewise.config import load_config
from bundlewise.model import textfiles
from bundlewise.model.brokers import broker_key, check_distinct
from bundlewise.model.epoch import check_epoch_ms
from bundlewise.model.errors import InputError
from bundlewise.model.reports import Report, group_reports

NOW = 1_764_288_000_000  # 2025-11-28
TS = 1_700_000_000_000


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- one reading of every file ---------------------------------------------------------------------------


def test_a_byte_order_mark_and_crlf_cost_no_key_of_a_broker_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"\xef\xbb\xbfloadBalancerBrokerThresholdShedderPercentage=50\r\nmaxUnloadPercentage=0.5\r\n")
    config = load_config(str(conf))
    assert config["loadBalancerBrokerThresholdShedderPercentage"] == 50  # the first key, read despite the BOM
    assert config["maxUnloadPercentage"] == 0.5
    assert capsys.readouterr().err == (
        f"note: {conf}: removed a UTF-8 byte-order mark at the start\n"
        f"note: {conf}: read Windows line ends (CRLF) as LF\n"
    )


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(textfiles.MAX_TEXT_BYTES + (6 << 20))  # sparse: reading it would take the time and memory
    with pytest.raises(InputError) as e:
        textfiles.read_text(str(big))
    assert str(e.value) == (
        f"{big}: is 70 MiB; expected at most 64 MiB for a file read whole "
        "(split it, or give traces as CSV, JSON Lines or Parquet, which are streamed)"
    )


def test_stdin_is_refused_as_soon_as_it_passes_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x" * (3 << 20))))
    with pytest.raises(InputError) as e:
        textfiles.read_text("-", limit=2 << 20)
    assert str(e.value).startswith("<stdin>: is 3 MiB; expected at most 2 MiB for a file read whole")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a=caf\xe9\n", "not UTF-8 text at byte 5; expected UTF-8 (a binary file, or text saved as Latin-1?)"),
        (b"a=1\x00\n", "holds NUL bytes; expected text (a binary file?)"),
    ],
)
def test_text_that_is_not_utf8_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    f = tmp_path / "c.conf"
    f.write_bytes(data)
    with pytest.raises(InputError) as e:
        textfiles.read_text(str(f))
    assert str(e.value) == f"{f}: {message}"


def test_a_trace_with_a_byte_order_mark_reads_as_without(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bundlewise.traffic import readers

    rows = "timestamp,topic,msgRateIn\n0,persistent://t/ns/a,1\n60000,persistent://t/ns/a,2\n"
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(rows)
    marked.write_bytes(b"\xef\xbb\xbf" + rows.replace("\n", "\r\n").encode())
    read = [readers.read_local(str(p)).parts[0].table.to_pylist() for p in (plain, marked)]
    assert read[0] == read[1] and read[0][1]["msgRateIn"] == "2"
    assert capsys.readouterr().err == f"note: {marked}: removed a UTF-8 byte-order mark at the start\n"


# -- timestamps --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ms", [0, 1000, 60_000, 10_000_000, 946_684_799, TS, NOW + 86_400_000])
def test_relative_clocks_and_plausible_times_are_taken_as_given(ms: int) -> None:
    assert check_epoch_ms(ms, "timestamp", NOW) == ms


@pytest.mark.parametrize(
    ("ms", "message"),
    [
        (
            1_700_000_000,
            "1700000000 looks like seconds since the epoch (2023-11-14 in seconds, 1970-01-20 in ms); "
            "expected milliseconds: multiply by 1000 (1700000000000)",
        ),
        (
            10_000_000_000,
            "10000000000 ms is 1970-04-26; expected ms since the epoch from 2000-01-01 on, or a relative clock "
            "below 946,684,800",
        ),
        (
            32_503_680_000_000,
            "32503680000000 ms is 3000-01-01, in the future; expected a time no later than now + 1 day (2025-11-29)",
        ),
    ],
)
def test_seconds_old_and_future_times_are_refused(ms: int, message: str) -> None:
    with pytest.raises(InputError) as e:
        check_epoch_ms(ms, "timestamp", NOW)
    assert str(e.value) == f"timestamp: {message}"


def test_a_load_report_in_seconds_is_refused_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "broker-1.json"
    report.write_text(json.dumps({"cpu": {"usage": 1, "limit": 100}, "bundles": [], "lastUpdate": TS // 1000}))
    code, out, err = run(capsys, "shed", "--strategy", "ThresholdShedder", str(report))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {report}: lastUpdate: 1700000000 looks like seconds since the epoch (2023-11-14 in seconds, "
        "1970-01-20 in ms); expected milliseconds: multiply by 1000 (1700000000000)\n"
    )


def test_a_trace_in_seconds_is_refused_as_a_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,topic,msgRateIn\n1700000000,t,1\n1700000060,t,2\n")
    code, _, err = run(capsys, "simulate", "--no-progress", "--strategy", "ThresholdShedder", "--workload", str(trace))
    assert code == 2
    assert err.splitlines()[-1] == (
        f"error: {trace}: timestamp: 1700000000 looks like seconds since the epoch (2023-11-14 in seconds, "
        "1970-01-20 in ms); expected milliseconds: multiply by 1000 (1700000000000)"
    )


# -- broker identities -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("broker-1:8080", "broker-1:8080"),
        ("Broker-1:8080", "broker-1:8080"),
        ("http://BROKER-1:8080/", "broker-1:8080"),
        ("http://broker-1", "broker-1:80"),
        ("https://broker-1", "broker-1:443"),
        ("pulsar://broker-1", "broker-1:6650"),
        ("pulsar+ssl://broker-1", "broker-1:6651"),
        ("http://[::1]:08080", "[::1]:8080"),
        ("broker-1", "broker-1"),
    ],
)
def test_broker_identities_compare_as_pulsar_compares_addresses(name: str, key: str) -> None:
    assert broker_key(name) == key


def test_one_broker_in_two_spellings_is_refused_in_a_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps({"brokers": {"broker-1:8080": {}, "http://BROKER-1:8080/": {}}}))
    for command in (["shed", "--strategy", "ThresholdShedder"], ["split-check"]):
        code, out, err = run(capsys, *command, str(snap))
        assert (code, out) == (2, "")
        assert err == (
            f"error: {snap}: snapshot.brokers: 'http://BROKER-1:8080/' and 'broker-1:8080' are the same broker "
            "(broker-1:8080); expected each broker once\n"
        )


def test_extensible_lists_are_checked_and_spelt_as_the_brokers_map() -> None:
    from bundlewise.model.extensible import parse_extensible_snapshot

    doc = {"brokers": {"b1:8080": {}, "b2:8080": {}}, "availableBrokers": ["B1:8080", "b2:8080"]}
    assert parse_extensible_snapshot(doc).available_brokers == ("b1:8080", "b2:8080")
    with pytest.raises(InputError) as e:
        parse_extensible_snapshot({**doc, "availableBrokers": ["b1:8080", "B1:8080"]})
    assert str(e.value) == (
        "snapshot.availableBrokers: 'B1:8080' and 'b1:8080' are the same broker (b1:8080); expected each broker once"
    )
    with pytest.raises(InputError, match="'b1:8080' listed twice; expected each broker once"):
        check_distinct(["b1:8080", "b1:8080"], "x")


def test_reports_of_one_broker_in_two_spellings_are_two_steps_not_two_brokers() -> None:
    reports = [Report("a", "broker-1:8080", TS, {"n": 1}), Report("b", "BROKER-1:8080", TS + 1, {"n": 2})]
    steps = group_reports(reports)
    assert [s["brokers"] for s in steps] == [{"broker-1:8080": {"n": 1}}, {"broker-1:8080": {"n": 2}}]


# -- bounds and counts -------------------------------------------------------------------------------------

CLUSTER = """duration = "10m"
[[brokers]]
name = "broker-1"
[[brokers]]
name = "broker-2"
[[namespaces]]
name = "t/ns"
bundles = 4
[[events]]
at = "5m"
action = "remove"
broker = "broker-2"
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'name = "broker-2"',
            'name = "broker-2"\ncpu_cores = 0.000001',
            "brokers[1].cpu_cores: expected a number from 0.1 to 10,000, got 1e-06",
        ),
        (
            'name = "broker-1"',
            'name = "broker-1"\nnic_mbps = inf',
            "brokers[0].nic_mbps: expected a number from 1 to 10,000,000, got inf",
        ),
        (
            'name = "broker-2"',
            'name = "BROKER-1"',
            "brokers[1].name: expected a broker name not used before (letter case aside), got 'BROKER-1'",
        ),
        ("bundles = 4", "bundles = 0", "namespaces[0].bundles: expected a whole number from 1 to 65,536, got 0"),
        ('at = "5m"', 'at = "10m"', "events[0].at: expected a time within the run (before duration = 10m), got '10m'"),
    ],
)
def test_a_scenario_past_physical_bounds_or_its_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, message: str
) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER.replace(old, new, 1))
    code, out, err = run(capsys, "simulate", "--no-progress", "--cluster", str(cluster))
    assert (code, out, err) == (2, "", f"error: {cluster}: {message}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["split-check", "--bundle-counts", "t/ns=0"],
            "--bundle-counts: expected a bundle count of 1 to 2,147,483,647 for t/ns, got 0",
        ),
        (
            ["split-check", "--bundle-counts", "t/ns=4,t/ns=8"],
            "--bundle-counts: t/ns is given twice; expected each namespace once",
        ),
        (
            ["bundle", "--set", "loadBalancerNamespaceMaximumBundles=4294967296", "--bundles", "4294967296", "t"],
            "--set: loadBalancerNamespaceMaximumBundles: expected a value <= 2,147,483,647 (bundles), got '4294967296'",
        ),
        (
            ["bundle", "--set", "loadBalancerNamespaceMaximumBundles=2147483647", "--bundles", "2147483647", "t"],
            "--bundles: expected 1 to 1,048,576 bundles (the most listed), got 2,147,483,647",
        ),
        (["simulate", "--seed", "-1"], "--seed: expected a number from 0 to 9,223,372,036,854,775,807, got -1"),
        (["live", "up", "--time-scale", "nan"], "--time-scale: expected a number from 0.01 to 10,000, got nan"),
        (["live", "up", "--brokers", "0"], "--brokers: expected a number from 1 to 1,000, got 0"),
        (["simulate", "--out", ""], "--out: expected a path, got an empty string"),
        (["sweep", "--out", ""], "--out: expected a path, got an empty string"),
    ],
)
def test_counts_and_numeric_options_are_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    snap = tmp_path / "s.json"
    snap.write_text('{"brokers": {}}')
    argv = [*argv, str(snap)] if argv[0] == "split-check" else argv
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == f"error: {message}" and all(
        line.startswith("warning: ") for line in err.splitlines()[:-1]
    )
