"""Run a real pykbroker process for tests (ours and users'): free port, temp data dir, clean teardown.

    with BrokerProcess(tmp_path) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap})
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["BrokerProcess", "RawClient", "free_port", "wait_for_api_versions"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_api_versions(host: str, port: int, timeout: float) -> None:
    """Block until the broker answers an ApiVersions v0 request, or raise TimeoutError."""
    request = struct.pack(">hhih", 18, 0, 0, -1)
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                s.sendall(struct.pack(">i", len(request)) + request)
                if len(s.recv(4)) == 4:
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.02)
    raise TimeoutError(f"no ApiVersions answer from {host}:{port} within {timeout}s ({last})")


class BrokerProcess:
    """A pykbroker subprocess on 127.0.0.1; ``bootstrap`` is its address. Restartable, killable."""

    def __init__(self, data_dir: str | Path | None = None, overrides: dict[str, str] | None = None,
                 port: int | None = None, log_path: str | Path | None = None) -> None:
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pykbroker-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / f"broker-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        props = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "log.dirs": str(self.data_dir / "logs"),
                 **self.overrides}
        cmd = [sys.executable, "-m", "pykbroker.cli"]
        for k, v in props.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        log.close()
        try:
            wait_for_api_versions("127.0.0.1", self.port, timeout)
        except TimeoutError:
            self.kill()
            raise RuntimeError(f"broker did not start; its log:\n{self.log()}") from None
        return self

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> int | None:
        """Graceful stop (SIGTERM); returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        """``kill -9``: no chance to flush or checkpoint."""
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def restart(self, *, hard: bool = False) -> BrokerProcess:
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class RawClient:
    """A minimal blocking client speaking our wire codec over a plain socket (for protocol tests)."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str | None = "raw-test",
                 ssl_context=None) -> None:
        """``ssl_context`` (an ``ssl.SSLContext``): talk TLS, for SSL and SASL_SSL listeners."""
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        if ssl_context is not None:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        self.client_id = client_id
        self._correlation_id = 0

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, request, version: int, correlation_id: int | None = None) -> int:
        """Frame and send a generated request message; returns its correlation id."""
        from wire import RequestHeader, Writer, encode_request_header, request_header_version

        if correlation_id is None:
            self._correlation_id += 1
            correlation_id = self._correlation_id
        w = Writer()
        encode_request_header(w, RequestHeader(request.API_KEY, version, correlation_id, self.client_id,
                                               request_header_version(request.API_KEY, version)))
        request.encode_into(w, version)
        body = w.getvalue()
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        return correlation_id

    def recv_frame(self) -> bytes:
        """One response frame body; raises ConnectionError when the broker closed the connection."""
        size = struct.unpack(">i", self._recv_exactly(4))[0]
        return self._recv_exactly(size)

    def recv(self, response_class, version: int):
        """(correlation_id, decoded response) of the next frame."""
        from wire import Reader, decode_response_header, response_header_version

        r = Reader(self.recv_frame())
        correlation_id = decode_response_header(r, response_header_version(response_class.API_KEY, version))
        return correlation_id, response_class.decode(r.buf[r.pos:], version)

    def request(self, request, version: int):
        """Send and receive one request; checks the correlation id."""
        cid = self.send(request, version)
        got, response = self.recv(_response_class(request), version)
        if got != cid:
            raise AssertionError(f"correlation id {got} != {cid}")
        return response

    def wait_for_topics(self, *names: str, auto_create: bool = False, timeout: float = 10.0) -> dict:
        """Metadata of ``names`` (by name) once each partition's leader serves it, asking as clients do.

        With ``auto_create`` the requests may create missing topics. Kafka answers the request that
        creates one with UNKNOWN_TOPIC_OR_PARTITION, and after CreateTopics its Metadata may show a leader
        a moment before that broker acts as leader (NOT_LEADER_OR_FOLLOWER); pykbroker answers Metadata
        the same way. So this asks again until Metadata shows every leader and ListOffsets (which only
        a leader answers) succeeds on every partition.
        """
        from wire import ErrorCode
        from wire.messages import ListOffsetsRequest, MetadataRequest
        from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
        from wire.messages.metadata_request import MetadataRequestTopic

        deadline = time.monotonic() + timeout
        while True:
            response = self.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names],
                                                    allow_auto_topic_creation=auto_create), 12)
            ready = all(t.error_code == ErrorCode.NONE and t.partitions
                        and all(p.error_code == ErrorCode.NONE and p.leader_id >= 0 for p in t.partitions)
                        for t in response.topics)
            if ready:
                offsets = self.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
                    name=t.name, partitions=[ListOffsetsPartition(partition_index=p.partition_index, timestamp=-1)
                                             for p in t.partitions]) for t in response.topics]), 8)
                if all(p.error_code == ErrorCode.NONE for t in offsets.topics for p in t.partitions):
                    return {t.name: t for t in response.topics}
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics not ready after {timeout}s: {response.topics}")
            time.sleep(0.05)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closes the connection within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _response_class(request):
    from wire import RESPONSES

    return RESPONSES[request.API_KEY]
