"""``bundlewise broker``: run one broker of the live load manager, or several in one process (docs/live/).

``bundlewise broker --store URL --web HOST:PORT [--broker-service-port PORT] [--config broker.conf] [--set K=V]
[--cores N] [--nic-mbps M] [--workload TRACE] [--time-scale K] [--time-origin MS] [--time-start-file FILE]
[--decisions FILE] [--load-data-log FILE]``: the broker's id is ``HOST:PORT``; it registers in the store, reports its
load, runs for leader, owns bundles and answers Pulsar's lookup and admin HTTP paths on ``--web``
until SIGTERM or Ctrl-C (a graceful stop: bundles unloaded, nodes released).  The workload trace
(Parquet, CSV or JSON Lines, or the pipeline's outputs; docs/formats.md) is read and checked by the
simulator's reader and rules, without a JVM (``cli.traces.load_local_workload``).  When the broker is
ready it prints ``{"brokerId", "webServiceUrl", "pid"}`` as one JSON line.

``--web`` given k times runs k brokers in this process and event loop (``live.broker.service.run_brokers``), each
with its own store session, ports and tasks, each printing its own ready line; ``--broker-service-port`` is then
given once per ``--web`` and the per-broker options once or k times (``cli.broker_slots``).  SIGTERM stops them
all gracefully; one that fails to start stops the others.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bundlewise.cli.broker_slots import broker_slots
from bundlewise.cli.common import TIME_SCALE, add_config_options, check_range, config_from_args, needs_extra
from bundlewise.traffic.cost import BROKER_BOUNDS

if TYPE_CHECKING:
    from bundlewise.traffic.trace import TraceWorkload


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "broker",
        help="run one broker of the live load manager on a metadata store (or several in one process)",
        description="Run one broker: registration, load reports, leader election, bundle ownership and Pulsar's "
        "lookup/admin HTTP surface (with /openapi.json and /metrics) on --web. --web given several times (each with "
        "its --broker-service-port) runs that many brokers in this process, each printing its ready line.",
    )
    p.add_argument("--store", required=True, metavar="URL", help="zk://HOST:PORT/CHROOT or etcd://HOST:PORT/PREFIX")
    p.add_argument(
        "--web",
        required=True,
        action="append",
        metavar="HOST:PORT",
        help="where to serve HTTP; also the broker id (repeat it to run several brokers in this process)",
    )
    p.add_argument(
        "--broker-service-port",
        type=int,
        action="append",
        metavar="PORT",
        help="the binary protocol's port (brokerServicePort); once per --web when there are several",
    )
    add_config_options(p)
    p.add_argument(
        "--cores",
        type=float,
        action="append",
        metavar="N",
        help="CPU cores of the emulated broker (8); once for all brokers or once per --web",
    )
    p.add_argument(
        "--nic-mbps",
        type=float,
        action="append",
        metavar="M",
        help="NIC speed in Mbit/s (10000); once for all brokers or once per --web",
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
    p.add_argument(
        "--decisions",
        action="append",
        metavar="FILE",
        help="append the leader's decisions here (JSON Lines); once for all brokers or once per --web",
    )
    p.add_argument(
        "--load-data-log",
        action="append",
        metavar="FILE",
        help="append each shedding cycle's LoadData here as a modular snapshot (JSON Lines; "
        "bundlewise shed replays it); once for all brokers or once per --web",
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
    slots = broker_slots(
        args.web, args.broker_service_port, args.cores, args.nic_mbps, args.decisions, args.load_data_log
    )
    check_range(args.time_scale, "--time-scale", *TIME_SCALE)
    for slot in slots:
        check_range(slot.cores, "--cores", *BROKER_BOUNDS["cpu_cores"])
        check_range(slot.nic_mbps, "--nic-mbps", *BROKER_BOUNDS["nic_mbps"])
    with needs_extra("live", "bundlewise broker"):
        from bundlewise.live.broker.logcontext import BrokerField
        from bundlewise.live.broker.service import BrokerOptions, run_brokers
        from bundlewise.live.store.url import StoreUrl

        StoreUrl.parse(args.store)
        workload = read_trace(args.workload) if args.workload else None  # read once, played by every broker
        options = [
            BrokerOptions(
                store_url=args.store,
                host=slot.host,
                port=slot.port,
                config=config
                if slot.broker_service_port is None
                else config.with_values({"brokerServicePort": slot.broker_service_port}),
                cores=slot.cores,
                nic_mbps=slot.nic_mbps,
                workload=workload,
                time_scale=args.time_scale,
                time_origin_ms=args.time_origin,
                time_start_file=Path(args.time_start_file) if args.time_start_file else None,
                decisions=Path(slot.decisions) if slot.decisions else None,
                load_data_log=Path(slot.load_data_log) if slot.load_data_log else None,
                process_share=len(slots),
            )
            for slot in slots
        ]
        # a broker's log is its stderr (the harness keeps it), not the commands' log file; each line names its
        # broker: the one --web, or with several the broker whose work logged it (live.broker.logcontext)
        name = slots[0].web if len(slots) == 1 else "%(broker)s"
        logging.basicConfig(
            stream=sys.stderr,
            level=args.log_level,
            format=f"%(asctime)s {name} %(levelname)s %(name)s: %(message)s",
            force=True,
        )
        for handler in logging.getLogger().handlers:
            handler.addFilter(BrokerField())
        for noisy in ("httpx", "httpcore", "kazoo"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        return asyncio.run(run_brokers(options))
