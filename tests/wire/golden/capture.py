"""Capture the first request frames real clients send, for the golden-bytes tests.

    .venv/bin/python -m tests.wire.golden.capture          # rewrites tests/wire/golden/*.txt

A one-connection server on 127.0.0.1 takes each client's first request frame and writes it as hex
(4-byte size prefix included) to ``<name>.txt`` with a header saying how it was captured. When
``fallback`` is set the server answers the first ApiVersions request the way a broker answers a version
it does not support (a v0 body, UNSUPPORTED_VERSION, ApiVersions 0..fallback) and records the retry
too; otherwise it closes the connection. Each client runs in a subprocess that is killed afterwards.

Not a test (no network in the test suite); the tests read the files it wrote.
"""

from __future__ import annotations

import datetime
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

from wire import ErrorCode, Writer, encode_response_header
from wire.messages import ApiVersionsResponse

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 20.0

CLIENTS = {
    "librdkafka": (
        "confluent-kafka {confluent_kafka}, librdkafka {librdkafka}",
        "from confluent_kafka.admin import AdminClient\n"
        "AdminClient({{'bootstrap.servers': '127.0.0.1:{port}'}}).list_topics(timeout=15)\n",
    ),
    "aiokafka": (
        "aiokafka {aiokafka}",
        "import asyncio\n"
        "from aiokafka import AIOKafkaProducer\n"
        "async def main():\n"
        "    p = AIOKafkaProducer(bootstrap_servers='127.0.0.1:{port}', request_timeout_ms=15000)\n"
        "    await p.start()\n"
        "asyncio.run(main())\n",
    ),
    "kafka_python": (
        "kafka-python {kafka_python}",
        "from kafka import KafkaProducer\n"
        "KafkaProducer(bootstrap_servers='127.0.0.1:{port}', request_timeout_ms=15000)\n",
    ),
}


def versions() -> dict[str, str]:
    import aiokafka
    import confluent_kafka
    import kafka

    return {"confluent_kafka": confluent_kafka.__version__, "librdkafka": confluent_kafka.libversion()[0],
            "aiokafka": aiokafka.__version__, "kafka_python": kafka.__version__}


def read_frame(conn: socket.socket) -> bytes:
    """One whole frame, size prefix included."""
    head = _read_exactly(conn, 4)
    (size,) = struct.unpack(">i", head)
    return head + _read_exactly(conn, size)


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"client closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def fallback_response(correlation_id: int, max_api_versions: int) -> bytes:
    """What a broker sends for an ApiVersions version it does not support: header v0, body v0."""
    w = Writer()
    encode_response_header(w, correlation_id, 0)
    body = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
        ApiVersionsResponse.FIELDS[1].struct(api_key=18, min_version=0, max_version=max_api_versions)])
    body.encode_into(w, 0)
    data = w.getvalue()
    return struct.pack(">i", len(data)) + data


def capture(client: str, fallback: int | None = None) -> list[bytes]:
    """The first request frame of ``client`` (and, with ``fallback``, the ApiVersions retry)."""
    describe, code = CLIENTS[client]
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(TIMEOUT_S)
        port = server.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-c", code.format(port=port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(TIMEOUT_S)
                frames = [read_frame(conn)]
                if fallback is not None:
                    (correlation_id,) = struct.unpack_from(">i", frames[0], 8)
                    conn.sendall(fallback_response(correlation_id, fallback))
                    try:
                        frames.append(read_frame(conn))
                    except ConnectionError:  # some clients reconnect for the retry
                        conn2, _ = server.accept()
                        with conn2:
                            conn2.settimeout(TIMEOUT_S)
                            frames.append(read_frame(conn2))
            return frames
        finally:
            proc.kill()
            proc.wait()


def write(name: str, frame: bytes, how: str) -> None:
    lines = [f"# {line}" for line in how.strip().splitlines()]
    lines += textwrap.wrap(frame.hex(), 64)
    (HERE / f"{name}.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {name}.txt ({len(frame)} bytes)")


def main() -> None:
    v = versions()
    today = datetime.date.today().isoformat()
    how = ("Captured {today} by tests/wire/golden/capture.py from {client} on 127.0.0.1: {note}.\n"
           "Hex of the whole frame, 4-byte size prefix included.")
    first, retry = capture("librdkafka", fallback=3)
    client = CLIENTS["librdkafka"][0].format(**v)
    write("librdkafka_api_versions_first", first, how.format(
        today=today, client=client, note="its first request on a new connection"))
    write("librdkafka_api_versions_v0_retry", retry, how.format(
        today=today, client=client, note="its retry after a v0 UNSUPPORTED_VERSION answer allowing ApiVersions\n"
        "0-3 (librdkafka retries with v0 whatever the answer allows)"))
    for name in ("aiokafka", "kafka_python"):
        (frame,) = capture(name)
        write(f"{name}_first_request", frame, how.format(
            today=today, client=CLIENTS[name][0].format(**v), note="its first request on a new connection"))


if __name__ == "__main__":
    main()
