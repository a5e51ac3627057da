"""Clock jumps of one broker's wall clock, with no hook in the broker: ``clock_shift.c`` (beside this file)
built with the system C compiler into an LD_PRELOAD library, and one shift file per broker.

    clocks = ClockShifts(root)          # builds root/clock_shift.so
    clocks.attach(node_id, broker)      # before the broker starts: its environment preloads the library
    clocks.shift(node_id, 3_600_000)    # its wall clock jumps an hour ahead (within 50 ms)
    clocks.shift(node_id, 0)            # and back

Only the wall clock (CLOCK_REALTIME, gettimeofday, time) moves; the monotonic clocks do not, as with a real
clock step (NTP stepping the clock, an operator's ``date -s``, a VM restored from a snapshot). A monotonic
clock that stands still while the world goes on is what a paused process sees; the pause faults do that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from pykbroker.testing import BrokerProcess

__all__ = ["ClockShifts", "build"]

SOURCE = Path(__file__).with_name("clock_shift.c")


def build(out_dir: Path) -> Path:
    """Compile ``clock_shift.c`` into ``out_dir/clock_shift.so`` (again only when the source is newer)."""
    lib = out_dir / "clock_shift.so"
    if lib.exists() and lib.stat().st_mtime >= SOURCE.stat().st_mtime:
        return lib
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("clock-jump needs a C compiler (cc) to build chaos/clock_shift.c; "
                           "tools/install_system_deps.sh installs gcc")
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(SOURCE), "-ldl"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"cannot build {SOURCE}: {done.stderr.strip()}")
    return lib


class ClockShifts:
    """The shift file of each attached broker, under ``root``; a shift is in milliseconds, signed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lib = build(root)
        self.files: dict[int, Path] = {}
        self.shifts: dict[int, int] = {}

    def attach(self, node_id: int, broker: BrokerProcess) -> None:
        """Preload the library into ``broker`` (from its next start) with a shift of 0."""
        path = self.root / f"clock-shift-{node_id}"
        self.files[node_id] = path
        self.shift(node_id, 0)
        broker.env.update(LD_PRELOAD=str(self.lib), CHAOS_CLOCK_SHIFT_FILE=str(path))

    def shift(self, node_id: int, ms: int) -> None:
        """Set broker ``node_id``'s wall clock to real time plus ``ms`` (it reads it within 50 ms)."""
        path = self.files[node_id]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(str(int(ms)))
        os.replace(tmp, path)  # never a half-written number
        self.shifts[node_id] = int(ms)

    def reset(self) -> None:
        for node_id in self.files:
            self.shift(node_id, 0)
