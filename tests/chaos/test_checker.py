"""The checker on hand-made histories: each promise has a history that keeps it and ones that break it."""

from __future__ import annotations

from chaos.checker import (
    check_acknowledged_read_once,
    check_all,
    check_commits_monotonic,
    check_compacted_last_value,
    check_copiers,
    check_groups_skip_nothing,
    check_high_watermark,
    check_offsets_unique,
    check_read_committed,
    faults_at,
    unavailability,
)
from chaos.history import Commit, Consumed, CopierRun, Fault, History, Origin, Produced, Watermark


def acked(value: str, offset: int, *, seq: int | None = None, at: float = 1.0, partition: int = 0, topic: str = "t",
          key: str | None = None, txn: str = "") -> Produced:
    return Produced(topic, partition, key, value, True, offset, acked=at, sent=at - 0.1, txn=txn, producer="p",
                    seq=offset if seq is None else seq)


def failed(value: str, seq: int, topic: str = "t", key: str | None = None) -> Produced:
    return Produced(topic, 0, key, value, False, -1, "timed out", producer="p", seq=seq)


def read(value: str, offset: int, reader: str = "final", partition: int = 0, topic: str = "t",
         key: str | None = None) -> Consumed:
    return Consumed(topic, partition, offset, key, value, reader)


def good_history() -> History:
    h = History()
    for i in range(5):
        h.add(acked(f"v{i}", i, at=1.0 + i))
        h.add(read(f"v{i}", i))
    return h


def test_a_clean_history_passes_every_check():
    h = good_history()
    h.add(Commit("g", "t", 0, 3, at=6.0))
    for i in range(3):
        h.add(read(f"v{i}", i, reader="group:g:m1"))
    h.add(Watermark("t", 0, 5, at=6.0))
    results = check_all(h)
    assert all(r.ok for r in results), [str(v) for r in results for v in r.violations]
    assert results[0].checked == 5


def test_a_lost_acknowledged_record_is_a_violation_with_its_fault_window():
    h = good_history()
    h.consumed = [c for c in h.consumed if c.value != "v3"]
    h.add(Fault("kill-leader", "broker 2", start=3.5, end=4.5))
    [v] = check_acknowledged_read_once(h).violations
    assert "'v3' at offset 3 is lost" in v.message
    assert [f.kind for f in v.faults] == ["kill-leader"]
    assert "kill-leader(broker 2)" in str(v)


def test_a_duplicate_and_a_moved_record_are_violations():
    h = good_history()
    h.add(read("v1", 5))  # stored twice (an idempotent retry written again)
    result = check_acknowledged_read_once(h)
    assert any("stored 2 times" in v.message for v in result.violations)
    h = good_history()
    h.consumed[2] = read("v2", 7)
    assert any("is stored at [7]" in v.message for v in check_acknowledged_read_once(h).violations)


def test_a_record_stored_twice_is_explained_only_when_one_producer_wrote_it_under_two_epochs():
    def history(*origins: Origin) -> History:
        h = History()
        h.add(acked("v0", 0))
        h.add(read("v0", 0))
        h.add(read("v0", 1))
        for o in origins:
            h.add(o)
        return h
    resent = check_acknowledged_read_once(history(Origin("t", 0, 0, 7, 0, 0), Origin("t", 0, 1, 7, 1, 0)))
    assert resent.ok and len(resent.explained) == 1
    assert "epochs [0, 1]" in resent.explained[0].message
    for origins in ([Origin("t", 0, 0, 7, 0, 0), Origin("t", 0, 1, 7, 0, 0)],  # one epoch: the broker's dedup failed
                    [Origin("t", 0, 0, 7, 0, 0), Origin("t", 0, 1, 8, 1, 0)],  # two producers
                    [Origin("t", 0, 0, 7, 0, 0)],  # a copy whose writer is not known
                    []):
        result = check_acknowledged_read_once(history(*origins))
        assert not result.explained and len(result.violations) == 1, origins
        assert "stored 2 times" in result.violations[0].message


def test_records_out_of_send_order_are_a_violation():
    h = History()
    h.add(acked("a", 1, seq=0))
    h.add(acked("b", 0, seq=1))
    h.add(read("b", 0))
    h.add(read("a", 1))
    [v] = check_acknowledged_read_once(h).violations
    assert "sent after" in v.message


def test_failed_records_may_be_absent_but_never_twice():
    h = good_history()
    h.add(failed("x", 9))
    assert check_acknowledged_read_once(h).ok
    h.add(read("x", 5))
    assert check_acknowledged_read_once(h).ok
    h.add(read("x", 6))
    assert not check_acknowledged_read_once(h).ok


def test_an_offset_reused_is_a_violation():
    h = good_history()
    h.add(acked("other", 2, seq=99))
    assert not check_offsets_unique(h).ok
    h = good_history()
    h.add(read("truncated-then-rewritten", 4, reader="group:g:m"))
    [v] = check_offsets_unique(h).violations
    assert "offset 4 holds 'v4' and 'truncated-then-rewritten'" in v.message


def test_a_group_that_commits_past_unread_acknowledged_data_skipped_it():
    h = good_history()
    for i in (0, 1, 2, 4):
        h.add(read(f"v{i}", i, reader="group:g:m"))
    h.add(Commit("g", "t", 0, 3))
    assert check_groups_skip_nothing(h).ok
    h.add(Commit("g", "t", 0, 5, at=2.0))
    [v] = check_groups_skip_nothing(h).violations
    assert "offsets 3..3" in v.message


def test_committed_offsets_going_backwards_are_a_violation():
    h = History()
    h.add(Commit("g", "t", 0, 5, at=1.0))
    h.add(Commit("g", "t", 1, 2, at=1.5))
    h.add(Commit("g", "t", 0, 5, at=2.0))
    assert check_commits_monotonic(h).ok
    h.add(Commit("g", "t", 0, 4, at=3.0))
    [v] = check_commits_monotonic(h).violations
    assert "committed 4 after 5" in v.message


def test_read_committed_must_not_see_aborted_and_must_see_committed_whole():
    h = History()
    h.add(acked("c1", 0, topic="x", txn="committed"))
    h.add(acked("c2", 1, topic="x", txn="committed"))
    h.add(acked("a1", 3, topic="x", txn="aborted"))
    h.add(read("c1", 0, reader="final-committed", topic="x"))
    h.add(read("c2", 1, reader="final-committed", topic="x"))
    assert check_read_committed(h).ok
    h.add(read("a1", 3, reader="final-committed", topic="x"))
    assert any("aborted 'a1'" in v.message for v in check_read_committed(h).violations)
    h.consumed = [c for c in h.consumed if c.value != "c2" and c.value != "a1"]
    assert any("committed 'c2' read 0 times" in v.message for v in check_read_committed(h).violations)


def test_a_transaction_of_unknown_outcome_is_read_whole_or_not_at_all():
    def unknown(value: str) -> Produced:
        return Produced("x", 0, None, value, False, txn="unknown", producer="txn.r2")
    h = History()
    for value in ("txn.r2-7-0", "txn.r2-7-1", "txn.r2-8-0", "txn.r2-8-1"):
        h.add(unknown(value))
    h.add(read("txn.r2-7-0", 0, reader="final-committed", topic="x"))
    h.add(read("txn.r2-7-1", 1, reader="final-committed", topic="x"))
    assert check_read_committed(h).ok  # 7 committed whole, 8 aborted whole: both allowed
    h.add(read("txn.r2-8-1", 3, reader="final-committed", topic="x"))
    [violation] = check_read_committed(h).violations
    assert "transaction 'txn.r2-8' of unknown outcome read partly" in violation.message
    h.add(read("txn.r2-7-1", 2, reader="final-committed", topic="x"))
    assert any("'txn.r2-7'" in v.message for v in check_read_committed(h).violations)


def test_a_copier_outputs_each_input_once():
    h = History()
    h.add(CopierRun("in", "out", inputs=["a", "b"], outputs=["B", "A"]))
    assert check_copiers(h).ok
    h.copiers[0].outputs = ["A", "B", "B"]
    [v] = check_copiers(h).violations
    assert "'B' expected 1 times, output 2 times" in v.message
    h.copiers[0].outputs = ["A"]
    assert not check_copiers(h).ok


def test_a_compacted_topic_keeps_the_last_acknowledged_value():
    h = History(compacted_topics=["c"])
    h.add(acked("k1=1", 0, topic="c", key="k1"))
    h.add(acked("k1=2", 1, topic="c", key="k1"))
    h.add(acked("k2=1", 2, topic="c", key="k2"))
    h.add(read("k1=2", 1, topic="c", key="k1"))
    h.add(read("k2=1", 2, topic="c", key="k2"))
    assert check_compacted_last_value(h).ok
    h.add(failed("k2=2", 5, topic="c", key="k2"))  # indeterminate: may have landed
    h.add(read("k2=2", 3, topic="c", key="k2"))
    assert check_compacted_last_value(h).ok
    h.consumed = [c for c in h.consumed if c.key != "k1"] + [read("k1=1", 0, topic="c", key="k1")]
    [v] = check_compacted_last_value(h).violations
    assert "c-0 key 'k1': last acknowledged 'k1=2'" in v.message
    h.consumed = [c for c in h.consumed if c.key != "k1"]
    assert not check_compacted_last_value(h).ok


def test_a_high_watermark_going_backwards_or_behind_an_ack_is_a_violation():
    h = good_history()
    h.add(Watermark("t", 0, 2, at=2.5))
    h.add(Watermark("t", 0, 5, at=9.0))
    assert check_high_watermark(h).ok
    h.add(Watermark("t", 0, 4, at=10.0))
    results = check_high_watermark(h).violations
    assert any("high watermark 5 then 4" in v.message for v in results)
    assert any("below offset 4 acknowledged before" in v.message for v in results)


def test_fault_windows_and_unavailability():
    faults = [Fault("pause", "b1", 10.0, 20.0), Fault("zk", "zk", 30.0, -1.0)]
    assert [f.kind for f in faults_at(faults, 25.0)] == ["pause"]
    assert [f.kind for f in faults_at(faults, 31.0)] == ["zk"]
    assert faults_at(faults, 9.0) == []
    h = History()
    for i, t in enumerate([9.0, 11.0, 18.0, 22.0, 23.0]):
        h.add(acked(f"v{i}", i, at=t))
    h.add(Fault("pause", "b1", 10.0, 20.0))
    assert unavailability(h) == {"pause": [7.0]}


def test_a_history_round_trips_through_json():
    h = good_history()
    h.add(Fault("kill", "b1", 1.0, 2.0))
    h.add(CopierRun("a", "b", ["x"], ["X"]))
    h.compacted_topics.append("c")
    again = History.from_json(h.to_json())
    assert again.to_json() == h.to_json()
    assert [r.ok for r in check_all(again)] == [r.ok for r in check_all(h)]


def test_compaction_is_judged_per_partition():
    h = History(compacted_topics=["c"])
    h.add(acked("k=a", 0, topic="c", key="k", partition=0))
    h.add(acked("k=b", 0, topic="c", key="k", partition=1, seq=1))
    h.add(read("k=a", 0, topic="c", key="k", partition=0))
    h.add(read("k=b", 0, topic="c", key="k", partition=1))
    assert check_compacted_last_value(h).ok


def test_unavailability_is_the_worst_partition():
    h = History()
    for i, t in enumerate([9.0, 11.0, 12.0, 13.0, 21.0]):
        h.add(acked(f"a{i}", i, at=t, partition=0))
    for i, t in enumerate([9.0, 19.0]):
        h.add(acked(f"b{i}", i, at=t, partition=1))
    h.add(Fault("kill-leader", "b1", 10.0, 15.0))
    assert unavailability(h) == {"kill-leader": [9.0]}


def test_a_stretch_without_acknowledgements_running_into_the_next_fault_counts_there():
    h = History()
    for i, t in enumerate([9.0, 11.0, 30.0]):
        h.add(acked(f"v{i}", i, at=t))
    h.add(Fault("kill-controller", "b2", 10.0, 15.0))
    h.add(Fault("pause-session", "b2", 20.0, 25.0))
    assert unavailability(h) == {"kill-controller": [9.0], "pause-session": [10.0]}


def test_an_acknowledgement_without_an_offset_must_still_be_read_back_once():
    """librdkafka acknowledges a retried batch the broker already had without its offset (offset -1)."""
    h = good_history()
    h.add(acked("v5", -1, seq=5, at=7.0))
    h.add(acked("v6", 6, seq=6, at=8.0))
    h.add(read("v6", 6))
    [v] = check_acknowledged_read_once(h).violations
    assert "'v5' at offset -1 is lost" in v.message
    h.add(read("v5", 5))
    results = check_all(h)
    assert all(r.ok for r in results), [str(v) for r in results for v in r.violations]
    h.add(read("v5", 7))
    assert any("stored 2 times" in v.message for v in check_acknowledged_read_once(h).violations)
