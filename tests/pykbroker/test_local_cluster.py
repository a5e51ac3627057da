"""``pykbroker local-cluster`` outlives a broker: a kill -9 is reported, the rest keeps serving, ``start N`` brings
the broker back, and Ctrl-C (SIGTERM) stops everything."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pykbroker.testing import RawClient, free_port, reserve_port
from wire.messages import MetadataRequest

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")


def two_free_ports() -> int:
    """A base port whose next port is free too, both reserved (see free_port)."""
    for _ in range(50):
        base = free_port()
        try:
            reserve_port(base + 1)
            return base
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


class _PortTaken(Exception):
    """The cluster exited at its start because another socket took a port picked for it."""


def test_a_killed_broker_is_reported_and_started_again_while_the_rest_keeps_running(tmp_path):
    for attempt in range(3):  # ports picked free may be taken before the brokers bind them: pick others
        try:
            _killed_broker_scenario(tmp_path / f"cluster-{attempt}")
            return
        except _PortTaken:
            continue
    raise AssertionError("every port pick was taken before the cluster bound it")


def _killed_broker_scenario(data: Path) -> None:
    base = consoles = two_free_ports()
    while abs(consoles - base) < 2:
        consoles = two_free_ports()
    proc = subprocess.Popen([sys.executable, "-m", "pykbroker.cli", "local-cluster", "--brokers", "2",
                             "--base-port", str(base), "--console-port", str(consoles), "--data", str(data)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()
    seen: list[str] = []

    def wait_for_line(pattern: str, timeout: float = 60.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                if not reader.is_alive() and lines.empty():
                    break  # its output ended: no more lines will come
                continue
            seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        output = "".join(seen)
        if proc.poll() is not None and ("is already in use" in output or "Address already in use" in output):
            raise _PortTaken(output)
        raise AssertionError(f"no line matching {pattern!r}; output so far:\n{output}")

    def send(command: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(command + "\n")
        proc.stdin.flush()

    try:
        pid = int(wait_for_line(rf"broker 2 listening on .* \(pid (\d+),.* console http://127.0.0.1:{consoles + 1}/").group(1))
        wait_for_line("cluster ready")
        os.kill(pid, signal.SIGKILL)
        wait_for_line(r"broker 2 exited with code -9 .*type 'start 2'")
        assert proc.poll() is None
        with RawClient(f"127.0.0.1:{base}") as c:  # broker 1 still serves
            assert c.request(MetadataRequest(topics=[]), 9).brokers is not None
        send("start 2")
        wait_for_line(r"broker 2 listening on ")
        send("status")
        wait_for_line(r"broker 2 on .*: running")
        send("kill 1")
        wait_for_line(r"broker 1 exited with code -9")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        wait_for_line("stopping the cluster", timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
