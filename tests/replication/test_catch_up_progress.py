"""replication.catch_up_progress: a copying follower reports where it stands, at most every interval."""

from __future__ import annotations

import logging

from replication.catch_up_progress import CatchUpProgress


def test_a_copy_reports_its_start_its_progress_with_time_left_and_its_end(caplog):
    now = [0.0]
    progress = CatchUpProgress(leader_id=1, interval_s=10.0, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="replication.catch_up")
    progress.observe(("t", 0), in_sync=True, log_end_offset=0, leader_high_watermark=100)  # in sync: nothing
    progress.observe(("t", 0), in_sync=False, log_end_offset=0, leader_high_watermark=1000)
    now[0] = 5.0
    progress.observe(("t", 0), in_sync=False, log_end_offset=100, leader_high_watermark=1000)  # within interval
    now[0] = 10.0
    progress.observe(("t", 0), in_sync=False, log_end_offset=250, leader_high_watermark=1000)
    now[0] = 30.0
    progress.observe(("t", 0), in_sync=False, log_end_offset=1000, leader_high_watermark=1000)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "t-0: copying from leader 1: at offset 0 of 1000 (1000 records behind)",
        "t-0: copying from leader 1: at offset 250 of 1000 (25.0%), 25 records/s, about 30 s left",
        "t-0: caught up with leader 1 at offset 1000 in 30.0 s",
    ]


def test_a_forgotten_partition_reports_nothing_more(caplog):
    progress = CatchUpProgress(leader_id=2, interval_s=0.0)
    caplog.set_level(logging.INFO, logger="replication.catch_up")
    progress.observe(("t", 1), in_sync=False, log_end_offset=0, leader_high_watermark=10)
    progress.forget(("t", 1))
    progress.observe(("t", 1), in_sync=True, log_end_offset=10, leader_high_watermark=10)
    assert len(caplog.records) == 1
