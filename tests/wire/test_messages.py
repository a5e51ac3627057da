"""Property-based round trips for every generated message class, at every version it has.

Instances are drawn from each class's ``FIELDS``: a field absent from the drawn version keeps its
default, null appears only where the field is nullable in that version, tagged fields only in their
tagged versions. Every instance must survive encode -> decode -> equal and re-encode to the same
bytes; every strict prefix of an encoding, and any garbage, must fail with ``DecodeError`` alone.
"""

from __future__ import annotations

import functools
import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wire.messages as generated
from wire import DecodeError, FieldSpec, Message

MESSAGE_CLASSES: list[type[Message]] = sorted(
    (getattr(generated, name) for name in generated.__all__ if name not in ("REQUESTS", "RESPONSES")),
    key=lambda cls: cls.NAME,
)

# Small collections keep a nested message (topics -> partitions -> replicas) to a few hundred bytes.
MAX_LIST = (3, 2, 1)

_INTS = {
    "int8": st.integers(-(1 << 7), (1 << 7) - 1),
    "int16": st.integers(-(1 << 15), (1 << 15) - 1),
    "uint16": st.integers(0, (1 << 16) - 1),
    "int32": st.integers(-(1 << 31), (1 << 31) - 1),
    "uint32": st.integers(0, (1 << 32) - 1),
    "int64": st.integers(-(1 << 63), (1 << 63) - 1),
}
_SCALARS = {
    **_INTS,
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    # Content does not steer the codec, lengths do: sample a few (one draw each, which keeps the
    # suite fast) including multi-byte UTF-8 and lengths whose prefix needs a two-byte varint.
    "string": st.sampled_from(["", "a", "topic-0", "grüße ☃ 𝄞", "x" * 127, "y" * 200]),
    "bytes": st.sampled_from([b"", b"\x00", b"\xff" * 5, bytes(range(130))]),
    "records": st.sampled_from([b"", b"\x00" * 61, bytes(range(256))]),
    "uuid": st.uuids() | st.just(uuid.UUID(int=0)),
}

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def present(spec: FieldSpec, version: int) -> bool:
    lo, hi = spec.versions
    return lo <= version <= hi


def nullable_at(spec: FieldSpec, version: int) -> bool:
    return spec.nullable is not None and spec.nullable[0] <= version <= spec.nullable[1]


def field_strategy(spec: FieldSpec, version: int, depth: int) -> st.SearchStrategy:
    is_array = spec.type.startswith("[]")
    elem_type = spec.type[2:] if is_array else spec.type
    if spec.struct is not None:
        elem = message_strategy(spec.struct, version, depth + 1)
    else:
        elem = _SCALARS[elem_type]
    value = st.lists(elem, max_size=MAX_LIST[min(depth, len(MAX_LIST) - 1)]) if is_array else elem
    return st.none() | value if nullable_at(spec, version) else value


@functools.cache
def message_strategy(cls: type[Message], version: int, depth: int = 0) -> st.SearchStrategy:
    """Instances of ``cls`` holding values only in the fields that exist at ``version``."""
    fields = {spec.name: field_strategy(spec, version, depth) for spec in cls.FIELDS if present(spec, version)}
    return st.builds(cls, **fields)


def versions(cls: type[Message]) -> st.SearchStrategy[int]:
    return st.integers(cls.LOWEST_VERSION, cls.HIGHEST_VERSION)


def test_every_message_is_covered():
    assert len(MESSAGE_CLASSES) == len(generated.__all__) - 2
    for cls in MESSAGE_CLASSES:
        assert cls.LOWEST_VERSION <= cls.HIGHEST_VERSION, cls.NAME


_NON_DEFAULT = {
    "bool": True, "float64": 1.5, "string": "s", "bytes": b"b", "records": b"r", "uuid": uuid.UUID(int=1),
}


def populated(cls: type[Message], version: int, *, nulls: bool = False) -> Message:
    """An instance with every field of ``version`` set away from its default (or null where allowed)."""
    defaults = cls()
    kwargs = {}
    for spec in cls.FIELDS:
        if not present(spec, version):
            continue
        if nulls and nullable_at(spec, version):
            kwargs[spec.name] = None
            continue
        elem_type = spec.type[2:] if spec.type.startswith("[]") else spec.type
        if spec.struct is not None:
            elem = populated(spec.struct, version, nulls=nulls)
        elif elem_type in _INTS:
            elem = 7
        else:
            elem = _NON_DEFAULT[elem_type]
        value = [elem] if spec.type.startswith("[]") else elem
        if elem_type == "bool" and value == getattr(defaults, spec.name):
            value = not value
        kwargs[spec.name] = value
    return cls(**kwargs)


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.NAME)
def test_every_version_round_trips(cls: type[Message]) -> None:
    """Deterministic companion of test_codec: defaults, every field set, and every null, at each version."""
    for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
        for msg in (cls(), populated(cls, version), populated(cls, version, nulls=True)):
            raw = msg.encode(version)
            back = cls.decode(raw, version)
            assert back == msg, (version, msg)
            assert back.encode(version) == raw


def assert_only_decode_error(cls: type[Message], raw: bytes, version: int) -> None:
    """Decoding ``raw`` either fails with DecodeError or gives a message that encodes again."""
    try:
        msg = cls.decode(raw, version)
    except DecodeError:
        return
    msg.encode(version)


def mutate(raw: bytes, rng: random.Random) -> bytes:
    """Up to four byte edits (set, insert, delete), favouring the bytes that flip lengths and flags."""
    out = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(out))
        byte = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        edit = rng.choice(("set", "insert", "delete"))
        if edit == "insert" or pos == len(out):
            out.insert(pos, byte)
        elif edit == "set":
            out[pos] = byte
        else:
            del out[pos]
    return bytes(out)


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.NAME)
@SETTINGS
@given(data=st.data())
def test_codec(cls: type[Message], data: st.DataObject) -> None:
    version = data.draw(versions(cls), label="version")
    msg = data.draw(message_strategy(cls, version), label="message")
    raw = msg.encode(version)

    back = cls.decode(raw, version)
    assert back == msg
    assert back.encode(version) == raw

    # Every strict prefix is short of something; a byte too many is trailing garbage.
    rng = random.Random(data.draw(st.integers(0, 1 << 32), label="seed"))
    cuts = range(len(raw)) if len(raw) <= 64 else rng.sample(range(len(raw)), 32)
    for cut in cuts:
        with pytest.raises(DecodeError):
            cls.decode(raw[:cut], version)
    with pytest.raises(DecodeError):
        cls.decode(raw + b"\x00", version)

    # Damaged encodings and plain garbage fail with DecodeError and nothing else.
    for _ in range(8):
        assert_only_decode_error(cls, mutate(raw, rng), version)
    for _ in range(4):
        assert_only_decode_error(cls, rng.randbytes(rng.randint(0, 48)), version)
