"""The command line as users run it: errors name the property, signals stop the broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import ApiVersionsRequest


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pykbroker.cli", *args], capture_output=True, text=True,
                          timeout=30)


def test_unknown_property_fails_at_start_naming_it(tmp_path):
    result = run_cli("--override", "log.dirs=" + str(tmp_path), "--override", "no.such.property=1")
    assert result.returncode == 2
    assert "no.such.property" in result.stderr


def test_invalid_value_fails_at_start(tmp_path):
    result = run_cli("--override", "log.dirs=" + str(tmp_path), "--override", "num.partitions=-1")
    assert result.returncode == 2
    assert "num.partitions" in result.stderr


def test_missing_properties_file(tmp_path):
    result = run_cli(str(tmp_path / "missing.properties"))
    assert result.returncode == 2
    assert "cannot read properties file" in result.stderr


def test_help_config_lists_properties():
    result = run_cli("--help-config")
    assert result.returncode == 0
    assert "auto.create.topics.enable" in result.stdout


def test_sigterm_stops_gracefully_and_data_dir_is_reused(tmp_path):
    broker = BrokerProcess(tmp_path / "b").start()
    try:
        with RawClient(broker.bootstrap) as c:
            assert c.request(ApiVersionsRequest(), 0).error_code == 0
        first_log = broker.log()
        assert broker.stop() == 0
        assert "pykbroker stopped" in broker.log()
        broker.start()
        cluster_ids = [line.split("cluster.id=")[1].split()[0] for line in broker.log().splitlines()
                       if "cluster.id=" in line]
        assert len(set(cluster_ids)) == 1 and len(cluster_ids) == 2, first_log
    finally:
        broker.close()


def test_second_signal_forces_exit(tmp_path):
    broker = BrokerProcess(tmp_path / "b").start()
    try:
        # A connection with a request in flight would delay a graceful stop; the second signal must not wait.
        broker.proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        if broker.proc.poll() is None:
            broker.proc.send_signal(signal.SIGINT)
        # 0: the graceful stop won the race; 1: forced exit; -SIGINT: the signal landed after the loop closed.
        assert broker.proc.wait(10) in (0, 1, -signal.SIGINT)
    finally:
        broker.close()


def ephemeral(*args: str) -> tuple[subprocess.Popen, str]:
    """A ``pykbroker --ephemeral`` process and the bootstrap address of its ready line."""
    from pykbroker.cli import READY_PREFIX

    proc = subprocess.Popen([sys.executable, "-m", "pykbroker.cli", "--ephemeral", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith(READY_PREFIX), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line[len(READY_PREFIX):].strip()


def test_ephemeral_prints_one_ready_line_serves_and_removes_its_data_on_exit():
    from confluent_kafka import Producer

    proc, bootstrap = ephemeral()
    try:
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("from-a-shell-suite", b"x")
        assert producer.flush(15) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert stdout == ""  # the ready line was the only one
    data_dir = next(line.split("log.dirs=")[1].split()[0] for line in stderr.splitlines() if "log.dirs=" in line)
    assert "pykbroker-ephemeral-" in data_dir
    assert not os.path.exists(data_dir)


def test_ephemeral_keeps_given_listeners_and_data_dir(tmp_path):
    from pykbroker.testing import free_port

    port = free_port()
    proc, bootstrap = ephemeral("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                                "--override", f"log.dirs={tmp_path / 'kept'}")
    try:
        assert bootstrap == f"127.0.0.1:{port}"
        with RawClient(bootstrap) as c:
            c.wait_for_topics("t", auto_create=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert (tmp_path / "kept" / "t-0").is_dir()  # a data dir the user named is the user's


def test_a_taken_port_names_the_listener_and_how_to_pick_another(tmp_path):
    with BrokerProcess(tmp_path / "first") as first:
        first.start()
        port = first.bootstrap.rsplit(":", 1)[1]
        result = run_cli("--override", f"log.dirs={tmp_path / 'second'}",
                         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}")
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = [x for x in result.stderr.splitlines() if x.startswith("pykbroker:")]
    assert "listener PLAINTEXT" in line and f"127.0.0.1:{port} is already in use" in line, line
    assert "--override listeners=PLAINTEXT://127.0.0.1:" in line and "Errno" not in line, line


def test_an_unusable_log_dir_names_log_dirs_and_what_to_do(tmp_path):
    result = run_cli("--override", "log.dirs=/proc/nope")
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = [x for x in result.stderr.splitlines() if x.startswith("pykbroker:")]
    assert line.startswith("pykbroker: configuration error: log.dirs: /proc/nope cannot be used"), line
    assert "--override log.dirs=" in line and "Errno" not in line, line
