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

import kafka.protocol.admin as kp_admin
import kafka.protocol.consumer as kp_consumer
import kafka.protocol.metadata as kp_metadata
import kafka.protocol.producer as kp_producer
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage
from kafka.record.default_records import DefaultRecordBatchBuilder

import wire.messages as generated
from wire import DecodeError, FieldSpec, Message, Reader

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
    max_examples=30,
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



# -- golden bytes: kafka-python 3 ----------------------------------------------------------------------
#
# kafka-python 3 encodes from the same JSON with a codec of its own (kafka/protocol/schemas/fields), and
# keeps its older hand-written schemas (kafka/protocol/old) that never saw the JSON. Both must agree
# with us byte for byte, in both directions.


def make(cls: type[Message], **values: object) -> Message:
    """``cls(**values)``, where struct fields may be given as dicts (or lists of dicts)."""
    specs = {spec.name: spec for spec in cls.FIELDS}
    kwargs = {}
    for name, value in values.items():
        spec = specs[name]
        if spec.struct is not None and value is not None:
            if spec.type.startswith("[]"):
                value = [make(spec.struct, **v) for v in value]
            else:
                value = make(spec.struct, **value)
        kwargs[name] = value
    return cls(**kwargs)


def at_version(msg: Message, version: int) -> Message:
    """``msg`` as ``version`` can carry it: fields the version lacks are back at their defaults."""
    kwargs = {}
    for spec in msg.FIELDS:
        if not present(spec, version):
            continue
        value = getattr(msg, spec.name)
        if spec.struct is not None and value is not None:
            if spec.type.startswith("[]"):
                value = [at_version(v, version) for v in value]
            else:
                value = at_version(value, version)
        kwargs[spec.name] = value
    return type(msg)(**kwargs)


KAFKA_PYTHON_CLASSES = {
    cls.name: cls
    for module in (kp_metadata, kp_consumer, kp_producer, kp_admin)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, ApiMessage) and cls is not ApiMessage
}
# kafka-python renames these int32 bitfields and holds them as sets of bit numbers.
_KP_BITFIELDS = {"cluster_authorized_operations": "authorized_operations",
                 "topic_authorized_operations": "authorized_operations"}


def to_kafka_python(msg: Message, version: int, kp_cls: type | None = None) -> object:
    """The same values as a kafka-python 3 object (its classes mirror the JSON, nested by struct name)."""
    kp_cls = kp_cls or KAFKA_PYTHON_CLASSES[msg.NAME]
    defaults = type(msg)()
    kwargs = {}
    for spec in msg.FIELDS:
        if not present(spec, version):
            continue
        value = getattr(msg, spec.name)
        if spec.tag is not None and value == getattr(defaults, spec.name):
            continue  # kafka-python writes every tagged field it is given; Kafka skips default values
        if spec.name in _KP_BITFIELDS:
            kwargs[_KP_BITFIELDS[spec.name]] = {bit for bit in range(32) if (value >> bit) & 1}
            continue
        if spec.struct is not None and value is not None:
            nested = getattr(kp_cls, spec.struct.NAME)
            if spec.type.startswith("[]"):
                value = [to_kafka_python(v, version, nested) for v in value]
            else:
                value = to_kafka_python(value, version, nested)
        kwargs[spec.name] = value
    return kp_cls(version=version, **kwargs)


def _record_batch() -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"v", headers=[])
    return bytes(builder.build())


BATCH = _record_batch()
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
M = generated

API_KEYS = [{"api_key": k, "min_version": 0, "max_version": v} for k, v in ((0, 11), (1, 17), (3, 12), (18, 4))]
METADATA_RESPONSE = dict(
    throttle_time_ms=5, cluster_id="cluster-1", controller_id=1,
    brokers=[{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
    topics=[{"error_code": 0, "name": "events", "topic_id": TOPIC_ID, "is_internal": False,
             "topic_authorized_operations": 0b1111_1000,
             "partitions": [{"partition_index": 0, "leader_id": 1, "leader_epoch": 3, "replica_nodes": [1, 2],
                             "isr_nodes": [1], "offline_replicas": [2]}]}],
)
PRODUCE_REQUEST = dict(
    transactional_id=None, acks=-1, timeout_ms=30_000,
    topic_data=[{"name": "events", "partition_data": [{"index": 0, "records": BATCH}]}],
)
PRODUCE_RESPONSE = dict(
    throttle_time_ms=0,
    responses=[{"name": "events", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 42, "log_append_time_ms": -1, "log_start_offset": 0,
         "record_errors": [{"batch_index": 1, "batch_index_error_message": "bad"}], "error_message": None}]}],
)
FETCH_REQUEST = dict(
    replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52_428_800, isolation_level=1, session_id=0,
    session_epoch=-1,
    topics=[{"topic": "events", "topic_id": TOPIC_ID, "partitions": [
        {"partition": 0, "current_leader_epoch": 3, "fetch_offset": 42, "last_fetched_epoch": -1,
         "log_start_offset": -1, "partition_max_bytes": 1_048_576}]}],
    forgotten_topics_data=[], rack_id="rack-a",
)
FETCH_RESPONSE = dict(
    throttle_time_ms=0, error_code=0, session_id=7,
    responses=[{"topic": "events", "topic_id": TOPIC_ID, "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 43, "last_stable_offset": 43,
         "log_start_offset": 0, "aborted_transactions": [{"producer_id": 9, "first_offset": 40}],
         "preferred_read_replica": -1, "records": BATCH}]}],
)
JOIN_GROUP_REQUEST = dict(
    group_id="group-1", session_timeout_ms=45_000, rebalance_timeout_ms=300_000, member_id="",
    group_instance_id=None, protocol_type="consumer",
    protocols=[{"name": "range", "metadata": b"\x00\x01meta"}, {"name": "cooperative-sticky", "metadata": b""}],
    reason="rebalance",
)
JOIN_GROUP_RESPONSE = dict(
    throttle_time_ms=0, error_code=0, generation_id=4, protocol_type="consumer", protocol_name="range",
    leader="m-1", skip_assignment=False, member_id="m-1",
    members=[{"member_id": "m-1", "group_instance_id": None, "metadata": b"\x00\x01meta"}],
)
OFFSET_COMMIT_REQUEST = dict(
    group_id="group-1", generation_id_or_member_epoch=4, member_id="m-1", group_instance_id=None,
    retention_time_ms=-1,
    topics=[{"name": "events", "partitions": [
        {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3, "committed_metadata": None}]}],
)


GOLDEN: list[tuple[Message, int]] = [
    (M.ApiVersionsRequest(), 0),
    (M.ApiVersionsRequest(client_software_name="apache-kafka-java", client_software_version="4.1.0"), 3),
    (M.ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3.0.12"), 4),
    (make(M.ApiVersionsResponse, error_code=0, api_keys=API_KEYS), 0),
    (make(M.ApiVersionsResponse, error_code=0, api_keys=API_KEYS, throttle_time_ms=7), 2),
    (make(M.ApiVersionsResponse, error_code=0, api_keys=API_KEYS, finalized_features_epoch=12,
          finalized_features=[{"name": "metadata.version", "max_version_level": 27, "min_version_level": 27}]), 3),
    (make(M.MetadataRequest, topics=[{"name": "events"}]), 0),
    (make(M.MetadataRequest, topics=None, allow_auto_topic_creation=False), 4),
    (make(M.MetadataRequest, topics=[{"name": "events"}], include_topic_authorized_operations=True), 9),
    (make(M.MetadataRequest, topics=[{"topic_id": TOPIC_ID, "name": None}]), 12),
    *[(make(M.MetadataResponse, **METADATA_RESPONSE), v) for v in (1, 7, 9, 12)],
    *[(make(M.ProduceRequest, **PRODUCE_REQUEST), v) for v in (3, 7, 9, 11)],
    *[(make(M.ProduceResponse, **PRODUCE_RESPONSE), v) for v in (2, 8, 9)],
    (make(M.ProduceResponse, **PRODUCE_RESPONSE, node_endpoints=[
        {"node_id": 2, "host": "b2", "port": 9093, "rack": None}]), 10),
    *[(make(M.FetchRequest, **FETCH_REQUEST), v) for v in (4, 11, 13)],
    (make(M.FetchRequest, **FETCH_REQUEST, cluster_id="cluster-1",
          replica_state={"replica_id": -1, "replica_epoch": -1}), 12),
    (make(M.FetchRequest, **{**FETCH_REQUEST, "replica_id": 0},
          replica_state={"replica_id": 2, "replica_epoch": 5}), 15),
    *[(make(M.FetchResponse, **FETCH_RESPONSE), v) for v in (4, 11, 13)],
    (make(M.FetchResponse, **{**FETCH_RESPONSE, "responses": [{
        "topic_id": TOPIC_ID, "partitions": [{
            "partition_index": 0, "error_code": 74, "high_watermark": -1,
            "current_leader": {"leader_id": 2, "leader_epoch": 4},
            "diverging_epoch": {"epoch": 3, "end_offset": 40}, "records": None}]}]},
          node_endpoints=[{"node_id": 2, "host": "b2", "port": 9093, "rack": "r"}]), 16),
    *[(make(M.JoinGroupRequest, **JOIN_GROUP_REQUEST), v) for v in (0, 5, 6, 8, 9)],
    *[(make(M.JoinGroupResponse, **JOIN_GROUP_RESPONSE), v) for v in (0, 5, 7, 9)],
    *[(make(M.OffsetCommitRequest, **OFFSET_COMMIT_REQUEST), v) for v in (2, 7, 8, 9)],
    (make(M.SyncGroupRequest, group_id="group-1", generation_id=4, member_id="m-1", protocol_type="consumer",
          protocol_name="range", assignments=[{"member_id": "m-1", "assignment": b"\x00\x00"}]), 5),
    (make(M.HeartbeatRequest, group_id="group-1", generation_id=4, member_id="m-1"), 4),
    (make(M.FindCoordinatorResponse, coordinators=[
        {"key": "group-1", "node_id": 1, "host": "localhost", "port": 9092, "error_code": 0}]), 4),
    (make(M.FindCoordinatorResponse, error_code=15, error_message="not yet", node_id=-1, host="", port=-1), 2),
    (make(M.ListOffsetsRequest, replica_id=-1, isolation_level=1, topics=[
        {"name": "events", "partitions": [{"partition_index": 0, "current_leader_epoch": 3, "timestamp": -2}]}]), 7),
    (make(M.InitProducerIdRequest, transactional_id="tx-1", transaction_timeout_ms=60_000, producer_id=-1,
          producer_epoch=-1), 4),
    (make(M.CreateTopicsResponse, topics=[
        {"name": "events", "topic_id": TOPIC_ID, "error_code": 0, "num_partitions": 3, "replication_factor": 1,
         "topic_config_error_code": 29, "configs": [
             {"name": "cleanup.policy", "value": "delete", "read_only": False, "config_source": 5,
              "is_sensitive": False}]}]), 5),
    (make(M.DescribeTopicPartitionsRequest, topics=[{"name": "events"}], response_partition_limit=2000,
          cursor={"topic_name": "events", "partition_index": 1}), 0),
    (make(M.DescribeTopicPartitionsRequest, topics=[], response_partition_limit=2000, cursor=None), 0),
]


@pytest.mark.parametrize("msg, version", GOLDEN, ids=lambda x: getattr(x, "NAME", None) or f"v{x}")
def test_kafka_python_agrees(msg: Message, version: int) -> None:
    cls = type(msg)
    kp_cls = KAFKA_PYTHON_CLASSES[cls.NAME]
    theirs = bytes(to_kafka_python(msg, version).encode(version=version))
    ours = msg.encode(version)
    assert ours == theirs
    assert cls.decode(theirs, version) == at_version(msg, version)
    # kafka-python reads our bytes back to an object that it encodes to the same bytes. (A decoded
    # kafka-python object has its version but no header, and encode(version=...) trips over that.)
    assert bytes(kp_cls.decode(ours, version=version).encode()) == ours


def _hand_written_cases() -> list[tuple[Message, int, object]]:
    from kafka.protocol.old import api_versions, fetch, group, metadata, produce

    produce_request = make(M.ProduceRequest, **PRODUCE_REQUEST)
    fetch_request = make(M.FetchRequest, **{**FETCH_REQUEST, "forgotten_topics_data": [
        {"topic": "old", "partitions": [3, 4]}]})
    join_request = make(M.JoinGroupRequest, **JOIN_GROUP_REQUEST)
    join_response = make(M.JoinGroupResponse, **JOIN_GROUP_RESPONSE)
    metadata_response = make(M.MetadataResponse, **METADATA_RESPONSE)
    old_brokers = [(1, "localhost", 9092, None)]
    old_partitions = [(0, 0, 1, 3, [1, 2], [1], [2])]
    return [
        (M.ApiVersionsRequest(), 0, api_versions.ApiVersionsRequest_v0()),
        (M.ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3.0.12"), 3,
         api_versions.ApiVersionsRequest_v3(client_software_name="kafka-python", client_software_version="3.0.12")),
        # The shape a broker answers an unsupported ApiVersions version with: v0, error 35.
        (make(M.ApiVersionsResponse, error_code=35, api_keys=[{"api_key": 18, "min_version": 0, "max_version": 4}]),
         0, api_versions.ApiVersionsResponse_v0(error_code=35, api_keys=[(18, 0, 4)])),
        (make(M.ApiVersionsResponse, error_code=0, api_keys=API_KEYS, throttle_time_ms=3), 3,
         api_versions.ApiVersionsResponse_v3(error_code=0, api_keys=[
             (k["api_key"], k["min_version"], k["max_version"], {}) for k in API_KEYS], throttle_time_ms=3)),
        (make(M.MetadataRequest, topics=[{"name": "events"}, {"name": "audit"}]), 0,
         metadata.MetadataRequest_v0(topics=["events", "audit"])),
        (make(M.MetadataRequest, topics=None), 1, metadata.MetadataRequest_v1(topics=None)),
        (make(M.MetadataRequest, topics=None, allow_auto_topic_creation=False), 4,
         metadata.MetadataRequest_v4(topics=None, allow_auto_topic_creation=False)),
        (metadata_response, 7, metadata.MetadataResponse_v7(
            throttle_time_ms=5, brokers=old_brokers, cluster_id="cluster-1", controller_id=1,
            topics=[(0, "events", False, old_partitions)])),
        (metadata_response, 8, metadata.MetadataResponse_v8(
            throttle_time_ms=5, brokers=old_brokers, cluster_id="cluster-1", controller_id=1,
            topics=[(0, "events", False, old_partitions, {3, 4, 5, 6, 7})], authorized_operations=None)),
        (produce_request, 3, produce.ProduceRequest_v3(
            transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[("events", [(0, BATCH)])])),
        (produce_request, 8, produce.ProduceRequest_v8(
            transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[("events", [(0, BATCH)])])),
        (make(M.ProduceResponse, **PRODUCE_RESPONSE), 8, produce.ProduceResponse_v8(
            responses=[("events", [(0, 0, 42, -1, 0, [(1, "bad")], None)])], throttle_time_ms=0)),
        (fetch_request, 4, fetch.FetchRequest_v4(
            replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52_428_800, isolation_level=1,
            topics=[("events", [(0, 42, 1_048_576)])])),
        (fetch_request, 11, fetch.FetchRequest_v11(
            replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52_428_800, isolation_level=1, session_id=0,
            session_epoch=-1, topics=[("events", [(0, 3, 42, -1, 1_048_576)])],
            forgotten_topics_data=[("old", [3, 4])], rack_id="rack-a")),
        (make(M.FetchResponse, **FETCH_RESPONSE), 4, fetch.FetchResponse_v4(
            throttle_time_ms=0, responses=[("events", [(0, 0, 43, 43, [(9, 40)], BATCH)])])),
        (join_request, 0, group.JoinGroupRequest_v0(
            group_id="group-1", session_timeout_ms=45_000, member_id="", protocol_type="consumer",
            protocols=[("range", b"\x00\x01meta"), ("cooperative-sticky", b"")])),
        (join_request, 5, group.JoinGroupRequest_v5(
            group_id="group-1", session_timeout_ms=45_000, rebalance_timeout_ms=300_000, member_id="",
            group_instance_id=None, protocol_type="consumer",
            protocols=[("range", b"\x00\x01meta"), ("cooperative-sticky", b"")])),
        (join_response, 5, group.JoinGroupResponse_v5(
            throttle_time_ms=0, error_code=0, generation_id=4, protocol_name="range", leader="m-1",
            member_id="m-1", members=[("m-1", None, b"\x00\x01meta")])),
    ]


@pytest.mark.parametrize("msg, version, old", _hand_written_cases(),
                         ids=lambda x: getattr(x, "NAME", None) or (f"v{x}" if isinstance(x, int) else ""))
def test_kafka_python_hand_written_schemas_agree(msg: Message, version: int, old: object) -> None:
    theirs = old.encode()
    assert msg.encode(version) == theirs
    assert type(msg).decode(theirs, version) == at_version(msg, version)
    assert type(old).decode(msg.encode(version)).encode() == theirs


# -- golden bytes: Kafka 4.2's share coordinator APIs (MessageUtil.toByteBufferAccessor of the Java *Data) -----
def test_share_group_state_apis_match_kafka_4_2_bytes() -> None:
    from wire.messages import (
        ReadShareGroupStateResponse,
        ReadShareGroupStateSummaryResponse,
        WriteShareGroupStateRequest,
    )
    from wire.messages import read_share_group_state_response as rs
    from wire.messages import read_share_group_state_summary_response as rss
    from wire.messages import write_share_group_state_request as ws

    topic = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
    write = WriteShareGroupStateRequest(group_id="g", topics=[ws.WriteStateData(topic_id=topic, partitions=[
        ws.PartitionData(partition=3, state_epoch=1, leader_epoch=7, start_offset=10, delivery_complete_count=2,
                         state_batches=[ws.StateBatch(first_offset=10, last_offset=12, delivery_state=2,
                                                      delivery_count=1)])])])
    summary = ReadShareGroupStateSummaryResponse(results=[rss.ReadStateSummaryResult(topic_id=topic, partitions=[
        rss.PartitionResult(partition=1, error_code=0, state_epoch=2, leader_epoch=3, start_offset=4,
                            delivery_complete_count=5)])])
    read = ReadShareGroupStateResponse(results=[rs.ReadStateResult(topic_id=topic, partitions=[
        rs.PartitionResult(partition=1, error_code=0, state_epoch=2, start_offset=4, state_batches=[
            rs.StateBatch(first_offset=4, last_offset=5, delivery_state=4, delivery_count=3)])])])
    for msg, version, golden in [
        (write, 1, "0267020102030405060708090a0b0c0d0e0f1002000000030000000100000007000000000000000a000000020200000000"
                   "0000000a000000000000000c02000100000000"),
        (summary, 1, "020102030405060708090a0b0c0d0e0f1002000000010000000000000200000003000000000000000400000005000000"),
        (read, 0, "020102030405060708090a0b0c0d0e0f100200000001000000000000020000000000000004020000000000000004000000"
                  "000000000504000300000000"),
    ]:
        assert msg.encode(version).hex() == golden, msg.NAME
        assert type(msg).decode_from(Reader(bytes.fromhex(golden)), version).encode(version) == bytes.fromhex(golden)


# -- golden bytes: Kafka 4.4's Streams group heartbeat (MessageUtil.toByteBufferAccessor of the Java *Data) ------
def test_streams_group_heartbeat_matches_kafka_4_4_bytes() -> None:
    from wire.messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
    from wire.messages import streams_group_heartbeat_request as rq
    from wire.messages import streams_group_heartbeat_response as rs

    request = StreamsGroupHeartbeatRequest(
        group_id="app", member_id="m-1", member_epoch=0, endpoint_information_epoch=-1, rebalance_timeout_ms=300000,
        process_id="p-1", user_endpoint=rq.Endpoint(host="h", port=7),
        client_tags=[rq.KeyValue(key="rack", value="a")], active_tasks=[], standby_tasks=[], warmup_tasks=[],
        topology=rq.Topology(epoch=0, subtopologies=[
            rq.Subtopology(subtopology_id="0", source_topics=["in"], repartition_sink_topics=["app-by-key-repartition"]),
            rq.Subtopology(subtopology_id="1", repartition_source_topics=[rq.TopicInfo(
                name="app-by-key-repartition", partitions=0, replication_factor=-1,
                topic_configs=[rq.KeyValue(key="cleanup.policy", value="delete")])],
                state_changelog_topics=[rq.TopicInfo(name="app-counts-changelog")],
                copartition_groups=[rq.CopartitionGroup(source_topics=[0], repartition_source_topics=[0])])]))
    response = StreamsGroupHeartbeatResponse(
        member_id="m-1", member_epoch=1, heartbeat_interval_ms=5000, acceptable_recovery_lag=10000,
        task_offset_interval_ms=60000, status=[rs.Status(status_code=1, status_detail="missing")],
        active_tasks=[rs.TaskIds(subtopology_id="0", partitions=[0, 1])], standby_tasks=[], warmup_tasks=[])
    heartbeat = ("04617070046d2d3100000000ffffffff0000000493e001000000000302300203696e010102176170702d62792d6b65792d7265"
                 "706172746974696f6e0101000231010102156170702d636f756e74732d6368616e67656c6f670000000000000100010217"
                 "6170702d62792d6b65792d7265706172746974696f6e00000000ffff020f636c65616e75702e706f6c696379076465"
                 "6c6574650000020200000102000000000001010104702d3101026800070002057261636b02610000000000")
    for msg, version, golden in [
        (request, 0, heartbeat), (request, 1, heartbeat),
        (response, 1, "00000000000000046d2d3100000001000013880000ea6000000000000027100201086d697373696e670002023003"
                      "000000000000000100010100000000000000"),
    ]:
        assert msg.encode(version).hex() == golden, (msg.NAME, version)
        assert type(msg).decode_from(Reader(bytes.fromhex(golden)), version).encode(version) == bytes.fromhex(golden)
