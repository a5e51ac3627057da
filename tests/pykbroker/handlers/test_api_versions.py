"""ApiVersions over a socket: a version newer than served is answered as Kafka 4.4 answers it."""

from __future__ import annotations

import struct

from pykbroker.testing import RawClient


def test_newer_version_gets_unsupported_version_with_api_versions_alone(fresh_broker):
    """Kafka 4.4's bytes for v6: correlation id, UNSUPPORTED_VERSION (35), one key: ApiVersions 0-5 (v0 body)."""
    with RawClient(fresh_broker.bootstrap) as c:
        body = struct.pack(">hhi", 18, 6, 7) + struct.pack(">h", 4) + b"diff" + b"\x00" + b"\x05diff\x021\x00"
        c.send_bytes(struct.pack(">i", len(body)) + body)
        assert c.recv_frame().hex() == "00000007002300000001001200000005"
        assert not c.is_closed_by_peer(0.2)  # the client may retry on the same connection
