import os
import re
import time
import uuid

import pytest

from storage import KafkaStorageError, LogConfig, LogManager
from storage.checkpoints import OffsetCheckpointFile, PartitionMetadataFile

from .conftest import batch, small_config

DAY = 86_400_000


def manager(dirs, clock=None, **kw):
    kw.setdefault("log_cleaner_enable", False)
    m = LogManager([str(d) for d in dirs], default_config=small_config(), **({"time_ms": clock} if clock else {}), **kw)
    m.startup()
    return m


def test_create_spread_over_dirs_and_reload(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs)
    topic_id = uuid.uuid4()
    logs = [m.get_or_create_log("orders", p, topic_id) for p in range(4)]
    assert {os.path.dirname(lg.dir) for lg in logs} == {str(d) for d in dirs}
    assert m.get_or_create_log("orders", 0) is logs[0]
    for lg in logs:
        for i in range(10):
            lg.append_as_leader(batch([b"m%d" % i]), 0)
        lg.maybe_increment_high_watermark(7)
    m.shutdown()  # partition.metadata is written by the scheduler (as Kafka's), at the latest when it drains
    assert PartitionMetadataFile(os.path.join(logs[0].dir, "partition.metadata")).read() == topic_id
    for d in dirs:
        assert (d / ".kafka_cleanshutdown").exists()
        cp = OffsetCheckpointFile(str(d / "recovery-point-offset-checkpoint")).read()
        assert set(cp.values()) == {10}
        assert set(OffsetCheckpointFile(str(d / "replication-offset-checkpoint")).read().values()) == {7}
        assert set(OffsetCheckpointFile(str(d / "log-start-offset-checkpoint")).read().values()) == {0}
    m = manager(dirs)
    log = m.get_log("orders", 2)
    assert log.log_end_offset == 10 and log.high_watermark == 7 and log.topic_id == topic_id
    assert sorted(lg.partition for lg in m.all_logs()) == [0, 1, 2, 3]
    m.shutdown()


def test_the_dir_lock_keeps_a_second_broker_out(tmp_path):
    m = manager([tmp_path])
    other = LogManager([str(tmp_path)], log_cleaner_enable=False)
    with pytest.raises(KafkaStorageError, match="Failed to acquire lock"):
        other.startup()
    m.shutdown()


def test_delete_log_renames_then_removes(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("gone", 0)
    log.append_as_leader(batch([b"x"]), 0)
    region = log.read(0, 100).records
    m.delete_log("gone", 0)
    assert m.get_log("gone", 0) is None
    assert not (tmp_path / "gone-0").exists()
    m.scheduler.shutdown(drain=True)  # file.delete.delay.ms is 0 in small_config: the removal is due now
    assert not [n for n in os.listdir(tmp_path) if n.startswith("gone-0")]
    assert region.read_bytes()  # still readable
    region.release()
    m.shutdown()


def test_a_deferred_delete_renames_later_before_the_partition_is_created_again_or_at_shutdown(tmp_path):
    """delete_log(defer_rename=True) takes the log out at once (not found, appends refused) and leaves its dir;
    rename_deleted renames it, as does creating the partition again (whose new log starts empty) and shutdown."""
    m = manager([tmp_path])
    for p in (0, 1, 2):
        m.get_or_create_log("gone", p).append_as_leader(batch([b"x"]), 0)
    old = m.delete_log("gone", 0, defer_rename=True)
    m.delete_log("gone", 1, defer_rename=True)
    m.delete_log("gone", 2, defer_rename=True)
    assert m.get_log("gone", 0) is None and old.deleted and m.renames_pending == 3
    assert (tmp_path / "gone-0").exists()
    again = m.get_or_create_log("gone", 0)
    assert again is not old and again.log_end_offset == 0 and m.renames_pending == 2
    assert m.rename_deleted(budget_s=0) == 1  # at least one per call
    assert not (tmp_path / "gone-1").exists() and (tmp_path / "gone-2").exists()
    m.shutdown()
    assert not (tmp_path / "gone-2").exists() and (tmp_path / "gone-0").exists()


def test_retention_runs_from_the_manager_with_an_injected_clock(tmp_path, clock):
    m = manager([tmp_path], clock, log_retention_check_interval_ms=10**9)
    log = m.get_or_create_log("t", 0, config=small_config(retention_ms=DAY))
    for _ in range(40):
        log.append_as_leader(batch([b"x" * 200], timestamp=clock.now), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert m.cleanup_logs() == 0
    clock.advance(DAY + 1)
    assert m.cleanup_logs() > 0
    assert log.num_segments == 1
    m.shutdown()


def test_log_initial_task_delay_ms_sets_when_retention_first_runs(tmp_path, clock):
    """log.initial.task.delay.ms=0: the first retention check runs at start, not one interval later."""
    import time
    m = manager([tmp_path])
    log = m.get_or_create_log("t", 0)
    log.append_as_leader(batch([b"x"] * 10, timestamp=clock.now), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    m.shutdown()
    clock.advance(2 * DAY)
    m = LogManager([str(tmp_path)], default_config=small_config(retention_ms=DAY), time_ms=clock,
                   log_cleaner_enable=False, log_initial_task_delay_ms=0, log_retention_check_interval_ms=10**9)
    m.startup()
    log = m.get_log("t", 0)
    deadline = time.monotonic() + 10
    while log.log_start_offset != 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log.log_start_offset == 10
    m.shutdown()


def test_an_io_error_takes_only_its_dir_offline(tmp_path, monkeypatch):
    dirs = [tmp_path / "a", tmp_path / "b"]
    m = manager(dirs)
    la = m.get_or_create_log("t", 0)
    lb = m.get_or_create_log("t", 1)
    bad, good = (la, lb) if os.path.dirname(la.dir) == str(dirs[0]) else (lb, la)
    real = os.pwrite

    def failing(fd, data, pos):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(os.path.dirname(bad.dir)):
            raise OSError(5, "Input/output error")
        return real(fd, data, pos)

    monkeypatch.setattr(os, "pwrite", failing)
    with pytest.raises(KafkaStorageError):
        bad.append_as_leader(batch([b"x"]), 0)
    good.append_as_leader(batch([b"y"]), 0)
    monkeypatch.undo()
    assert m.failure_channel.is_offline(os.path.dirname(bad.dir))
    assert m.get_log(bad.topic, bad.partition) is None
    assert m.get_log(good.topic, good.partition) is good
    m.shutdown()
    assert not (tmp_path / os.path.basename(os.path.dirname(bad.dir)) / ".kafka_cleanshutdown").exists()


def test_flush_messages_moves_the_recovery_point(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("f", 0, config=small_config(flush_messages=5))
    for _ in range(12):
        log.append_as_leader(batch([b"x"]), 0)
    m.scheduler.shutdown(drain=True)
    assert log.recovery_point >= 10
    m.shutdown()


def test_topic_configs_at_startup(tmp_path):
    m = manager([tmp_path])
    m.get_or_create_log("c", 0, config=LogConfig(cleanup_policy=("compact",)))
    m.shutdown()
    m = LogManager([str(tmp_path)], log_cleaner_enable=False)
    m.startup({"c": LogConfig(cleanup_policy=("compact",), segment_ms=1234)})
    assert m.get_log("c", 0).config.segment_ms == 1234
    m.shutdown()


def test_recovery_after_an_unclean_shutdown_reports_progress_per_log_dir(tmp_path, caplog, monkeypatch):
    import logging
    import time as time_module

    import storage.log_manager as log_manager_module
    from storage.log import Log

    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs)
    topic_id = uuid.uuid4()
    for p in range(6):
        lg = m.get_or_create_log("orders", p, topic_id)
        for i in range(5):
            lg.append_as_leader(batch([b"m%d" % i]), 0)
    m.shutdown()
    for d in dirs:
        (d / ".kafka_cleanshutdown").unlink()  # as after kill -9: every log is recovered
    # One log slower than the progress interval: a line comes while it is still being recovered.
    monkeypatch.setattr(log_manager_module, "RECOVERY_PROGRESS_INTERVAL_S", 0.2)
    real_open = Log.open

    def slow_open(path, *args, **kwargs):
        if path.endswith("orders-0"):
            time_module.sleep(0.7)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(Log, "open", staticmethod(slow_open))
    with caplog.at_level(logging.INFO, logger="storage.log_manager"):
        m = manager(dirs)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Recovery of log dir")]
    for d in dirs:
        mine = [line for line in lines if f"log dir {d}:" in line]
        assert mine and mine[-1].startswith(f"Recovery of log dir {d}: 100% (3/3 logs)"), lines
    slow_dir = next(d for d in dirs if (d / "orders-0").exists())
    waiting = [line for line in lines if f"log dir {slow_dir}:" in line and "recovering orders-0" in line]
    assert waiting, lines  # said while orders-0 was still being read
    assert re.search(r": \d+% \(\d/3 logs\) in \d+\.\d s", waiting[0]), waiting[0]
    assert sorted(lg.partition for lg in m.all_logs()) == list(range(6))
    m.shutdown()


def test_a_clean_start_prints_no_recovery_progress(tmp_path, caplog):
    import logging

    m = manager([tmp_path])
    m.get_or_create_log("orders", 0, uuid.uuid4())
    m.shutdown()
    with caplog.at_level(logging.INFO, logger="storage.log_manager"):
        m = manager([tmp_path])
    assert not [r for r in caplog.records if r.getMessage().startswith("Recovery of log dir")]
    m.shutdown()


def test_shutdown_drains_thousands_of_queued_tasks_in_order(tmp_path):
    from storage.scheduler import Scheduler

    s = Scheduler("drain-test")  # not started: everything stays queued, as behind a slow disk
    ran: list[int] = []
    for i in range(5000):
        s.schedule_once(f"task-{i}", lambda i=i: ran.append(i))
    s.schedule_periodic("periodic", lambda: ran.append(-1), 0, 1000)
    started = time.monotonic()
    s.shutdown(drain=True)
    assert ran == list(range(5000))  # in submission order, periodic tasks not run by the drain
    assert time.monotonic() - started < 5  # one sort, not a scan of the queue per task


# -- several log dirs: future logs (AlterReplicaLogDirs) -------------------------------------------------------
def _two_dir_log(tmp_path, records: int = 30):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs)
    log = m.get_or_create_log("moving", 0, uuid.uuid4())
    for i in range(records):
        log.append_as_leader(batch([b"m%d" % i]), 0)
    other = str(dirs[1]) if log.parent_dir == str(dirs[0]) else str(dirs[0])
    return m, log, other


def _copy_all(current, future) -> None:
    from replication.replica_alter_log_dirs import _Truncations, copy_to_future
    assert copy_to_future(current, future, _Truncations(), 1 << 30)


def test_a_future_log_is_filled_and_swapped_in_keeping_every_record(tmp_path):
    from .conftest import read_all
    m, log, other = _two_dir_log(tmp_path)
    log.maybe_increment_high_watermark(25)
    future = m.create_future_log("moving", 0, other)
    assert future.is_future and re.fullmatch(r"moving-0\.[0-9a-f]{32}-future", os.path.basename(future.dir))
    assert m.create_future_log("moving", 0, other) is None  # already moving there
    assert m.create_future_log("moving", 0, log.parent_dir) is None  # already there
    assert m.get_log("moving", 0, is_future=True) is future and m.get_log("moving", 0) is log
    _copy_all(log, future)
    before = read_all(log)
    swapped = m.replace_current_with_future("moving", 0)
    assert swapped is future and m.get_log("moving", 0) is future and m.get_log("moving", 0, is_future=True) is None
    assert future.dir == os.path.join(other, "moving-0") and not future.is_future and future.high_watermark == 25
    assert read_all(future) == before  # (the old log is closed at once: file.delete.delay.ms is 0 here)
    future.append_as_leader(batch([b"after"]), 0)  # the renamed log keeps working in its new dir
    assert not os.path.exists(os.path.join(os.path.dirname(log.dir), "moving-0"))
    m.shutdown()
    m = manager([tmp_path / "d1", tmp_path / "d2"])
    reopened = m.get_log("moving", 0)
    assert reopened.parent_dir == other and [v for _, _, v in read_all(reopened)][-2:] == [b"m29", b"after"]
    m.shutdown()


def test_a_future_log_is_loaded_at_start_and_one_without_a_current_log_is_promoted(tmp_path):
    m, log, other = _two_dir_log(tmp_path)
    future = m.create_future_log("moving", 0, other)
    future.append_as_follower(log.read(0, 300).records.read_bytes())  # part of the copy: a kill mid-copy
    copied = future.log_end_offset
    assert 0 < copied < 30
    m.shutdown()
    m = manager([tmp_path / "d1", tmp_path / "d2"])
    assert m.get_log("moving", 0).log_end_offset == 30  # the original log is intact
    resumed = m.get_log("moving", 0, is_future=True)
    assert resumed.is_future and resumed.parent_dir == other and resumed.log_end_offset == copied
    _copy_all(m.get_log("moving", 0), resumed)
    # A kill between the swap's two renames: the current dir is already renamed for deletion.
    current = m.get_log("moving", 0)
    m.shutdown()
    os.rename(current.dir, current.dir + ".0123456789abcdef0123456789abcdef-delete")
    m = manager([tmp_path / "d1", tmp_path / "d2"])
    promoted = m.get_log("moving", 0)
    assert promoted.parent_dir == other and not promoted.is_future and promoted.log_end_offset == 30
    assert m.get_log("moving", 0, is_future=True) is None and os.path.isdir(os.path.join(other, "moving-0"))
    m.shutdown()


def test_a_preferred_log_dir_is_where_the_replica_is_created(tmp_path):
    from storage import LogDirNotFoundError
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs)
    with pytest.raises(LogDirNotFoundError):
        m.is_log_dir_online(str(tmp_path / "elsewhere"))
    assert m.is_log_dir_online(str(dirs[1]))
    m.get_or_create_log("first", 0)  # the next log would go to the emptier dir...
    emptier = str(dirs[1]) if m.get_log("first", 0).parent_dir == str(dirs[0]) else str(dirs[0])
    fuller = str(dirs[0]) if emptier == str(dirs[1]) else str(dirs[1])
    m.maybe_update_preferred_log_dir("later", 0, fuller)  # ...unless a dir was chosen for it
    assert m.get_or_create_log("later", 0).parent_dir == fuller
    m.shutdown()


def test_removing_a_future_log_and_deleting_a_partition_take_the_future_dir_too(tmp_path):
    m, log, other = _two_dir_log(tmp_path)
    m.create_future_log("moving", 0, other)
    m.remove_future_log("moving", 0)
    assert m.get_log("moving", 0, is_future=True) is None
    assert not [n for n in os.listdir(other) if n.endswith("-future")]
    m.create_future_log("moving", 0, other)
    m.delete_log("moving", 0)
    deadline = time.monotonic() + 10  # removed on the scheduler thread (file.delete.delay.ms 0)
    while [n for n in os.listdir(other) if n.startswith("moving-0")] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [n for n in os.listdir(other) if n.startswith("moving-0")]
    m.shutdown()


def test_a_dynamically_cordoned_dir_takes_no_new_log(tmp_path):
    """KIP-1066 without a restart: once d1 is cordoned every new log goes to d2; with both cordoned the manager
    is all cordoned (the broker leaves itself out of placement) and, asked anyway, still places on a dir."""
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs)
    m.update_cordoned_log_dirs([str(dirs[0])])
    assert not m.all_cordoned
    logs = [m.get_or_create_log("fresh", p, uuid.uuid4()) for p in range(3)]
    assert {os.path.dirname(lg.dir) for lg in logs} == {str(dirs[1])}
    m.update_cordoned_log_dirs([str(d) for d in dirs])
    assert m.all_cordoned
    assert os.path.dirname(m.get_or_create_log("forced", 0, uuid.uuid4()).dir) in {str(d) for d in dirs}
    m.update_cordoned_log_dirs([])
    assert not m.all_cordoned
    m.shutdown()


class _QueuedScheduler:
    """Runs the scheduled tasks when the test says so (the scheduler thread's work, made visible)."""

    def __init__(self) -> None:
        self.tasks: list = []

    def schedule_once(self, name, fn, delay_ms=0) -> None:
        self.tasks.append(fn)

    def run(self) -> None:
        while self.tasks:
            self.tasks.pop(0)()


def test_a_new_log_makes_only_its_segment_files_and_its_topic_id_follows_on_the_scheduler(tmp_path):
    """Creating a log in a directory it creates looks for nothing there: the first segment's .log, .index and
    .timeindex are made (Kafka creates the same three), the topic id is recorded and written with the leader-epoch
    checkpoint on the scheduler thread, as Kafka's assignTopicId; a different id is refused either way."""
    from storage import InconsistentTopicIdError, Log
    from storage.log_dir_failure import LogDirFailureChannel

    scheduler, failures = _QueuedScheduler(), LogDirFailureChannel()
    topic_id = uuid.uuid4()
    directory = str(tmp_path / "t-0")
    log_ = Log.open(directory, small_config(), scheduler=scheduler, topic_id=topic_id, failure_channel=failures)
    log_.assign_epoch_start_offset(0, 0)
    assert sorted(os.listdir(directory)) == ["00000000000000000000.index", "00000000000000000000.log",
                                             "00000000000000000000.timeindex"]
    assert log_.topic_id == topic_id and log_.log_end_offset == 0
    with pytest.raises(InconsistentTopicIdError):
        log_.assign_topic_id(uuid.uuid4())
    scheduler.run()
    assert PartitionMetadataFile(os.path.join(directory, "partition.metadata")).read() == topic_id
    assert "leader-epoch-checkpoint" in os.listdir(directory) and not failures.offline_dirs
    log_.append_as_leader(batch([b"a", b"b"]), 0)
    log_.flush()
    log_.close()
    again = Log.open(directory, small_config(), scheduler=scheduler)  # an existing directory is loaded
    assert again.topic_id == topic_id and again.log_end_offset == 2 and again.latest_epoch == 0
    with pytest.raises(InconsistentTopicIdError):
        again.assign_topic_id(uuid.uuid4())
    again.close()


def test_the_first_append_writes_the_topic_id_durably_before_its_records(tmp_path, monkeypatch):
    """As Kafka's append (maybeFlushMetadataFile): partition.metadata still to be written on the scheduler is written
    by the first append, before its records: its temp file fsynced, renamed, the dir fsynced, the segment still empty
    (a log with records always names its topic id; one without is stray at start). The scheduler's write, caught
    between its temp file and its rename by that append, is unharmed (each has its own temp file); later appends
    write it no more."""
    from storage import Log, checkpoints

    scheduler = _QueuedScheduler()
    topic_id = uuid.uuid4()
    directory = str(tmp_path / "t-0")
    log_ = Log.open(directory, small_config(), scheduler=scheduler, topic_id=topic_id)
    segment = os.path.join(directory, "00000000000000000000.log")
    path = os.path.join(directory, "partition.metadata")
    synced: list[tuple[str, int]] = []
    real_fsync, real_fsync_dir = os.fsync, checkpoints.fsync_dir

    def fsync(fd: int) -> None:
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), os.path.getsize(segment)))
        real_fsync(fd)

    def fsync_dir(d: str) -> None:
        synced.append((d, os.path.getsize(segment)))
        real_fsync_dir(d)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(checkpoints, "fsync_dir", fsync_dir)
    file = log_.partition_metadata_file
    real_write_temp = file.write_temp

    def write_temp_then_append(topic: uuid.UUID, suffix: str = ".tmp") -> str:
        tmp = real_write_temp(topic, suffix)
        if suffix == ".tmp":  # the scheduler's write, outside the log's lock: the first append comes now
            log_.append_as_leader(batch([b"a"]), 0)
        return tmp

    monkeypatch.setattr(file, "write_temp", write_temp_then_append)
    scheduler.run()
    assert synced[:3] == [(path + ".tmp", 0), (path + ".flush.tmp", 0), (directory, 0)]  # then the epochs' file
    assert os.path.getsize(segment) > 0 and PartitionMetadataFile(path).read() == topic_id
    assert not [n for n in os.listdir(directory) if n.endswith(".tmp")]
    synced.clear()
    log_.append_as_leader(batch([b"b"]), 0)
    scheduler.run()
    assert [p for p, _ in synced if "partition.metadata" in p] == [] and log_.log_end_offset == 2
    log_.close()
    assert Log.open(directory, small_config(), scheduler=scheduler).topic_id == topic_id


def test_a_topic_id_still_to_be_written_when_its_log_is_deleted_takes_no_log_dir_offline(tmp_path):
    m = manager([tmp_path / "d"])
    scheduler, real = _QueuedScheduler(), m.scheduler
    m.scheduler = scheduler  # the logs created now queue their background work here
    first = m.get_or_create_log("t", 0, uuid.uuid4())
    m.delete_log("t", 0)  # renamed -delete before its topic id was written
    second_id = uuid.uuid4()
    second = m.get_or_create_log("t", 0, second_id)  # the topic created again under another id
    scheduler.run()
    assert first.deleted and not m.failure_channel.offline_dirs
    assert PartitionMetadataFile(os.path.join(second.dir, "partition.metadata")).read() == second_id
    m.scheduler = real
    m.shutdown()


def test_checkpoint_writes_waiting_on_the_scheduler_are_made_at_shutdown_and_dropped_with_a_deleted_log(
        tmp_path, caplog):
    """The leader-epoch checkpoint and partition.metadata are written CHECKPOINT_WRITE_DELAY_MS later: a shutdown
    before then writes them when it closes the log; a log deleted before then is not written, quietly."""
    topic_id = uuid.uuid4()
    m = manager([tmp_path / "d"])
    kept = m.get_or_create_log("kept", 0, topic_id)
    kept.assign_epoch_start_offset(3, 0)
    gone = m.get_or_create_log("gone", 0, uuid.uuid4())
    gone.assign_epoch_start_offset(1, 0)
    m.delete_log("gone", 0)
    time.sleep(0.6)  # the delayed writes of the deleted log ran (and found its directory renamed)
    kept.append_as_leader(batch([b"a"]), 3)
    kept.assign_epoch_start_offset(4, 1)
    kept.append_as_leader(batch([b"b"]), 4)
    m.shutdown()
    assert not m.failure_channel.offline_dirs and "Uncaught exception" not in caplog.text
    m = manager([tmp_path / "d"])
    again = m.get_log("kept", 0)
    assert again.topic_id == topic_id and again.leader_epoch_cache.entries() == [(3, 0), (4, 1)]
    m.shutdown()
