"""Origins are read from a real broker's segment files: producer id, epoch and sequence per offset."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.log_origins import origins, partition_dirs
from pykbroker.testing import BrokerProcess


def test_each_offset_names_the_producer_id_epoch_and_sequence_that_wrote_it(tmp_path):
    with BrokerProcess(tmp_path / "broker") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        for _ in range(2):  # two producer ids: offsets 0-5, then 6-9
            producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
            for i in range(6 if _ == 0 else 4):
                producer.produce("t", f"v{i}".encode(), partition=0)
                if i == 2:
                    producer.flush(30)  # a second batch, continuing the sequence
            assert producer.flush(30) == 0
        assert len(partition_dirs(tmp_path / "broker", "t", 0)) == 1
        found = origins(tmp_path / "broker", "t", 0, {0, 4, 5, 6, 9, 42})
    assert [o.offset for o in found] == [0, 4, 5, 6, 9]  # 42 is not stored
    first, second = {o.producer_id for o in found[:3]}, {o.producer_id for o in found[3:]}
    assert len(first) == len(second) == 1 and first != second and min(first | second) >= 0
    assert [(o.producer_epoch, o.sequence) for o in found] == [(0, 0), (0, 4), (0, 5), (0, 0), (0, 3)]
