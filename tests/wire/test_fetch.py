"""wire._fetch.decode_fetch_request gives what the generated FetchRequest.decode_from gives, requests and errors;
wire._fetch.FetchAnswer writes what the generated FetchResponse.encode_into writes (file regions kept as their own parts)."""

from __future__ import annotations

import random
import uuid

import pytest

from wire import DecodeError, Reader, Writer, _fetch
from wire._fetch import FetchAnswer, decode_fetch_request
from wire.messages import FetchRequest, FetchResponse
from wire.messages.fetch_request import FetchPartition, FetchTopic, ForgottenTopic, ReplicaState
from wire.messages.fetch_response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
    SnapshotId,
)

VERSIONS = [4, 11, 12, 13, 15, 16, 17, 18]


def _name(rnd: random.Random, version: int, t: int) -> str:
    return "" if version >= 13 else rnd.choice(["t", f"topic-{t}", "tëst"])


def _topic_id(rnd: random.Random, version: int) -> uuid.UUID:
    return uuid.UUID(int=rnd.getrandbits(128)) if version >= 13 else uuid.UUID(int=0)


def _request(rnd: random.Random, version: int) -> FetchRequest:
    topics = []
    for t in range(rnd.choice([0, 1, 1, 2, 3])):
        partitions = [FetchPartition(
            partition=rnd.randrange(1 << 20), current_leader_epoch=rnd.choice([-1, 0, 7]) if version >= 9 else -1,
            fetch_offset=rnd.choice([0, 5, rnd.getrandbits(40)]),
            last_fetched_epoch=rnd.choice([-1, 3]) if version >= 12 else -1,
            log_start_offset=rnd.choice([-1, 0, 99]) if version >= 5 else -1, partition_max_bytes=rnd.choice([1 << 20, 0, 65536]))
            for _ in range(rnd.choice([1, 1, 2, 5]))]
        topics.append(FetchTopic(topic=_name(rnd, version, t), topic_id=_topic_id(rnd, version), partitions=partitions))
    forgotten = [ForgottenTopic(topic=_name(rnd, version, t), topic_id=_topic_id(rnd, version),
                                partitions=[rnd.randrange(100) for _ in range(rnd.randrange(3))])
                 for t in range(rnd.choice([0, 0, 1, 2]) if version >= 7 else 0)]
    return FetchRequest(replica_id=rnd.choice([-1, -1, 2]) if version <= 14 else -1, max_wait_ms=rnd.choice([500, 100]),
                        min_bytes=rnd.choice([1, 0]), max_bytes=rnd.choice([52428800, 1]),
                        isolation_level=rnd.choice([0, 1]), session_id=rnd.choice([0, 12345]) if version >= 7 else 0,
                        session_epoch=rnd.choice([-1, 0, 4]) if version >= 7 else -1, topics=topics, forgotten_topics_data=forgotten,
                        rack_id=rnd.choice(["", "rack-a"]) if version >= 11 else "")


def _encoded(message, version: int) -> bytes:
    w = Writer()
    message.encode_into(w, version)
    return w.getvalue()


def _outcome(decode, data: bytes, version: int, pos: int = 0):
    r = Reader(data, pos)
    try:
        return decode(r, version), r.pos
    except DecodeError as exc:
        return "DecodeError", str(exc)


@pytest.mark.parametrize("version", VERSIONS)
def test_requests_decode_as_the_generated_codec_decodes_them(version: int) -> None:
    rnd = random.Random(version)
    for _ in range(30):
        request = _request(rnd, version)
        data = b"\x07" + _encoded(request, version)
        fast = _outcome(decode_fetch_request, data, version, 1)
        assert fast == _outcome(FetchRequest.decode_from, data, version, 1)
        assert fast[0] == request and fast[1] == len(data)
        if version >= 12:  # read inline, not by the generated codec
            assert _fetch._decode_flexible(Reader(data, 1), version) == request


@pytest.mark.parametrize("version", [12, 13, 15, 17])
def test_tagged_fields_cuts_and_garbage_get_the_generated_codecs_answer(version: int) -> None:
    """Tagged fields (a cluster id, a follower's replica state and directory, unknown tags), every truncation and
    random bytes changed: the same request or the same DecodeError."""
    rnd = random.Random(version)
    for _ in range(12):
        request = _request(rnd, version)
        data = _encoded(request, version)
        tagged = data[:-1] + b"\x01\x09\x02ab"  # the request's tagged fields: one unknown tag
        assert _outcome(decode_fetch_request, tagged, version) == _outcome(FetchRequest.decode_from, tagged, version)
        request.cluster_id = "cluster"
        if version >= 15:
            request.replica_state = ReplicaState(replica_id=2, replica_epoch=5)
        if version >= 17 and request.topics:
            request.topics[0].partitions[0].replica_directory_id = uuid.UUID(int=7)
        with_tags = _encoded(request, version)
        assert _outcome(decode_fetch_request, with_tags, version) == (request, len(with_tags))
        for cut in range(0, len(data), max(1, len(data) // 40)):
            assert _outcome(decode_fetch_request, data[:cut], version) == \
                _outcome(FetchRequest.decode_from, data[:cut], version)
        garbled = bytearray(data)
        for _ in range(3):
            garbled[rnd.randrange(len(garbled))] = rnd.randrange(256)
        assert _outcome(decode_fetch_request, bytes(garbled), version) == \
            _outcome(FetchRequest.decode_from, bytes(garbled), version)


class _Region:
    """A file region as the writer keeps it: a part of its own (storage's FileRegion, without a file)."""

    def __init__(self, size: int) -> None:
        self.size = size


def _answer_fields(rnd: random.Random, version: int, usual: bool) -> dict:
    topics = []
    for t in range(rnd.randrange(4)):
        partitions = []
        for _ in range(rnd.randrange(4)):
            p = PartitionData(partition_index=rnd.randrange(1 << 20), error_code=rnd.choice([0, 0, 1, 6]),
                              high_watermark=rnd.choice([-1, 0, rnd.getrandbits(40)]),
                              last_stable_offset=rnd.choice([-1, 7]), log_start_offset=rnd.choice([-1, 0, 3]),
                              aborted_transactions=rnd.choice([None, [], [AbortedTransaction(
                                  producer_id=9, first_offset=4)]]),
                              preferred_read_replica=rnd.choice([-1, -1, 2]),
                              records=rnd.choice([None, b"", bytes(rnd.choice([1, 100, 70_000])), _Region(83)]))
            if not usual:
                choice = rnd.randrange(4)
                if choice == 0:
                    p.diverging_epoch = EpochEndOffset(epoch=3, end_offset=rnd.choice([-1, 10]))
                elif choice == 1:
                    p.current_leader = LeaderIdAndEpoch(leader_id=2, leader_epoch=rnd.choice([-1, 7]))
                elif choice == 2:
                    p.snapshot_id = SnapshotId(end_offset=rnd.choice([-1, 4]), epoch=1)
            partitions.append(p)
        topics.append(FetchableTopicResponse(topic=f"topic-{t}ü" if version <= 12 else "",
                                             topic_id=_topic_id(rnd, version), partitions=partitions))
    endpoints = [NodeEndpoint(node_id=2, host="h", port=9092)] if not usual and rnd.random() < 0.3 else []
    return {"responses": topics, "throttle_time_ms": rnd.choice([0, 250]), "error_code": rnd.choice([0, 0, 70]),
            "session_id": rnd.choice([0, 99]), "node_endpoints": endpoints}


def _parts(message, version: int) -> list:
    w = Writer()
    message.encode_into(w, version)
    return [p if isinstance(p, _Region) else bytes(p) for p in w.parts()]


@pytest.mark.parametrize("version", VERSIONS)
def test_answers_are_written_as_the_generated_codec_writes_them(version: int) -> None:
    """The usual answers packed, the others (tagged structs, node endpoints, old versions) as generated: the same
    bytes, a file region at the same place; and a FetchAnswer equals the FetchResponse of its fields."""
    rnd = random.Random(version)
    for i in range(60):
        fields = _answer_fields(rnd, version, usual=i % 2 == 0)
        answer, response = FetchAnswer(**fields), FetchResponse(**fields)
        fast, generated = _parts(answer, version), _parts(response, version)
        assert len(fast) == len(generated)
        for a, b in zip(fast, generated, strict=True):
            assert a is b if isinstance(a, _Region) else a == b
        assert answer == response and response == answer
        assert answer._packs() or i % 2  # the usual answers are packed
