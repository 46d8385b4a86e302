"""The trace digest ``live up`` gives its brokers (``TraceWorkload.save``/``load``): the trace as read, loaded
without Arrow, playing the same step function as the trace it was written from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from bundlewise.model.errors import InputError
from bundlewise.traffic.trace import TraceWorkload

ROWS = {
    "timestamp": [61_000, 1000, 1000, 1000, 61_000, 121_000],
    "topic": ["a", "persistent://x/y/b", "a", None, None, "a"],
    "bundle": [None, None, None, "x/y/0x80000000_0xffffffff", "x/y/0x80000000_0xffffffff", None],
    "topics": [None, None, None, 40, 7, None],
    "msgRateIn": [30.0, 20.0, 10.0, 400.0, 70.0, 1.0],
    "msgRateOut": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    "msgThroughputIn": [300.0, 200.0, 100.0, 4000.0, 700.0, 10.0],
    "msgThroughputOut": [0.0, 0.0, 0.0, 1.0, 2.0, 3.0],
    "producerCount": [1, 2, 3, 4, 5, 6],
    "consumerCount": [3, 0, None, 1, 2, 0],
}


def played(trace: TraceWorkload) -> list[object]:
    return [
        ([r.tolist() for r in trace.rates(now)], [c.tolist() for c in trace.counts(now)])
        for now in (0, 59_999, 60_000, 120_000, 10**9)
    ]


@pytest.mark.parametrize("recorded", [True, False], ids=["with-a-recorded-bundle", "topics-only"])
def test_a_digest_plays_the_trace_it_was_written_from(tmp_path: Path, recorded: bool) -> None:
    rows = ROWS if recorded else {k: [v for v, t in zip(vs, ROWS["topic"], strict=True) if t] for k, vs in ROWS.items()}
    trace = TraceWorkload(pa.table(rows), "t")
    assert (trace.topics.hashes is not None) is recorded
    trace.save(tmp_path / "w.npz")
    loaded = TraceWorkload.load(tmp_path / "w.npz")
    assert loaded.topics.names == trace.topics.names
    assert loaded.namespaces == trace.namespaces and set(trace.namespaces) == {"public/default", "x/y"}
    assert loaded.topics.namespace.tolist() == trace.topics.namespace.tolist()
    if recorded:
        assert trace.topics.hashes is not None and loaded.topics.hashes is not None
        assert loaded.topics.hashes.tolist() == trace.topics.hashes.tolist()
        assert trace.counts(60_000)[0].tolist() == [7, 1, 1]  # the bundle (sorted first) holds its 7 topics
    else:
        assert loaded.topics.hashes is None
    assert played(loaded) == played(trace)


def test_a_file_that_is_no_digest_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "w.npz"
    bad.write_text("timestamp,topic\n")
    with pytest.raises(InputError, match=r"w\.npz: expected a trace digest \(bundlewise-trace-digest-1\)"):
        TraceWorkload.load(bad)
    with bad.open("wb") as f:  # the marker, but not the arrays
        np.savez(f, format=np.array("bundlewise-trace-digest-1"))
    with pytest.raises(InputError, match=r"w\.npz: expected a trace digest .*'t0'"):
        TraceWorkload.load(bad)


def test_a_broker_loads_a_digest_without_arrow(tmp_path: Path) -> None:
    TraceWorkload(pa.table(ROWS), "t").save(tmp_path / "w.npz")
    code = (
        "import sys\n"
        "from bundlewise.cli.broker import read_trace, start_process\n"
        "start_process()\n"
        f"trace = read_trace({str(tmp_path / 'w.npz')!r})\n"
        "print(len(trace.topics.names), sorted(m for m in ('pyarrow', 'pandas', 'jwt') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[0] == "3 []"
