"""ZooKeeperProcess: a real standalone ZooKeeper that starts, serves kazoo, survives restarts and dies on demand;
a first start whose picked port another socket took moves to another, a given port taken fails the start, and a
restart whose port another ZooKeeper took while this one was down fails instead of serving the other's sessions."""

from __future__ import annotations

import shutil
import socket
import threading

import pytest
from kazoo.client import KazooClient, KazooState

from pykbroker.testing import ZooKeeperProcess, four_letter_word
from tests.pykbroker.port_helpers import foreign_server

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")


def test_serves_kazoo_and_keeps_znodes_across_a_restart(tmp_path):
    with ZooKeeperProcess(tmp_path / "zk") as zk:
        assert four_letter_word("127.0.0.1", zk.port, "ruok") == "imok"
        client = KazooClient(hosts=zk.connect, timeout=30)  # a session outlives a slow restart on a busy machine
        client.start(timeout=10)
        try:
            client.create("/brokers/ids", b"", makepath=True)
            zk.restart(hard=True)  # same port, same data dir
            client.ensure_path("/x")  # kazoo reconnects by itself
            assert client.exists("/brokers/ids") is not None
        finally:
            client.stop()
            client.close()
    assert not zk.alive


def test_kill_drops_client_connections(tmp_path):
    zk = ZooKeeperProcess(tmp_path / "zk").start()
    client = KazooClient(hosts=zk.connect, timeout=10, connection_retry={"max_tries": -1})
    client.start(timeout=10)
    suspended = threading.Event()
    client.add_listener(lambda state: state == KazooState.SUSPENDED and suspended.set())
    try:
        zk.kill()
        assert not zk.alive
        assert suspended.wait(10)
    finally:
        client.stop()
        client.close()
        zk.close()


def test_a_start_that_cannot_serve_raises_and_leaves_no_process(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        zk = ZooKeeperProcess(tmp_path / "zk", port=taken.getsockname()[1])
        with pytest.raises(RuntimeError, match=f"127.0.0.1:{taken.getsockname()[1]} is already in use"):
            zk.start(timeout=15)
    assert zk.proc is None



def test_a_first_start_whose_free_port_was_taken_meanwhile_serves_on_another(tmp_path):
    zk = ZooKeeperProcess(tmp_path / "zk")
    taken = zk.port
    with socket.socket() as holder:  # another process got the picked port before ZooKeeper bound it
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server (free_port() reserves it)
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        with zk:
            assert zk.port != taken
            assert four_letter_word("127.0.0.1", zk.port, "ruok") == "imok"
            assert "Address already in use" in zk.log_path.read_text()


def test_a_restart_whose_port_another_zookeeper_took_fails_instead_of_using_it(tmp_path):
    """A restart keeps the port clients know. Another ZooKeeper that bound it meanwhile answers "Mode: standalone"
    too, but knows none of this one's sessions: a client reconnecting there is told its session expired and its
    ephemeral znodes are gone (how the session-survives-a-restart test of the ZooKeeper client failed once in a
    run beside other sessions' tests). The start must fail, not report the other server as this one."""
    def other_zookeeper(word: bytes) -> bytes:
        if word == b"conf":
            return f"clientPort=1\ndataDir={tmp_path / 'other' / 'version-2'}\n".encode()
        return b"Zookeeper version: 3.8.4\nMode: standalone\nNode count: 5\n"

    zk = ZooKeeperProcess(tmp_path / "zk").start()
    try:
        zk.kill()
        with foreign_server(zk.port, other_zookeeper):
            with pytest.raises(RuntimeError, match=f"127.0.0.1:{zk.port} is already in use"):
                zk.start(timeout=30)
        assert not zk.alive
    finally:
        zk.close()
