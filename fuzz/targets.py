"""Fuzz targets: each takes one input (bytes) and returns normally or raises only the errors its code
promises for bad input (a DecodeError, a FrameError, a RecordError, a SASL error). Anything else that
escapes is a crash; so is a result that breaks a stated bound (a decompressed size above its limit, a
frame larger than the reader allows).

``TARGETS`` maps a name to (function, the corpus folders under fuzz/corpus that seed it). Every target
runs without atheris too: tests/fuzz/test_targets.py replays the corpus and fuzz/regressions through them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from pykbroker.handlers import SERVED_APIS
from pykbroker.security.client import salted_password
from pykbroker.security.errors import SaslAuthenticationError, SaslCredentialError, SaslProtocolError
from pykbroker.security.listeners import ListenerSecurity
from pykbroker.security.plain import PlainServer
from pykbroker.security.sasl_authenticator import SaslServerAuthenticator
from pykbroker.security.scram import ScramServer
from replication.metadata.credentials import credential_from_salted_password
from wire import (
    REQUESTS,
    DecodeError,
    FrameError,
    FrameReader,
    Reader,
    RecordError,
    decode_records,
    decode_request_header,
    decompress,
    peek_request_header,
    scan_batches,
    validate_batch,
)
from wire._record_structure import check_decompressed_records, check_records, read_in_place

# The frame reader's limit in the target: small, so the fuzzer can reach it.
FUZZ_MAX_FRAME = 1 << 20
# The decompressed-size bound the record targets enforce (a bomb must stop here).
FUZZ_MAX_DECOMPRESSED = 1 << 20

SERVED: dict[int, tuple[int, int]] = {int(k): (lo, hi) for k, lo, hi, _ in SERVED_APIS}


class Crash(AssertionError):
    """A target's own check failed (a bound broken): always a finding."""


def frames(data: bytes) -> None:
    """The frame reader fed in chunks: the first byte of each chunk says how many bytes follow it."""
    reader = FrameReader(FUZZ_MAX_FRAME)
    pos, taken = 0, 0
    try:
        while pos < len(data):
            n = data[pos] + 1
            reader.feed(data[pos + 1:pos + 1 + n])
            pos += 1 + n
            while (f := reader.next_frame()) is not None:
                if len(f) > FUZZ_MAX_FRAME:
                    raise Crash(f"frame of {len(f)} bytes above the limit")
                taken += len(f) + 4
            if taken > pos:
                raise Crash("more frame bytes out than went in")
    except FrameError:
        pass


def request_header(data: bytes) -> None:
    """The request header alone (api key, version, correlation id, client id, tagged fields)."""
    r = Reader(data)
    try:
        peek_request_header(r)
        decode_request_header(r)
    except DecodeError:
        pass


def requests(data: bytes) -> None:
    """A whole request frame as the dispatcher decodes it, for every served (api key, version)."""
    if len(data) < 10:
        return
    r = Reader(data)
    try:
        api_key, version, _ = peek_request_header(r)
    except DecodeError:
        return
    served = SERVED.get(api_key)
    if served is None or not served[0] <= version <= served[1]:
        return
    cls = REQUESTS[api_key]
    try:
        decode_request_header(r)
        if version >= cls.LOWEST_VERSION:
            cls.decode_from(r, version)
    except DecodeError:
        pass


def record_batches(data: bytes) -> None:
    """The produce path's batch checks, then the records decoded (decompressed under a bound)."""
    try:
        scan_batches(data, check_crc=True, max_batch_size=FUZZ_MAX_FRAME)
    except RecordError:
        pass
    try:
        validate_batch(data, 0, from_client=True)
    except RecordError:
        pass
    count = data[0] if data else 1
    for check in (lambda: check_records(data, 1, len(data), count), lambda: check_decompressed_records(data[1:], count),
                  lambda: read_in_place(data[1:], count)):
        try:  # a client batch's record checks, past its CRC (the first byte: the record count)
            check()
        except RecordError:
            pass
    try:  # past the CRC check too: a producer can send a bad batch with a good CRC
        _, records = decode_records(data, 0, max_decompressed_size=FUZZ_MAX_DECOMPRESSED)
    except RecordError:
        return
    size = sum(len(r.key or b"") + len(r.value or b"") for r in records)
    if size > FUZZ_MAX_DECOMPRESSED:
        raise Crash(f"{size} bytes of records from a batch bounded to {FUZZ_MAX_DECOMPRESSED}")


def decompressors(data: bytes) -> None:
    """Each codec over the same bytes (the first byte picks the limit): output never above the limit."""
    if not data:
        return
    limit = 1 << (data[0] % 21)
    for codec in (1, 2, 3, 4):
        try:
            out = decompress(codec, data[1:], limit)
        except RecordError:
            continue
        if len(out) > limit:
            raise Crash(f"codec {codec}: {len(out)} bytes out, limit {limit}")


_SECURITY = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
                             {"alice": "alice-secret"}, {"PLAIN": 3600_000})
_SALT = b"salt"
_CREDENTIALS = {m: credential_from_salted_password(m, 4096, _SALT, salted_password(m, "carol-scram", _SALT, 4096))
                for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


def _scram_credentials(user: str, mechanism: str):
    return _CREDENTIALS[mechanism] if user == "carol" else None


def _split(data: bytes) -> Iterator[bytes]:
    """Frames of a SASL conversation: 2-byte big-endian length, then the frame."""
    pos = 0
    while pos + 2 <= len(data):
        (n,) = struct.unpack_from(">H", data, pos)
        yield data[pos + 2:pos + 2 + n]
        pos += 2 + n


def sasl_authenticator(data: bytes) -> None:
    """A whole SASL conversation (handshake, authenticate, tokens) through a connection's authenticator.

    Its ``receive`` answers or asks for a close; it never raises.
    """
    auth = SaslServerAuthenticator(_SECURITY, _scram_credentials, lambda: 0, "fuzz")
    for f in _split(data):
        step = auth.receive(f)
        if step.close or step.dispatch:
            return


_TOKEN_ERRORS = (SaslAuthenticationError, SaslCredentialError, SaslProtocolError)


def sasl_tokens(data: bytes) -> None:
    """A token through PLAIN, and through SCRAM as a client-first and (after a good first) a client-final."""
    for server in (PlainServer({"alice": "alice-secret"}), ScramServer("SCRAM-SHA-256", lambda u: _CREDENTIALS[
            "SCRAM-SHA-256"] if u == "carol" else None)):
        try:
            server.evaluate(data)
        except _TOKEN_ERRORS:
            pass
    scram = ScramServer("SCRAM-SHA-512", lambda u: _CREDENTIALS["SCRAM-SHA-512"] if u == "carol" else None)
    scram.evaluate(b"n,,n=carol,r=fuzznonce")
    try:
        scram.evaluate(data.replace(b"NONCE", scram._nonce.encode()))  # seeds can name the server's nonce
    except _TOKEN_ERRORS:
        pass


TARGETS: dict[str, tuple[Callable[[bytes], None], tuple[str, ...]]] = {
    "frames": (frames, ("frames",)),
    "request_header": (request_header, ("requests", "generated")),
    "requests": (requests, ("requests", "generated")),
    "record_batches": (record_batches, ("batches",)),
    "decompressors": (decompressors, ("compressed",)),
    "sasl_authenticator": (sasl_authenticator, ("sasl_frames",)),
    "sasl_tokens": (sasl_tokens, ("sasl",)),
    "dispatch": (lambda data: _dispatch(data), ("requests", "generated")),
}


def _dispatch(data: bytes) -> None:
    from fuzz.dispatch_target import dispatch  # a broker in this process: built on first use only

    dispatch(data)
