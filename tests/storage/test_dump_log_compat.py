"""Apache Kafka's own kafka-dump-log (org.apache.kafka.tools.DumpLogSegments, Kafka 4.4 from Maven Central) reads our
segments, indexes, producer snapshots and transaction indexes without complaint and reports our offsets.

The jars come from compat_tests/jvm/fetch_jars.sh (Maven, cached in compat_tests/jvm/.cache). Skipped only
when there is no java; a missing Maven or a failed download fails the test.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

import pytest

from storage import Log, clean_log
from wire import CompressionType, build_control_batch

from .conftest import batch, keyed_batch, small_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FETCH = os.path.join(REPO, "compat_tests", "jvm", "fetch_jars.sh")
BENIGN = re.compile(r"^(SLF4J|WARNING|ERROR StatusLogger|\s*$)")

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed (needed to run "
                                                                     "Apache Kafka's kafka-dump-log)")


@pytest.fixture(scope="module")
def jars() -> str:
    out = subprocess.run(["bash", FETCH], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"fetch_jars.sh failed:\n{out.stderr}"
    return out.stdout.strip().splitlines()[-1]


def dump_log(jars: str, *args: str) -> tuple[str, str]:
    cmd = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", os.path.join(jars, "*"),
           "org.apache.kafka.tools.DumpLogSegments", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"{' '.join(args)}\nstdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}"
    complaints = [line for line in out.stderr.splitlines() if not BENIGN.match(line)]
    return out.stdout, "\n".join(_without_first_batch_quirk(complaints))


def _without_first_batch_quirk(lines: list[str]) -> list[str]:
    """Kafka 4.4's DumpLogSegments (ported to Java) reports the first batch of every segment that does not start
    at offset 0 as "Non-consecutive offsets in <file>  -1 is followed by <offset>" (-1: no batch before it): not a
    finding, whoever wrote the log."""
    out: list[str] = []
    for line in lines:
        if re.fullmatch(r"\s+-1 is followed by \d+", line) and out and out[-1].startswith("Non-consecutive offsets"):
            out.pop()
            continue
        out.append(line)
    return out


def build_log(directory: str) -> Log:
    log = Log.open(directory, small_config(internal_segment_bytes=2048, index_interval_bytes=256,
                                           segment_index_bytes=4096))
    ts = 1_700_000_000_000
    for i in range(40):
        log.append_as_leader(batch([b"value-%d" % i] * 3, keys=[b"key-%d" % i] * 3, timestamp=ts + i), 4)
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD):
        log.append_as_leader(keyed_batch([(b"c", b"compressed " * 30)] * 5, compression=codec, timestamp=ts + 50), 4)
    log.assign_epoch_start_offset(5, log.log_end_offset)
    for seq in range(0, 30, 3):
        log.append_as_leader(batch([b"idem"] * 3, producer_id=77, producer_epoch=2, base_sequence=seq,
                                   timestamp=ts + 60 + seq), 5)
    log.append_as_leader(batch([b"txn"] * 2, producer_id=88, producer_epoch=0, base_sequence=0,
                               is_transactional=True, timestamp=ts + 100), 5)
    log.append_as_leader(build_control_batch(0, producer_id=88, producer_epoch=0, timestamp=ts + 101,
                                             partition_leader_epoch=5, coordinator_epoch=3), 5, origin="coordinator")
    for i in range(30):
        log.append_as_leader(batch([b"tail-%d" % i], timestamp=ts + 200 + i), 5)
    log.maybe_increment_high_watermark(log.log_end_offset)
    return log


def test_kafka_dump_log_reads_our_segments(jars, tmp_path):
    directory = str(tmp_path / "compat-0")
    log = build_log(directory)
    end = log.log_end_offset
    segments = [(s.base_offset, s.read_next_offset()) for s in log.segments.snapshot()]
    assert len(segments) > 3
    log.close()  # trims the active segment's indexes and writes a producer snapshot, as Kafka's close does

    logs = sorted(glob.glob(os.path.join(directory, "*.log")))
    extra = sorted(glob.glob(os.path.join(directory, "*.snapshot")) + glob.glob(os.path.join(directory, "*.txnindex")))
    stdout, complaints = dump_log(jars, "--deep-iteration", "--print-data-log", "--files", ",".join(logs + extra))
    assert complaints == ""
    assert "isvalid: false" not in stdout
    # every batch Kafka sees is where we put it: base offsets, counts, epochs, compression
    base_offsets = [int(m) for m in re.findall(r"^baseOffset: (\d+) ", stdout, re.M)]
    assert base_offsets == sorted(base_offsets) and base_offsets[0] == 0
    last_offsets = [int(m) for m in re.findall(r"^baseOffset: \d+ lastOffset: (\d+) ", stdout, re.M)]
    assert last_offsets[-1] == end - 1
    record_offsets = [int(m) for m in re.findall(r"^\| offset: (\d+) ", stdout, re.M)]
    assert record_offsets == list(range(end))
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        assert f"compresscodec: {codec}" in stdout
    assert "partitionLeaderEpoch: 4" in stdout and "partitionLeaderEpoch: 5" in stdout
    assert "producerId: 77 producerEpoch: 2" in stdout
    assert re.search(r"isTransactional: true isControl: true", stdout)
    assert "endTxnMarker: ABORT coordinatorEpoch: 3" in stdout
    assert "| offset: 0 CreateTime: 1700000000000 keySize: 5 valueSize: 7" in stdout
    assert "payload: value-0" in stdout
    for base, _nxt in segments:
        assert f"Log starting offset: {base}" in stdout
    # the producer snapshot written at close, and the aborted transaction
    assert re.search(r"producerId: 77 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
                     r"OptionalLong.empty lastTimestamp: \d+ firstSequence: 27 lastSequence: 29", stdout)
    assert re.search(r"version: 0 producerId: 88 firstOffset: \d+ lastOffset: \d+ lastStableOffset: \d+", stdout)

    indexes = sorted(glob.glob(os.path.join(directory, "*.index")) + glob.glob(os.path.join(directory, "*.timeindex")))
    stdout, complaints = dump_log(jars, "--verify-index-only", "--files", ",".join(indexes))
    assert complaints == "", complaints
    stdout, complaints = dump_log(jars, "--index-sanity-check", "--files", ",".join(indexes))
    assert complaints == ""
    assert stdout.count("passed sanity check") + stdout.count("is empty") == len(indexes)
    stdout, complaints = dump_log(jars, "--files", ",".join(i for i in indexes if i.endswith(".index")))
    assert complaints == ""
    assert re.search(r"^offset: \d+ position: \d+$", stdout, re.M)


def test_kafka_dump_log_reads_compacted_segments(jars, tmp_path, clock):
    directory = str(tmp_path / "compacted-0")
    log = Log.open(directory, small_config(cleanup_policy=("compact",), internal_segment_bytes=8192,
                                           min_cleanable_dirty_ratio=0.0), time_ms=clock)
    for i in range(200):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % 9), b"v%d" % i + b"." * 40)],
                                         compression=CompressionType.GZIP, timestamp=clock.now + i), 0)
    log.append_as_leader(keyed_batch([(b"k0", None), (b"k1", None)], timestamp=clock.now + 200), 0)  # tombstones
    for i in range(200):
        log.append_as_leader(keyed_batch([(b"later%d" % i, b"w" * 40)], timestamp=clock.now + 201 + i), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert clean_log(log).segments_cleaned > 0
    log.close()
    files = sorted(glob.glob(os.path.join(directory, "*.log")))
    stdout, complaints = dump_log(jars, "--deep-iteration", "--files", ",".join(files))
    # compaction leaves offset gaps, which the tool reports (as for Kafka's own compacted logs); nothing else
    other = [line for line in complaints.splitlines()
             if not line.startswith("Non-consecutive offsets") and not re.match(r"\s+\d+ is followed by \d+", line)]
    assert other == []
    assert "isvalid: false" not in stdout
    assert re.search(r"deleteHorizonMs: OptionalLong\[\d+\]", stdout)
    indexes = sorted(glob.glob(os.path.join(directory, "*.index")) + glob.glob(os.path.join(directory, "*.timeindex")))
    _, complaints = dump_log(jars, "--verify-index-only", "--files", ",".join(indexes))
    assert complaints == ""
