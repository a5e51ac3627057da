from storage.checkpoints import LeaderEpochCheckpointFile
from storage.leader_epoch import LeaderEpochFileCache


def cache(tmp_path):
    return LeaderEpochFileCache(LeaderEpochCheckpointFile(str(tmp_path / "leader-epoch-checkpoint")))


def test_assign_and_end_offsets(tmp_path):
    c = cache(tmp_path)
    assert c.end_offset_for(0, 10) == (-1, -1)
    c.assign(1, 0)
    c.assign(1, 5)  # same epoch, later offset: no change
    c.assign(3, 100)
    c.assign(5, 200)
    assert c.entries() == [(1, 0), (3, 100), (5, 200)]
    assert c.end_offset_for(5, 250) == (5, 250)
    assert c.end_offset_for(3, 250) == (3, 200)
    assert c.end_offset_for(4, 250) == (3, 200)
    assert c.end_offset_for(0, 250) == (0, 0)
    assert c.end_offset_for(6, 250) == (-1, -1)
    assert c.epoch_for_offset(150) == 3 and c.epoch_for_offset(250) == 5
    assert LeaderEpochFileCache(c.checkpoint).entries() == c.entries()


def test_assign_drops_conflicting_entries(tmp_path):
    c = cache(tmp_path)
    c.assign(1, 0)
    c.assign(2, 50)
    c.assign(3, 100)
    c.assign(2, 60)  # an older epoch at a later offset: 2 and 3 go, (2, 60) is kept
    assert c.entries() == [(1, 0), (2, 60)]


def test_truncation(tmp_path):
    c = cache(tmp_path)
    for epoch, offset in [(1, 0), (2, 50), (3, 100)]:
        c.assign(epoch, offset)
    c.truncate_from_end(100)
    assert c.entries() == [(1, 0), (2, 50)]
    c.truncate_from_start(70)
    assert c.entries() == [(2, 70)]
    assert LeaderEpochFileCache(c.checkpoint).entries() == [(2, 70)]


def test_early_entries_are_restored_below_the_earliest(tmp_path):
    c = cache(tmp_path)
    assert not c.restore_early([(0, 0)])  # an empty cache has no earliest entry to restore below
    c.assign(2, 1000)
    c.assign(3, 1500)
    assert c.restore_early([(0, 0), (1, 450), (2, 800), (4, 10)])  # (4, 10): not below the earliest epoch
    assert c.entries() == [(0, 0), (1, 450), (2, 800), (3, 1500)]
    assert not c.restore_early([(0, 0)])
    assert LeaderEpochFileCache(c.checkpoint).entries() == c.entries()
