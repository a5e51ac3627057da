"""wire.decode_produce_request gives what the generated ProduceRequest.decode_from gives, requests and errors;
wire.ProduceAnswer writes what the generated ProduceResponse.encode_into writes."""

from __future__ import annotations

import random
import uuid

import pytest

from wire import DecodeError, ProduceAnswer, Reader, Writer, decode_produce_request
from wire.messages import ProduceRequest, ProduceResponse
from wire.messages.produce_request import PartitionProduceData, TopicProduceData
from wire.messages.produce_response import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceResponse,
)


def _request(rnd: random.Random, version: int) -> ProduceRequest:
    sizes = [0, 1, 100, 16_383, 16_384, 70_000, 2_097_152]  # records lengths of one to four varint bytes
    topics = []
    for t in range(rnd.randrange(4)):
        partitions = [PartitionProduceData(index=rnd.randrange(-1, 1 << 20), records=rnd.choice(
            [None, bytes(rnd.choice(sizes))])) for _ in range(rnd.randrange(4))]
        topics.append(TopicProduceData(name="" if version >= 13 else rnd.choice(["t", f"topic-{t}", "tëst"]),
                                       topic_id=uuid.UUID(int=rnd.getrandbits(128)) if version >= 13 else uuid.UUID(int=0),
                                       partition_data=partitions))
    return ProduceRequest(transactional_id=rnd.choice([None, "", "tx-1", "tx-ü"]), acks=rnd.choice([-1, 0, 1]),
                          timeout_ms=rnd.randrange(1 << 31), topic_data=topics)


def _encoded(request: ProduceRequest, version: int) -> bytes:
    w = Writer()
    request.encode_into(w, version)
    return w.getvalue()


def _outcome(decode, data: bytes, version: int, pos: int = 0):
    r = Reader(data, pos)
    try:
        return decode(r, version), r.pos
    except DecodeError as exc:
        return "DecodeError", str(exc)


@pytest.mark.parametrize("version", [3, 8, 9, 12, 13])
def test_requests_decode_as_the_generated_codec_decodes_them(version: int) -> None:
    rnd = random.Random(version)
    for _ in range(20):
        request = _request(rnd, version)
        data = b"\x07" + _encoded(request, version)
        fast = _outcome(decode_produce_request, data, version, 1)
        assert fast == _outcome(ProduceRequest.decode_from, data, version, 1)
        assert fast[0] == request and fast[1] == len(data)


@pytest.mark.parametrize("version", [9, 13])
def test_tagged_fields_cuts_and_garbage_get_the_generated_codecs_answer(version: int) -> None:
    """Tagged fields (unknown ones are skipped), every truncation and random bytes changed: the same request or
    the same DecodeError."""
    rnd = random.Random(version)
    for _ in range(12):
        data = _encoded(_request(rnd, version), version)
        tagged = data[:-1] + b"\x01\x09\x02ab"  # the request's tagged fields: one unknown tag
        assert _outcome(decode_produce_request, tagged, version) == _outcome(ProduceRequest.decode_from, tagged, version)
        for cut in range(0, len(data), max(1, len(data) // 40)):
            assert _outcome(decode_produce_request, data[:cut], version) == \
                _outcome(ProduceRequest.decode_from, data[:cut], version)
        garbled = bytearray(data)
        for _ in range(3):
            garbled[rnd.randrange(min(len(garbled), 64))] = rnd.randrange(256)
        assert _outcome(decode_produce_request, bytes(garbled), version) == \
            _outcome(ProduceRequest.decode_from, bytes(garbled), version)


def _answer_fields(rnd: random.Random, usual: bool) -> dict:
    topics = []
    for t in range(rnd.randrange(4)):
        partitions = []
        for _ in range(rnd.randrange(4)):
            p = PartitionProduceResponse(index=rnd.randrange(1 << 20), error_code=rnd.choice([0, 0, 6, 87]),
                                         base_offset=rnd.choice([-1, 0, rnd.getrandbits(40)]),
                                         log_append_time_ms=rnd.choice([-1, 1_700_000_000_000]),
                                         log_start_offset=rnd.randrange(1 << 20))
            if not usual:
                choice = rnd.randrange(4)
                if choice == 0:
                    p.record_errors = [BatchIndexAndErrorMessage(batch_index=1, batch_index_error_message="bad")]
                elif choice == 1:
                    p.error_message = "refused"
                elif choice == 2:
                    p.current_leader = LeaderIdAndEpoch(leader_id=2, leader_epoch=rnd.choice([-1, 7]))
            partitions.append(p)
        topics.append(TopicProduceResponse(name=f"topic-{t}ü", topic_id=uuid.UUID(int=rnd.getrandbits(128)),
                                           partition_responses=partitions))
    endpoints = [NodeEndpoint(node_id=2, host="h", port=9092)] if not usual and rnd.random() < 0.3 else []
    return {"responses": topics, "throttle_time_ms": rnd.choice([0, 250]), "node_endpoints": endpoints}


@pytest.mark.parametrize("version", [9, 13])
@pytest.mark.parametrize(("topics", "partitions"), [(126, 1), (127, 1), (200, 1), (1, 126), (1, 127), (2, 300)])
def test_answers_with_counts_of_two_byte_varints_are_written_as_generated(version: int, topics: int,
                                                                          partitions: int) -> None:
    """Counts one byte holds and counts that take two (127 entries and more) give the generated encoder's bytes."""
    fields = {"throttle_time_ms": 0, "responses": [TopicProduceResponse(
        name=f"t{t}", topic_id=uuid.UUID(int=t + 1), partition_responses=[
            PartitionProduceResponse(index=p, error_code=0, base_offset=p, log_append_time_ms=-1, log_start_offset=0)
            for p in range(partitions)]) for t in range(topics)]}
    assert ProduceAnswer(**fields).encode(version) == ProduceResponse(**fields).encode(version)


@pytest.mark.parametrize("version", [3, 8, 9, 10, 12, 13])
def test_answers_are_written_as_the_generated_codec_writes_them(version: int) -> None:
    """The usual answers packed, the others (record errors, messages, leader hints, endpoints) as generated: the
    same bytes; and a ProduceAnswer equals the ProduceResponse of its fields."""
    rnd = random.Random(version)
    for i in range(40):
        fields = _answer_fields(rnd, usual=i % 2 == 0)
        answer, response = ProduceAnswer(**fields), ProduceResponse(**fields)
        assert answer.encode(version) == response.encode(version)
        assert answer == response and response == answer
        assert ProduceResponse.decode(answer.encode(version), version) == ProduceResponse.decode(
            response.encode(version), version)
