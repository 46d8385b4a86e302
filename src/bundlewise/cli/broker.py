"""``bundlewise broker``: run one broker of the live load manager (docs/live/).

``bundlewise broker --store URL --web HOST:PORT [--config broker.conf] [--set K=V] [--cores N]
[--nic-mbps M] [--workload TRACE] [--time-scale K] [--time-origin MS] [--time-start-file FILE] [--decisions FILE]
[--load-data-log FILE]``: the broker's id is ``HOST:PORT``; it registers in the store, reports its
load, runs for leader, owns bundles and answers Pulsar's lookup and admin HTTP paths on ``--web``
until SIGTERM or Ctrl-C (a graceful stop: bundles unloaded, nodes released).  The workload trace
(Parquet, CSV or JSON Lines, or the pipeline's outputs; docs/formats.md) is read and checked by the
simulator's reader and rules, without a JVM (``cli.traces.load_local_workload``).  When the broker is
ready it prints ``{"brokerId", "webServiceUrl", "pid"}`` as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bundlewise.cli.common import TIME_SCALE, add_config_options, check_range, config_from_args, needs_extra
from bundlewise.model.errors import InputError
from bundlewise.traffic.cost import BROKER_BOUNDS

if TYPE_CHECKING:
    from bundlewise.traffic.trace import TraceWorkload

_HOSTPORT = re.compile(r"^([A-Za-z0-9._-]+):([0-9]{1,5})$")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "broker",
        help="run one broker of the live load manager on a metadata store",
        description="Run one broker: registration, load reports, leader election, bundle ownership and Pulsar's "
        "lookup/admin HTTP surface (with /openapi.json and /metrics) on --web.",
    )
    p.add_argument("--store", required=True, metavar="URL", help="zk://HOST:PORT/CHROOT or etcd://HOST:PORT/PREFIX")
    p.add_argument("--web", required=True, metavar="HOST:PORT", help="where to serve HTTP; also the broker id")
    add_config_options(p)
    p.add_argument(
        "--cores",
        type=float,
        default=8.0,
        metavar="N",
        help="CPU cores of the emulated broker (8)",
    )
    p.add_argument(
        "--nic-mbps",
        type=float,
        default=10000.0,
        metavar="M",
        help="NIC speed in Mbit/s (10000)",
    )
    p.add_argument(
        "--workload",
        metavar="TRACE",
        help="topic-samples trace: Parquet, CSV or JSON Lines (or the .npz digest live up writes)",
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="K",
        help="run balancer intervals and the workload K× faster",
    )
    p.add_argument(
        "--time-origin",
        type=int,
        metavar="MS",
        help="epoch ms where Pulsar time and the trace start (give every broker of a cluster the same; default: now)",
    )
    p.add_argument(
        "--time-start-file",
        metavar="FILE",
        help="hold Pulsar time at the origin until FILE holds the wall-clock epoch ms where it starts running "
        "(a harness starting a cluster before its scenario; default: it runs from the origin)",
    )
    p.add_argument("--decisions", metavar="FILE", help="append the leader's decisions here (JSON Lines)")
    p.add_argument(
        "--load-data-log",
        metavar="FILE",
        help="append each shedding cycle's LoadData here as a modular snapshot (JSON Lines; "
        "bundlewise shed replays it)",
    )
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.set_defaults(func=run)


def read_trace(path: str) -> TraceWorkload:
    """The trace at ``path``, read and checked as ``simulate`` reads a local trace (the trace rules, timestamps
    in ms, a byte-order mark removed; rejected rows summed up on stderr); a ``.npz`` file is a trace digest
    ``live up`` wrote (``TraceWorkload.save``), loaded without Arrow."""
    if path.endswith(".npz"):
        from bundlewise.traffic.trace import TraceWorkload

        return TraceWorkload.load(Path(path))
    from bundlewise.cli.traces import load_local_workload  # Arrow: only when there is a trace to read

    workload = load_local_workload(path)
    workload.report(path)
    trace = workload.trace
    del workload
    release_arrow_memory()
    return trace


def release_arrow_memory() -> None:
    """Give back to the OS what Arrow's allocator keeps after a read (the trace's tables are gone once its
    arrays are built; mimalloc would otherwise hold ~80 MB of freed pages for every broker)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


# Libraries a broker never uses that others would load for it: pyarrow imports pandas (~45 MB resident) the
# first time it is handed a Python value, only to ask whether it is a DataFrame; httpx imports its command-line
# client's pygments and rich when they are installed.  When the import fails each takes the package as not
# installed and goes on.
NOT_IN_A_BROKER = ("pandas", "pygments", "rich")


class _Absent:
    """An import finder under which the ``NOT_IN_A_BROKER`` packages are not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] in NOT_IN_A_BROKER:
            raise ModuleNotFoundError(f"not loaded in a broker process: {name}", name=name)
        return None


def start_process() -> None:
    """Called first in a process started to run ``bundlewise broker`` (``cli.main.run``), never in one that runs
    commands in-process (tests): make the ``NOT_IN_A_BROKER`` packages unimportable, unless loaded already."""
    if not any(isinstance(f, _Absent) for f in sys.meta_path) and not any(n in sys.modules for n in NOT_IN_A_BROKER):
        sys.meta_path.insert(0, _Absent())


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    m = _HOSTPORT.match(args.web)
    if m is None or not 0 < int(m.group(2)) < 65536:
        raise InputError(f"expected HOST:PORT, got {args.web!r}", field="--web")
    check_range(args.time_scale, "--time-scale", *TIME_SCALE)
    check_range(args.cores, "--cores", *BROKER_BOUNDS["cpu_cores"])
    check_range(args.nic_mbps, "--nic-mbps", *BROKER_BOUNDS["nic_mbps"])
    with needs_extra("live", "bundlewise broker"):
        from bundlewise.live.broker.service import BrokerOptions, run_broker
        from bundlewise.live.store.url import StoreUrl

        StoreUrl.parse(args.store)
        options = BrokerOptions(
            store_url=args.store,
            host=m.group(1),
            port=int(m.group(2)),
            config=config,
            cores=args.cores,
            nic_mbps=args.nic_mbps,
            workload=read_trace(args.workload) if args.workload else None,
            time_scale=args.time_scale,
            time_origin_ms=args.time_origin,
            time_start_file=Path(args.time_start_file) if args.time_start_file else None,
            decisions=Path(args.decisions) if args.decisions else None,
            load_data_log=Path(args.load_data_log) if args.load_data_log else None,
        )
        logging.basicConfig(
            stream=sys.stderr,
            level=args.log_level,
            format=f"%(asctime)s {args.web} %(levelname)s %(name)s: %(message)s",
            force=True,  # a broker's log is its stderr (the harness keeps it), not the commands' log file
        )
        for noisy in ("httpx", "httpcore", "kazoo"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        return asyncio.run(run_broker(options))
