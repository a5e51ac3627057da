import json
import os
import uuid

import pytest

from storage.checkpoints import (
    CleanShutdownFile,
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    topic_id_from_string,
    topic_id_to_string,
)


def test_offset_checkpoint_format_round_trip(tmp_path):
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    cp = OffsetCheckpointFile(path)
    assert cp.read() == {}
    cp.write({("my-topic", 0): 42, ("__consumer_offsets", 17): 0})
    with open(path) as f:
        assert f.read() == "0\n2\nmy-topic 0 42\n__consumer_offsets 17 0\n"
    assert cp.read() == {("my-topic", 0): 42, ("__consumer_offsets", 17): 0}
    assert not os.path.exists(path + ".tmp")


@pytest.mark.parametrize("text", ["", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na b c\n", "0\n1\na 0\n"])
def test_malformed_checkpoints_are_refused(tmp_path, text):
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        OffsetCheckpointFile(str(path)).read()


def test_leader_epoch_checkpoint(tmp_path):
    path = str(tmp_path / "leader-epoch-checkpoint")
    cp = LeaderEpochCheckpointFile(path)
    cp.write([(0, 0), (3, 150)])
    with open(path) as f:
        assert f.read() == "0\n2\n0 0\n3 150\n"
    assert cp.read() == [(0, 0), (3, 150)]


def test_partition_metadata_is_kafkas_text(tmp_path):
    topic_id = uuid.UUID("a2d3f0b4-5c6e-4f70-8a9b-0c1d2e3f4a5b")
    path = str(tmp_path / "partition.metadata")
    PartitionMetadataFile(path).write(topic_id)
    with open(path) as f:
        text = f.read()
    assert text == f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}"
    assert "=" not in text and len(topic_id_to_string(topic_id)) == 22
    assert PartitionMetadataFile(path).read() == topic_id
    assert topic_id_from_string(topic_id_to_string(topic_id)) == topic_id


def test_partition_metadata_recorded_now_and_written_by_flush(tmp_path):
    """As Kafka's assignTopicId: a new partition only records its id; the scheduler writes the file."""
    topic_id = uuid.UUID("a2d3f0b4-5c6e-4f70-8a9b-0c1d2e3f4a5b")
    path = str(tmp_path / "partition.metadata")
    f = PartitionMetadataFile(path)
    f.record(topic_id)
    assert f.recorded == topic_id and not os.path.exists(path)
    f.flush()
    with open(path) as fh:
        assert fh.read() == f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}"
    assert f.recorded is None and not os.path.exists(path + ".tmp") and f.read() == topic_id
    f.flush()  # nothing recorded: nothing written
    other = uuid.uuid4()
    f.record(other)
    tmp = f.write_temp(other)
    f.record(topic_id)  # recorded again while the first write was under way: still to be written
    f.commit_temp(tmp, other)
    assert f.read() == other and f.recorded == topic_id


def test_kafka_uuid_string_matches_javas_base64_url_encoding():
    # Uuid(0x1, 0x2).toString() in Kafka is URL-safe base64 of the 16 big-endian bytes, unpadded.
    assert topic_id_to_string(uuid.UUID(int=(1 << 64) | 2)) == "AAAAAAAAAAEAAAAAAAAAAg"


def test_clean_shutdown_file(tmp_path):
    f = CleanShutdownFile(str(tmp_path))
    assert not f.exists()
    f.write(7)
    assert f.exists()
    assert json.loads((tmp_path / ".kafka_cleanshutdown").read_text()) == {"broker_epoch": "7", "version": "0"}
    assert f.read_broker_epoch() == 7
    f.delete()
    assert not f.exists()
