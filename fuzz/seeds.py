"""Derive the targets' seed folders from the captured request frames: ``python -m fuzz.seeds``.

From fuzz/corpus/requests (captured by fuzz.capture): ``frames`` (request frames with their size
prefix, cut into the frames target's chunks), ``batches`` (the record batches inside Produce
requests), ``compressed`` (their compressed records sections, codec first), ``sasl_frames`` (each
client's SASL conversation in the sasl_authenticator target's format). Also ``generated``: one request
per served (api key, version) encoded from the message class's defaults, so every decoder has a seed
even where no captured client sends that version. Deterministic: rerunning changes nothing.
"""

from __future__ import annotations

import hashlib
import struct
from collections import defaultdict
from pathlib import Path

from pykbroker.handlers import SERVED_APIS
from wire import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    REQUESTS,
    Reader,
    RequestHeader,
    Writer,
    decode_request_header,
    encode_request_header,
    iter_batch_headers,
    request_header_version,
)

CORPUS = Path(__file__).parent / "corpus"


def _save(folder: str, data: bytes, prefix: str = "") -> None:
    path = CORPUS / folder / f"{prefix}{hashlib.sha1(data).hexdigest()[:12]}.bin"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_bytes(data)


def _chunked(data: bytes, size: int) -> bytes:
    out = bytearray()
    for i in range(0, len(data), size):
        piece = data[i:i + size]
        out.append(len(piece) - 1)
        out += piece
    return bytes(out)


def main() -> None:
    sasl: dict[str, list[bytes]] = defaultdict(list)
    for path in sorted((CORPUS / "requests").glob("*.bin")):
        body = path.read_bytes()
        client = path.name.split("-")[0]
        framed = struct.pack(">i", len(body)) + body
        if len(framed) < 2048:
            _save("frames", _chunked(framed * 2, 255 if len(framed) > 200 else 7))
        api_key, version = struct.unpack_from(">hh", body)
        if api_key in (17, 36) or (api_key == 18 and client != "unknown"):
            sasl[client].append(body)
        if api_key == 0:
            r = Reader(body)
            decode_request_header(r)
            request = REQUESTS[0].decode_from(r, version)
            for topic in request.topic_data:
                for partition in topic.partition_data:
                    records = bytes(partition.records or b"")
                    for pos, header in iter_batch_headers(records):
                        batch = records[pos:pos + header.batch_length + LOG_OVERHEAD]
                        _save("batches", batch)
                        if header.attributes & 7:
                            _save("compressed", bytes([20]) + batch[RECORD_BATCH_OVERHEAD:])
    for client, bodies in sasl.items():
        conversation = b"".join(struct.pack(">H", len(b)) + b for b in bodies[:4])
        _save("sasl_frames", conversation, f"{client}-")
    for api_key, lo, hi, _ in SERVED_APIS:
        cls = REQUESTS[int(api_key)]
        for version in range(max(lo, cls.LOWEST_VERSION), hi + 1):
            w = Writer()
            encode_request_header(w, RequestHeader(int(api_key), version, 1, "fuzz",
                                                   request_header_version(int(api_key), version)))
            try:
                cls().encode_into(w, version)
            except Exception:  # noqa: BLE001 - a field without a default for this version: header-only seed
                pass
            _save("generated", w.getvalue(), f"{int(api_key)}-v{version}-")


if __name__ == "__main__":
    main()
