"""Apache Kafka's own Cleaner (Kafka 4.1, org.apache.kafka.storage.internals.log.Cleaner.doClean, driven by
tests/storage/jvm/KafkaClean.java) and ours clean copies of the same transactional log, round after round
over the delete horizon: the ``.log`` and ``.txnindex`` files come out byte for byte the same.

The jars come from compat_tests/jvm/fetch_jars.sh, as for test_dump_log_compat. Skipped only when there is
no JDK.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

from storage import Log
from storage.cleaner import clean_log, cleanable_offsets
from wire import ControlRecordType, Record, build_batch, build_control_batch

from .conftest import FakeClock, keyed_batch, small_config

HERE = os.path.dirname(os.path.abspath(__file__))
FETCH = os.path.join(os.path.dirname(os.path.dirname(HERE)), "compat_tests", "jvm", "fetch_jars.sh")
DAY = 86_400_000
SEGMENT_BYTES = 4096

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="a JDK is needed to run Kafka's Cleaner")


@pytest.fixture(scope="module")
def kafka_clean(tmp_path_factory):
    out = subprocess.run(["bash", FETCH], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"fetch_jars.sh failed:\n{out.stderr}"
    classpath = os.path.join(out.stdout.strip().splitlines()[-1], "*")
    classes = str(tmp_path_factory.mktemp("kafka-clean"))
    subprocess.run(["javac", "-cp", classpath, "-d", classes, os.path.join(HERE, "jvm", "KafkaClean.java")],
                   check=True, capture_output=True, timeout=300)

    def run(directory: str, now: int, first_dirty: int, first_uncleanable: int) -> str:
        cmd = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classpath + os.pathsep + classes,
               "KafkaClean", directory, str(now), str(first_dirty), str(first_uncleanable), str(SEGMENT_BYTES),
               str(DAY)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    return run


def config():
    return small_config(cleanup_policy=("compact",), delete_retention_ms=DAY, min_cleanable_dirty_ratio=0.0,
                        internal_segment_bytes=SEGMENT_BYTES)


def open_log(path, clock):
    return Log.open(path, config(), time_ms=clock, had_clean_shutdown=True, producer_id_expiration_ms=30 * DAY)


def build(path, clock):
    log = open_log(path, clock)

    def data(pairs, pid=-1, seq=-1, epoch=0, txn=False):
        kwargs = dict(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn) if pid >= 0 else {}
        return log.append_as_leader(keyed_batch(pairs, timestamp=clock.now, **kwargs), 0).first_offset

    def end(pid, control_type, epoch=0):
        marker = build_control_batch(control_type, producer_id=pid, producer_epoch=epoch, timestamp=clock.now,
                                     partition_leader_epoch=0, coordinator_epoch=0)
        return log.append_as_leader(marker, 0, origin="coordinator").first_offset

    abort, commit = ControlRecordType.ABORT, ControlRecordType.COMMIT
    data([(b"t", b"committed")])
    varied = [Record(0, 5, b"e", b"old"), Record(1, 3, b"f", b"kept"), Record(2, 9, b"g", b"old")]
    log.append_as_leader(build_batch(varied, base_timestamp=clock.now), 0)  # rebuilt: e and g come back later
    data([(b"e", b"new"), (b"g", b"new")], pid=6, seq=0, txn=True)
    data([(b"t", b"aborted"), (b"u", b"aborted")], pid=5, seq=0, txn=True)
    end(5, abort)
    data([(b"c", b"c1"), (b"d", b"d1")], pid=6, seq=2, txn=True)
    end(6, commit)
    data([(b"gone", b"x")], pid=7, seq=0, txn=True)  # producer 7's last batch, aborted
    end(7, abort)
    data([(b"k", b"in-txn")], pid=9, seq=0, txn=True)
    end(9, commit, epoch=1)  # an epoch bump: the marker is producer 9's last record
    for i in range(12):
        data([(b"pad%d" % (i % 4), b"." * 150)])
    log.roll()
    data([(b"a", b"aborted across segments")], pid=3, seq=0, txn=True)
    for i in range(14):
        data([(b"qad%d" % i, b"." * 150)])
    log.roll()
    for i in range(14):
        data([(b"rad%d" % i, b"." * 150)])
    end(3, abort)
    data([(b"p3", b"later")], pid=3, seq=1)
    data([(b"c", b"c2"), (b"t", None)], pid=6, seq=4, txn=True)  # a tombstone in a transaction
    end(6, commit)
    data([(b"x", b"x1")], pid=5, seq=2, txn=True)
    end(5, commit)
    log.roll()
    data([(b"active", b"y")])
    log.maybe_increment_high_watermark(log.log_end_offset)
    log.close()


def files(path, suffix):
    return {os.path.basename(p): open(p, "rb").read() for p in sorted(glob.glob(os.path.join(path, "*" + suffix)))}


def test_our_cleaner_writes_what_kafkas_writes(tmp_path, kafka_clean):
    clock = FakeClock()
    ours, theirs = str(tmp_path / "ours" / "txn-0"), str(tmp_path / "kafka" / "txn-0")
    build(ours, clock)
    shutil.copytree(ours, theirs)
    for step in (0, 1000, DAY - 1000, 1, DAY):
        clock.advance(step)
        log = open_log(ours, clock)
        log.maybe_increment_high_watermark(log.log_end_offset)
        _, first_uncleanable, _ = cleanable_offsets(log, None, clock.now)
        result = clean_log(log, first_dirty_offset=log.log_start_offset, now_ms=clock.now)
        log.close()
        out = kafka_clean(theirs, clock.now, 0, first_uncleanable)
        assert f"next_dirty_offset {result.next_dirty_offset} " in out
        assert files(ours, ".log") == files(theirs, ".log"), f"after the cleaning at +{step} ms"
        assert files(ours, ".txnindex") == files(theirs, ".txnindex"), f"after the cleaning at +{step} ms"
