"""Client batches whose records are garbled under a valid CRC, produced raw to a real pykbroker: each gets Kafka
4.4's answer (garbled_batches.KAFKA_44), nothing of a refused batch is stored, and a real client still reads the
partition after every refusal."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from pykbroker.testing import RawClient
from tests.clients import read_kafka_python
from tests.pykbroker.handlers.garbled_batches import (
    CASES,
    KAFKA_44,
    RECORD_ERRORS,
    batch,
    garbled_records,
    good,
    produce,
)
from wire import ErrorCode
from wire.messages import CreateTopicsRequest
from wire.messages.create_topics_request import CreatableTopic


def test_each_garbled_batch_gets_kafkas_answer_and_none_is_stored(broker):
    with RawClient(broker.bootstrap) as c:
        got = garbled_records(c, prefix="gr", topic_per_case=True)
    for name in CASES:
        code, message, record_errors = got[name]  # type: ignore[misc]
        high_watermark, stored = got[f"{name} read back"]  # type: ignore[misc]
        assert code == KAFKA_44[name], name
        if name in RECORD_ERRORS:
            assert [index for index, _ in record_errors] == RECORD_ERRORS[name], name
            assert message.startswith("One or more records have been rejected"), name
        else:
            assert (message, record_errors) == (None, []), name
        if code != ErrorCode.NONE:
            assert (high_watermark, stored) == (0, []), name
        else:
            assert high_watermark == 3, name
            if name.startswith("lz4_topic"):  # rebuilt in lz4: renumbered, as Kafka's rebuild does
                assert [offset for offset, _ in stored] == [0, 1, 2], name


def test_a_client_reads_the_partition_after_every_refused_batch(broker):
    """Refused batches interleaved with good ones on one partition: the broker answers each, and a real consumer
    reads exactly the good records, in order."""
    refused = [data for name, (kind, data) in CASES.items() if kind == "plain" and KAFKA_44[name] != ErrorCode.NONE]
    with RawClient(broker.bootstrap) as c:
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name="gr-readable", num_partitions=1, replication_factor=1)],
                                      timeout_ms=10_000), 7)
        c.wait_for_topics("gr-readable")
        for data in refused:
            assert produce(c, "gr-readable", data)[0] != ErrorCode.NONE
            assert produce(c, "gr-readable", batch(good(3), 3))[0] == ErrorCode.NONE
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition("gr-readable", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        want = [(3 * i + j, b"k", b"value-%d" % j) for i in range(len(refused)) for j in range(3)]
        seen = [(m.offset, m.key, m.value) for m in read_kafka_python(consumer, len(want))]
    finally:
        consumer.close()
    assert seen == want
