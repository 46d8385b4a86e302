"""A command loads only what it needs (issue 29 item 3): a broker process costs what it must.

Running one command imports only the module that registers it (``cli.main.COMMANDS``), so ``bundlewise broker``
does not load Arrow or the simulator for ``live up``'s sake; a broker marks pandas as absent, which pyarrow
(loaded only to read a ``--workload`` trace) would otherwise import to ask whether its inputs are DataFrames.
Each check runs in a fresh interpreter: this test process has long imported everything.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bundlewise.cli.main import COMMANDS, build_parser, main

HEAVY = ("pyarrow", "pandas", "pyspark", "matplotlib")


def _fresh(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_the_full_parser_registers_exactly_the_commands_of_the_table_in_its_order() -> None:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)


def test_each_command_alone_gets_the_same_parser_as_in_the_full_one() -> None:
    full = build_parser()
    for name in COMMANDS:
        alone = build_parser(name)
        with_full = next(a for a in full._actions if hasattr(a, "choices") and a.choices and name in a.choices)
        with_alone = next(a for a in alone._actions if hasattr(a, "choices") and a.choices and name in a.choices)
        assert with_alone.choices[name].format_help() == with_full.choices[name].format_help(), name


def test_the_broker_command_starts_without_arrow_pandas_spark_or_matplotlib() -> None:
    code = (
        "import sys, json\n"
        "from bundlewise.cli.main import build_parser\n"
        "build_parser('broker').parse_args(['broker', '--store', 'etcd://127.0.0.1:1/p', '--web', '127.0.0.1:1'])\n"
        "import bundlewise.live.broker.service\n"
        f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))\n"
    )
    assert _fresh(code) == dict.fromkeys(HEAVY, False)


def test_a_broker_reads_a_parquet_trace_with_arrow_but_never_loads_pandas(tmp_path: Path) -> None:
    trace = tmp_path / "trace.parquet"
    pq.write_table(
        pa.table(
            {
                "timestamp": [0, 0, 60_000, 60_000],
                "topic": ["persistent://t/ns/a", "persistent://t/ns/b"] * 2,
                "msgRateIn": [10.0, 20.0, 30.0, 40.0],
                "msgRateOut": [1.0, 2.0, 3.0, 4.0],
                "msgThroughputIn": [100.0, 200.0, 300.0, 400.0],
                "msgThroughputOut": [5.0, 6.0, 7.0, 8.0],
            }
        ),
        trace,
    )
    code = (
        "import sys, json\n"
        "from bundlewise.cli.broker import start_process, read_trace\n"
        "start_process()\n"
        f"w = read_trace({str(trace)!r})\n"
        "r = w.rates(60_000)\n"
        "print(json.dumps({'pandas': 'pandas' in sys.modules, 'arrow': 'pyarrow' in sys.modules,\n"
        "  'names': list(w.topics.names), 'in': [float(x) for x in r[0]], 'tput_out': [float(x) for x in r[3]]}))\n"
    )
    got = _fresh(code)
    assert got == {
        "pandas": False,
        "arrow": True,
        "names": ["persistent://t/ns/a", "persistent://t/ns/b"],
        "in": [30.0, 40.0],
        "tput_out": [7.0, 8.0],
    }


def test_keeping_pandas_out_leaves_a_process_that_already_loaded_it_alone() -> None:
    code = (
        "import sys, json, pandas\n"
        "from bundlewise.cli.broker import start_process\n"
        "start_process()\n"
        "import pandas.api\n"
        "print(json.dumps({'finders': sum(type(f).__name__ == '_Absent' for f in sys.meta_path)}))\n"
    )
    assert _fresh(code) == {"finders": 0}


def test_a_broker_command_run_in_process_leaves_the_process_as_it_was() -> None:
    before = list(sys.meta_path)
    assert main(["broker", "--store", "zk://127.0.0.1:1/x", "--web", "nowhere"]) == 2
    assert sys.meta_path == before


def test_the_process_entry_prepares_a_broker_process() -> None:
    code = (
        "import sys, json\n"
        "from bundlewise.cli.main import main\n"
        "rc = main(['broker', '--store', 'zk://127.0.0.1:1/x', '--web', 'nowhere'], process=True)\n"
        "print(json.dumps({'rc': rc, 'finders': sum(type(f).__name__ == '_Absent' for f in sys.meta_path)}))\n"
    )
    assert _fresh(code) == {"rc": 2, "finders": 1}
