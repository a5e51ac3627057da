"""``pykbroker cluster`` (make cluster): ZooKeeper and brokers start, say where they listen, and Ctrl-C stops all."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys

import pytest

from pykbroker.testing import free_port, wait_for_api_versions

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")


def two_free_ports() -> int:
    """A port that was free a moment ago, and so was the next one (broker 2 takes it)."""
    while True:
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue


def test_cluster_runs_until_ctrl_c(tmp_path):
    first, zk_port = two_free_ports(), free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pykbroker.cli", "cluster", "--brokers", "2", "--data",
                             str(tmp_path / "cluster"), "--first-port", str(first), "--zookeeper-port", str(zk_port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        while not lines or not lines[-1].startswith("bootstrap.servers="):
            line = proc.stdout.readline()
            assert line, f"cluster exited: {lines}"
            lines.append(line.strip())
        assert lines[-4].startswith(f"zookeeper listening on 127.0.0.1:{zk_port}")
        assert lines[-2].startswith(f"broker 2 listening on 127.0.0.1:{first + 1}")
        for port in (first, first + 1):
            wait_for_api_versions("127.0.0.1", port, 10)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        with pytest.raises(TimeoutError):
            wait_for_api_versions("127.0.0.1", first, 0.5)
        assert (tmp_path / "cluster" / "broker-1.log").exists() and (tmp_path / "cluster" / "zookeeper").is_dir()
    finally:
        if proc.poll() is None:  # a failed assertion: let it stop its ZooKeeper and brokers, as Ctrl-C does
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
