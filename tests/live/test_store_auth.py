"""Store access control: ZooKeeper digest ACLs on the nodes a client creates, etcd user/password."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from bundlewise.live.harness.servers import EtcdServer, ZooKeeperServer
from bundlewise.live.store import AuthError, connect
from conftest import SESSION_TIMEOUT, run


def test_zookeeper_nodes_created_with_credentials_are_read_only_for_others(zk_server: ZooKeeperServer) -> None:
    root = f"/acl-{uuid.uuid4().hex[:12]}"
    host = f"127.0.0.1:{zk_server.port}"

    async def body() -> None:
        async with await connect(f"zk://alice:s3cret@{host}{root}", session_timeout=SESSION_TIMEOUT) as alice:
            await alice.put("/guarded/node", b"v", -1)
            async with await connect(f"zk://{host}{root}", session_timeout=SESSION_TIMEOUT) as anonymous:
                got = await anonymous.get("/guarded/node")
                assert got is not None and got.value == b"v"  # world may read
                with pytest.raises(AuthError):
                    await anonymous.put("/guarded/node", b"w", 0)
                with pytest.raises(AuthError):
                    await anonymous.delete("/guarded/node")
                with pytest.raises(AuthError):
                    await anonymous.put("/guarded/other", b"w", -1)
            async with await connect(f"zk://alice:wrong@{host}{root}", session_timeout=SESSION_TIMEOUT) as impostor:
                with pytest.raises(AuthError):
                    await impostor.put("/guarded/node", b"w", 0)
            assert (await alice.put("/guarded/node", b"w", 0)).version == 1
            await alice.delete("/guarded/node")

    run(body())


@pytest.fixture(scope="module")
def etcd_with_auth() -> Iterator[EtcdServer]:
    with EtcdServer(auth=("root", "s3cret")) as server:
        yield server


def test_etcd_with_auth_refuses_anonymous_and_wrong_password_clients(etcd_with_auth: EtcdServer) -> None:
    host = f"127.0.0.1:{etcd_with_auth.port}"

    async def body() -> None:
        with pytest.raises(AuthError):
            await connect(f"etcd://{host}/p", session_timeout=SESSION_TIMEOUT)
        with pytest.raises(AuthError):
            await connect(f"etcd://root:wrong@{host}/p", session_timeout=SESSION_TIMEOUT)
        async with await connect(
            f"etcd://{host}/p", session_timeout=SESSION_TIMEOUT, username="root", password="s3cret"
        ) as ok:
            await ok.put("/n", b"1", -1, ephemeral=True)
            got = await ok.get("/n")
            assert got is not None and got.value == b"1" and got.stat.created_by_self
        assert etcd_with_auth.url == f"etcd://root:s3cret@{host}"

    run(body())
