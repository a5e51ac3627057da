"""``python -m chaos`` runs each campaign in a process group of its own; ``reap`` clears what a campaign
that died left behind: its processes and the mounts under its output dir."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from chaos.__main__ import group_members, reap


def test_reap_kills_the_group_left_behind_and_unmounts_under_the_run(tmp_path):
    leader = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"],
                              start_new_session=True)
    mount = tmp_path / "run" / "cluster" / "broker-1-disk"
    mount.mkdir(parents=True)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)]).returncode == 0
    try:
        deadline = time.monotonic() + 30
        while len(group_members(leader.pid)) < 2:
            assert time.monotonic() < deadline, "the leader's child never started"
            time.sleep(0.05)
        assert reap(leader.pid, tmp_path / "run") == 2
        leader.wait(10)
        assert group_members(leader.pid) == []
        if mounted:
            assert not os.path.ismount(mount)
    finally:
        if leader.poll() is None:
            leader.kill()
        if os.path.ismount(mount):
            subprocess.run(["umount", "-l", str(mount)])
    if not mounted:
        pytest.skip("mounting a tmpfs needs root: only the process half was checked")

