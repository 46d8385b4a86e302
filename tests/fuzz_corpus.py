"""The fuzz corpus: odd-but-plausible inputs for every command of ``bundlewise --help`` (tests/test_fuzz_inputs.py).

Each command has a valid base input; the corpus derives cases from it, deterministically (a seeded generator):

* **file mutations** of every file the command reads: a byte-order mark, Windows line ends (both must give
  exactly the base's output), empty and blank files, truncated text, random bytes, Latin-1 and NUL bytes, a
  2 GB sparse file (refused from its size), a directory, a missing file;
* **field mutations** of JSON and TOML documents: 0, -1, 1e308, NaN, 2^70, 10^-6, a string, null, true, [] and
  {} in number fields; timestamps in seconds, in the year 3000 and negative; a broker listed twice in another
  letter case or as its URL; counts of 0 and past Pulsar's ``int``; events after the run;
* **argument mutations**: 0, -1, NaN, infinity, 4294967296 and '' for numeric options, ``--out ''``, an
  ``--out`` that is a file or a folder bundlewise did not write.

``Case.expect`` is ``same`` (exit 0, stdout identical to the base case's), ``ok`` (exit 0), ``refuse`` (exit 2)
or ``either`` (0 or 2); ``names`` is what a refusal's one ``error:`` line must name (the file or option).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.test_throttling_cli import SCENARIO as THROTTLE  # a valid throttle input

BOM = "\ufeff"
TS = 1_700_000_000_000
YEAR_3000 = 32_503_680_000_000
NS = "t/ns"
BUNDLES = [f"{NS}/0x{k * 0x20000000:08x}_0x{min((k + 1) * 0x20000000, 0xFFFFFFFF):08x}" for k in range(8)]


@dataclass
class Case:
    command: str
    label: str
    argv: list[str]
    expect: str  # same | ok | refuse | either
    names: str = ""  # what an error line must name
    base: int | None = None  # index (in the command's cases) of the base whose output "same" must equal
    stdin: str | None = None
    spark: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def usage(used: float, limit: float) -> dict[str, float]:
    return {"usage": used, "limit": limit}


def broker(cpu: float, bundles: list[str], rate: float) -> dict[str, Any]:
    stats = {
        b: {
            "msgRateIn": rate,
            "msgRateOut": rate * 2,
            "msgThroughputIn": rate * 1024,
            "msgThroughputOut": rate * 2048,
            "consumerCount": 2,
            "producerCount": 1,
            "topics": 3,
            "cacheSize": 0,
        }
        for b in bundles
    }
    return {
        "cpu": usage(cpu * 8, 800.0),
        "memory": usage(1024.0, 4096.0),
        "directMemory": usage(0.0, 4096.0),
        "bandwidthIn": usage(cpu * 1000, 100000.0),
        "bandwidthOut": usage(cpu * 1000, 100000.0),
        "msgRateIn": rate * len(bundles),
        "msgRateOut": rate * 2 * len(bundles),
        "msgThroughputIn": rate * 1024 * len(bundles),
        "msgThroughputOut": rate * 2048 * len(bundles),
        "bundles": bundles,
        "lastStats": stats,
        "numTopics": 3 * len(bundles),
        "lastUpdate": TS,
    }


def snapshot() -> dict[str, Any]:
    return {
        "timestamp": TS,
        "brokers": {
            "broker-1:8080": broker(90.0, BUNDLES[:5], 500.0),
            "broker-2:8080": broker(20.0, BUNDLES[5:7], 100.0),
            "broker-3:8080": broker(10.0, BUNDLES[7:], 50.0),
        },
    }


CONF = "# balancing\nloadBalancerBrokerThresholdShedderPercentage=50\nloadBalancerSheddingIntervalMinutes=1\n"
TOML = """name = "fuzz"
duration = "10m"
step = "1m"
seed = 3
[broker_defaults]
cpu_cores = 8
[[brokers]]
name = "broker-1"
[[brokers]]
name = "broker-2"
cpu_cores = 4
[[namespaces]]
name = "t/ns"
bundles = 4
topics = 8
msg_rate = 2000
[[events]]
at = "5m"
action = "restart"
broker = "broker-2"
down_for = "1m"
"""
TRACE = "timestamp,topic,msgRateIn,msgRateOut,msgThroughputIn,msgThroughputOut,producerCount,consumerCount\n" + "".join(
    f"{TS + t * 60_000},persistent://t/ns/topic-{k},{10 + k},{20 + k},{1024 * (k + 1)},{2048 * (k + 1)},1,2\n"
    for t in range(3)
    for k in range(4)
)
TOPICS = [
    {"name": f"persistent://{NS}/topic-{k}", "msgRateIn": 10.0 * k, "msgRateOut": 5.0, "msgThroughputIn": 100.0 * k}
    for k in range(6)
]
BUNDLES_FILE = {"boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"], "numBundles": 4}

NUMBERS: list[Any] = [0, -1, 1e308, float("nan"), 2**70, 0.000001, "12", None, True, [], {}]
ARG_NUMBERS = ["0", "-1", "nan", "inf", "1e400", "4294967296", ""]


class Corpus:
    """Writes the files of one command's cases under ``root`` and collects the cases."""

    def __init__(self, command: str, root: Path, seed: int = 28) -> None:
        self.command = command
        self.root = root / command
        self.root.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(seed)
        self.cases: list[Case] = []
        self.n = 0

    def file(self, name: str, data: bytes | str) -> str:
        self.n += 1
        path = self.root / f"{self.n:03d}-{name}"
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return str(path)

    def add(self, label: str, argv: list[str], expect: str, names: str = "", **kw: Any) -> int:
        self.cases.append(Case(self.command, label, argv, expect, names, **kw))
        return len(self.cases) - 1

    def text_mutations(self, name: str, text: str, argv_of: Any, base: int, *, strict: bool = True) -> None:
        """Every file mutation of ``text`` given where ``argv_of(path)`` puts it; ``strict``: a truncated
        document cannot be valid (JSON, TOML), else it may be (properties, CSV)."""
        cut = "refuse" if strict else "either"
        crlf = text.replace("\n", "\r\n")
        garbage = bytes(self.rng.randrange(256) for _ in range(300))
        for label, data, expect in (
            ("bom", BOM + text, "same"),
            ("crlf", crlf, "same"),
            ("bom+crlf", BOM + crlf, "same"),
            ("empty", b"", "refuse" if strict else "either"),
            ("blank", "  \n\n", "refuse" if strict else "either"),
            ("truncated-half", text[: len(text) // 2], cut),
            ("truncated-end", text[:-3], cut),
            ("random-bytes", garbage, "refuse"),
            ("latin-1", text.encode("utf-8") + "# caf\u00e9\n".encode("latin-1"), "refuse"),
            ("nul", text[:10] + "\x00" + text[10:], "refuse"),
        ):
            path = self.file(f"{label}-{name}", data)
            self.add(f"file:{label}", argv_of(path), expect, path, base=base if expect == "same" else None)
        huge = self.root / f"huge-{name}"
        with open(huge, "wb") as fh:  # 2 GB, sparse: no disk used, refused from its size
            fh.truncate(2 << 30)
        self.add("file:2GB-sparse", argv_of(str(huge)), "refuse", str(huge))
        folder = self.root / f"dir-{name}"
        folder.mkdir(exist_ok=True)
        self.add("file:directory", argv_of(str(folder)), "refuse", str(folder))
        missing = str(self.root / f"missing-{name}")
        self.add("file:missing", argv_of(missing), "refuse", missing)

    def json_mutations(self, name: str, doc: Any, paths: list[tuple[str, ...]], argv_of: Any) -> None:
        """``NUMBERS`` put at each of ``paths`` of ``doc`` (either accepted with valid output, or refused)."""
        for path in paths:
            for value in NUMBERS:
                mutated = json.loads(json.dumps(doc))
                put(mutated, path, value)
                file = self.file(name, json.dumps(mutated))
                self.add(f"field:{'.'.join(path[-2:])}={value!r}", argv_of(file), "either", file)

    def json_case(self, label: str, name: str, doc: Any, argv_of: Any, expect: str) -> None:
        file = self.file(name, json.dumps(doc))
        self.add(label, argv_of(file), expect, file)


def put(doc: Any, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[int(key)] if isinstance(doc, list) else doc[key]
    if isinstance(doc, list):
        doc[int(path[-1])] = value
    else:
        doc[path[-1]] = value


def renamed(doc: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``doc`` with broker ``old`` renamed ``new`` (kept in its place)."""
    out = json.loads(json.dumps(doc))
    out["brokers"] = {new if k == old else k: v for k, v in out["brokers"].items()}
    return out


def snapshot_cases(c: Corpus, argv_of: Any, doc: dict[str, Any]) -> None:
    """The snapshot mutations shared by shed, place and split-check."""
    base = c.add("base", argv_of(c.file("snapshot.json", json.dumps(doc))), "ok")
    c.text_mutations("snapshot.json", json.dumps(doc, indent=1) + "\n", argv_of, base)
    b1 = ("brokers", "broker-1:8080")
    c.json_mutations(
        "snapshot.json",
        doc,
        [("timestamp",), (*b1, "cpu", "limit"), (*b1, "msgRateIn"), (*b1, "lastStats", BUNDLES[0], "topics")],
        argv_of,
    )
    for label, ts in (("seconds", TS // 1000), ("year-3000", YEAR_3000), ("negative", -5)):
        c.json_case(f"timestamp:{label}", "snapshot.json", {**doc, "timestamp": ts}, argv_of, "refuse")
    for new in ("BROKER-1:8080", "http://Broker-1:8080/"):
        c.json_case(f"brokers:duplicate {new}", "snapshot.json", renamed(doc, "broker-2:8080", new), argv_of, "refuse")
    c.json_case("brokers:url", "snapshot.json", renamed(doc, "broker-3:8080", "broker-3:8081"), argv_of, "ok")
    c.json_case("json:array", "snapshot.json", [1, 2], argv_of, "refuse")
    c.json_case("json:no-brokers", "snapshot.json", {"timestamp": TS}, argv_of, "refuse")
    c.json_case("json:brokers-list", "snapshot.json", {"brokers": []}, argv_of, "refuse")


def build(command: str, root: Path) -> list[Case]:
    c = Corpus(command, root)
    BUILDERS[command](c)
    return c.cases


def _shed(c: Corpus) -> None:
    snapshot_cases(c, lambda p: ["shed", "--strategy", "ThresholdShedder", p], snapshot())
    conf = c.file("broker.conf", CONF)
    snap = c.file("snapshot.json", json.dumps(snapshot()))
    base = c.add("base-config", ["shed", "--strategy", "ThresholdShedder", "--config", conf, snap], "ok")
    c.text_mutations(
        "broker.conf",
        CONF,
        lambda p: ["shed", "--strategy", "ThresholdShedder", "--config", p, snap],
        base,
        strict=False,
    )
    reports = c.root / "reports"
    reports.mkdir()
    for name, data in snapshot()["brokers"].items():
        (reports / f"{name}.json").write_text(json.dumps({**data, "webServiceUrl": f"http://{name}"}))
    c.add("reports", ["shed", "--strategy", "ThresholdShedder", str(reports)], "ok")
    seconds = c.root / "reports-seconds"
    seconds.mkdir()
    for name, data in snapshot()["brokers"].items():
        (seconds / f"{name}.json").write_text(json.dumps({**data, "lastUpdate": TS // 1000}))
    c.add("reports:seconds", ["shed", "--strategy", "ThresholdShedder", str(seconds)], "refuse", str(seconds))
    twice = c.root / "reports-case"
    twice.mkdir()
    for i, name in enumerate(("broker-1:8080", "BROKER-1:8080")):
        data = {**snapshot()["brokers"]["broker-1:8080"], "lastUpdate": TS + i}
        (twice / f"r{i}.json").write_text(json.dumps({**data, "webServiceUrl": f"http://{name}"}))
    c.add("reports:one-broker-two-spellings", ["shed", "--strategy", "ThresholdShedder", str(twice)], "ok")


def _place(c: Corpus) -> None:
    doc = {**snapshot(), "bundle": f"{NS}/0x00000000_0x20000000"}
    snapshot_cases(c, lambda p: ["place", "--strategy", "LeastLongTermMessageRate", p], doc)
    cands = {**doc, "candidates": ["broker-2:8080", "Broker-2:8080"]}
    c.json_case(
        "candidates:duplicate",
        "place.json",
        cands,
        lambda p: ["place", "--strategy", "RoundRobinBrokerSelector", p],
        "refuse",
    )


def _split_check(c: Corpus) -> None:
    snapshot_cases(c, lambda p: ["split-check", p], snapshot())
    snap = c.file("snapshot.json", json.dumps(snapshot()))
    for value in ("t/ns=0", "t/ns=-1", "t/ns=4294967296", "t/ns=x", "ns=4", "t/ns=4,t/ns=5", "", "t/ns=4"):
        c.add(
            f"arg:--bundle-counts={value}", ["split-check", "--bundle-counts", value, snap], "either", "--bundle-counts"
        )
    c.cases[-1].expect = "ok"
    c.cases[-4].expect = c.cases[-3].expect = "refuse"


def _bundle(c: Corpus) -> None:
    conf = c.file("broker.conf", CONF + "defaultNumberOfNamespaceBundles=8\n")
    base = c.add("base-config", ["bundle", "--config", conf, "t1", "t2"], "ok")
    text = CONF + "defaultNumberOfNamespaceBundles=8\n"
    c.text_mutations("broker.conf", text, lambda p: ["bundle", "--config", p, "t1", "t2"], base, strict=False)
    bf = json.dumps(BUNDLES_FILE)
    base = c.add("base-bundles-file", ["bundle", "--bundles-file", c.file("bundles.json", bf), "t1"], "ok")
    c.text_mutations("bundles.json", bf, lambda p: ["bundle", "--bundles-file", p, "t1"], base)
    for value in [*ARG_NUMBERS, "2147483647", "3"]:
        c.add(f"arg:--bundles={value}", ["bundle", "--bundles", value, "t"], "either", "--bundles")
    big = ["--set", "loadBalancerNamespaceMaximumBundles=4294967296", "--bundles", "4294967296", "t"]
    c.add("arg:4294967296 bundles", ["bundle", *big], "refuse", "loadBalancerNamespaceMaximumBundles")
    big = ["--set", "loadBalancerNamespaceMaximumBundles=2147483647", "--bundles", "2147483647", "t"]
    c.add("arg:2^31-1 bundles", ["bundle", *big], "refuse", "--bundles")


def _split(c: Corpus) -> None:
    head = ["split", "--algorithm", "topic_count_equally_divide", "--bundle", f"{NS}/0x00000000_0xffffffff"]
    text = json.dumps(TOPICS)
    base = c.add("base", [*head, "--topics", c.file("topics.json", text)], "ok")
    c.text_mutations("topics.json", text, lambda p: [*head, "--topics", p], base)
    c.json_mutations("topics.json", TOPICS, [("0", "msgRateIn"), ("1", "name")], lambda p: [*head, "--topics", p])
    positions = ["split", "--algorithm", "specified_positions_divide", "--bundle", f"{NS}/0x00000000_0x40000000"]
    for value in ("0x10000000", "0", "-1", "0x40000000", "4294967296", "nan", ""):
        c.add(f"arg:--positions={value}", [*positions, "--positions", value], "either", "--positions")


def _throttle(c: Corpus) -> None:
    text = json.dumps(THROTTLE)
    base = c.add("base", ["throttle", c.file("throttle.json", text)], "ok")
    c.text_mutations("throttle.json", text, lambda p: ["throttle", p], base)
    topic = ("topics", "0")
    paths = [("periods",), (*topic, "messagesPerEntry"), (*topic, "entryBytes")]
    c.json_mutations("throttle.json", THROTTLE, paths, lambda p: ["throttle", p])


def _simulate(c: Corpus) -> None:
    head = ["simulate", "--no-progress", "--strategy", "ThresholdShedder"]
    base = c.add("base", [*head, "--cluster", c.file("cluster.toml", TOML)], "ok")
    c.text_mutations("cluster.toml", TOML, lambda p: [*head, "--cluster", p], base)
    for key, values in (
        (
            "cpu_cores = 4",
            [
                "cpu_cores = 0.000001",
                "cpu_cores = 0",
                "cpu_cores = -1",
                "cpu_cores = nan",
                "cpu_cores = inf",
                'cpu_cores = "8"',
            ],
        ),
        ("bundles = 4", ["bundles = 0", "bundles = -1", "bundles = 1000000000000"]),
        ("topics = 8", ["topics = 1000000000000", "topics = -3"]),
        ('at = "5m"', ['at = "20m"', 'at = "10m"', 'at = "-1m"']),
        ('name = "broker-2"', ['name = "BROKER-1"']),
        ('duration = "10m"', ['duration = "0s"', 'duration = "100000d"']),
    ):
        for value in values:
            path = c.file("cluster.toml", TOML.replace(key, value, 1))
            c.add(f"toml:{value}", [*head, "--cluster", path], "refuse", path)
    cluster = c.file("cluster.toml", TOML)
    for value in ARG_NUMBERS:
        c.add(f"arg:--seed={value}", [*head, "--cluster", cluster, "--seed", value], "either", "--seed")
    base = c.add("base-workload", [*head, "--cluster", cluster, "--workload", c.file("trace.csv", TRACE)], "ok")
    for label, data in (("bom", BOM + TRACE), ("crlf", TRACE.replace("\n", "\r\n"))):
        path = c.file(f"{label}-trace.csv", data)
        c.add(f"trace:{label}", [*head, "--cluster", cluster, "--workload", path], "same", path, base=base)
    seconds = "".join(  # the same times in seconds
        line if not line[:1].isdigit() else f"{int(line.split(',')[0]) // 1000}{line[line.index(',') :]}"
        for line in TRACE.splitlines(keepends=True)
    )
    path = c.file("seconds-trace.csv", seconds)
    c.add("trace:seconds", [*head, "--cluster", cluster, "--workload", path], "refuse", path)
    out = c.root / "out"
    c.add("out:new", [*head, "--cluster", cluster, "--out", str(out)], "ok")
    c.add("out:again --overwrite", [*head, "--cluster", cluster, "--out", str(out), "--overwrite"], "ok")
    c.add("out:''", [*head, "--cluster", cluster, "--out", ""], "refuse", "--out")
    a_file = c.file("notes.txt", "mine")
    c.add("out:a file", [*head, "--cluster", cluster, "--out", a_file, "--overwrite"], "refuse", a_file)
    foreign = c.root / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    c.add(
        "out:foreign --overwrite",
        [*head, "--cluster", cluster, "--out", str(foreign), "--overwrite"],
        "refuse",
        str(foreign),
    )


def _store(c: Corpus) -> None:
    for value in ("0", "-1", "70000", "nan", ""):
        c.add(f"arg:--port={value}", ["store", "start", "--port", value], "refuse", "--port")


def _broker(c: Corpus) -> None:
    head = ["broker", "--store", "zk://127.0.0.1:1/fuzz", "--web", "127.0.0.1:18080"]
    for opt in ("--cores", "--nic-mbps", "--time-scale"):
        for value in ("0", "-1", "nan", "inf", "0.000001", ""):
            c.add(f"arg:{opt}={value}", [*head, opt, value], "refuse", opt)
    for value in ("x", "127.0.0.1:0", "127.0.0.1:99999", ""):
        c.add(f"arg:--web={value}", [*head[:3], "--web", value], "refuse", "--web")
    for label, data in (
        ("random-bytes", bytes(range(256))),
        ("nul", "a=1\x00"),
        ("bad-value", "loadBalancerBrokerOverloadedThresholdPercentage=lots\n"),
    ):
        path = c.file(f"{label}-broker.conf", data)
        c.add(f"config:{label}", [*head, "--config", path], "refuse", path)


def _live(c: Corpus) -> None:
    for value in ("nan", "0", "-1", "inf", ""):
        c.add(f"arg:--time-scale={value}", ["live", "up", "--time-scale", value], "refuse", "--time-scale")
    for value in ("0", "-1", "nan"):
        c.add(f"arg:--brokers={value}", ["live", "up", "--brokers", value], "refuse", "--brokers")
    c.add("arg:--out ''", ["live", "up", "--out", ""], "refuse", "--out")
    for label, data in (
        ("empty", ""),
        ("random-bytes", bytes(range(256))),
        ("cpu_cores", TOML.replace("cpu_cores = 4", "cpu_cores = 0.000001")),
    ):
        path = c.file(f"{label}-cluster.toml", data)
        c.add(f"cluster:{label}", ["live", "up", "--cluster", path], "refuse", path)
    for url in ("foo://x", "zk://", "etcd://:2379/x", ""):
        c.add(f"status:--store={url}", ["live", "status", "--store", url], "refuse", "--store")
    c.add("advise:--seed=-1", ["live", "advise", "--store", "zk://127.0.0.1:1/x", "--seed", "-1"], "refuse", "--seed")
    for sub in ("status", "advise"):  # the store's answer time (a store never reached: refused before it is asked)
        for value in ("0", "-1", "nan", "inf", "3601", ""):
            argv = ["live", sub, "--store", "zk://127.0.0.1:1/x", "--timeout", value]
            c.add(f"{sub}:--timeout={value}", argv, "refuse", "--timeout")


def _pipeline(c: Corpus) -> None:
    base = c.add("base", ["pipeline", "--input", c.file("trace.csv", TRACE)], "ok", spark=True)
    for label, data in (("bom", BOM + TRACE), ("crlf", TRACE.replace("\n", "\r\n"))):
        path = c.file(f"{label}-trace.csv", data)
        c.add(f"trace:{label}", ["pipeline", "--input", path], "ok", path, spark=True, extra={"like": base})
    trace = c.file("trace.csv", TRACE)
    for value in ("0", "-1", "4294967296", "nan"):
        c.add(f"arg:--bundles={value}", ["pipeline", "--input", trace, "--bundles", value], "refuse", "--bundles")
    c.add("arg:--out ''", ["pipeline", "--input", trace, "--out", ""], "refuse", "--out")
    for label, value in (("seconds", str(TS // 1000)), ("year-3000", str(YEAR_3000)), ("word", "soon")):
        c.add(f"arg:--timestamp={label}", ["pipeline", "--input", trace, "--timestamp", value], "refuse", "--timestamp")
    conf = c.file("nul-broker.conf", "a=1\x00")
    c.add("config:nul", ["pipeline", "--input", trace, "--config", conf], "refuse", conf)


def _sweep(c: Corpus) -> None:
    cluster = c.file("cluster.toml", TOML)
    head = ["sweep", "--cluster", cluster, "--strategy", "ThresholdShedder"]
    for value in ("-1", "nan", ""):
        c.add(f"arg:--seed={value}", [*head, "--seed", value], "refuse", "--seed")
    c.add("arg:--out ''", [*head, "--out", ""], "refuse", "--out")
    folder = c.root / "rows.parquet"
    folder.mkdir()
    c.add("out:a folder", [*head, "--out", str(folder), "--overwrite"], "refuse", str(folder))
    foreign = c.file("rows.parquet", b"PAR1 not ours PAR1")
    c.add("out:foreign --overwrite", [*head, "--out", foreign, "--overwrite"], "refuse", foreign)
    path = c.file("cluster.toml", TOML.replace("cpu_cores = 4", "cpu_cores = 0.000001"))
    c.add("toml:cpu_cores", ["sweep", "--cluster", path], "refuse", path)


BUILDERS = {
    "bundle": _bundle,
    "split": _split,
    "split-check": _split_check,
    "place": _place,
    "shed": _shed,
    "pipeline": _pipeline,
    "throttle": _throttle,
    "simulate": _simulate,
    "sweep": _sweep,
    "store": _store,
    "broker": _broker,
    "live": _live,
}
