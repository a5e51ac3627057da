"""A passthrough FUSE filesystem that can be turned read-only or failing while files on it are open: the
disk faults Linux will not make with a real mount (it refuses to remount read-only with files open for
writing, and this machine has no device-mapper for a dm-error/flakey target).

    python -m chaos.flaky_fs BACKING MOUNTPOINT --mode-file FILE     # serves BACKING at MOUNTPOINT

The mode file holds one word, read again every 20 ms: ``ok`` (pass everything through), ``erofs`` (what a
filesystem remounted read-only answers: every change — write, create, open for writing, truncate, rename,
unlink, mkdir, utimens, fallocate — fails with EROFS; reads pass), or ``eio`` (a dead disk: every
operation fails with EIO). ``FlakyMount`` runs it as a process, waits for the mount and unmounts it.
Needs /dev/fuse, libfuse3 (Debian ``fuse3``) and mfusepy; ``available()`` says why not when it cannot.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

MODES = ("ok", "erofs", "eio")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND | os.O_CREAT


def available() -> str | None:
    """None when a flaky mount can be made here, else why not."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        return "not root and no fusermount3 (Debian fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy with libfuse3 is not importable: {exc}"
    return None


def serve(backing: str, mountpoint: str, mode_file: str) -> None:
    import mfusepy
    from mfusepy import FuseOSError, Operations

    class Flaky(Operations):
        use_ns = True

        def __init__(self) -> None:
            self.root = os.path.realpath(backing)
            self.mode = "ok"
            threading.Thread(target=self._watch, daemon=True).start()

        def _watch(self) -> None:
            while True:
                try:
                    word = Path(mode_file).read_text().strip()
                    if word in MODES:
                        self.mode = word
                except OSError:
                    pass
                time.sleep(0.02)

        def _path(self, path: str, change: bool = False) -> str:
            if self.mode == "eio":
                raise FuseOSError(errno.EIO)
            if change and self.mode == "erofs":
                raise FuseOSError(errno.EROFS)
            return self.root + path

        def access(self, path, amode):
            if not os.access(self._path(path), amode):
                raise FuseOSError(errno.EACCES)
            return 0

        def getattr(self, path, fh=None):
            st = os.lstat(self._path(path))
            return {"st_mode": st.st_mode, "st_nlink": st.st_nlink, "st_uid": st.st_uid, "st_gid": st.st_gid,
                    "st_size": st.st_size, "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns,
                    "st_ctime": st.st_ctime_ns, "st_blocks": st.st_blocks}

        def readdir(self, path, fh):
            return [".", "..", *os.listdir(self._path(path))]

        def statfs(self, path):
            sv = os.statvfs(self._path(path))
            return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                                                "f_files", "f_flag", "f_frsize", "f_namemax")}

        def open(self, path, flags):
            return os.open(self._path(path, change=bool(flags & _WRITE_FLAGS)), flags)

        def create(self, path, mode, fi=None):
            return os.open(self._path(path, change=True), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)

        def read(self, path, size, offset, fh):
            self._path(path)
            return os.pread(fh, size, offset)

        def write(self, path, data, offset, fh):
            self._path(path, change=True)
            return os.pwrite(fh, data, offset)

        def truncate(self, path, length, fh=None):
            target = self._path(path, change=True)
            if fh is not None:
                os.ftruncate(fh, length)
            else:
                os.truncate(target, length)
            return 0

        def fallocate(self, path, mode, offset, size, fh):
            self._path(path, change=True)
            os.posix_fallocate(fh, offset, size)
            return 0

        def flush(self, path, fh):
            self._path(path)
            return 0

        def fsync(self, path, datasync, fh):
            self._path(path)
            (os.fdatasync if datasync else os.fsync)(fh)
            return 0

        def fsyncdir(self, path, datasync, fh):
            self._path(path)
            return 0

        def release(self, path, fh):
            os.close(fh)  # a close is never refused
            return 0

        def unlink(self, path):
            os.unlink(self._path(path, change=True))
            return 0

        def rmdir(self, path):
            os.rmdir(self._path(path, change=True))
            return 0

        def mkdir(self, path, mode):
            os.mkdir(self._path(path, change=True), mode)
            return 0

        def rename(self, old, new):
            os.rename(self._path(old, change=True), self._path(new, change=True))
            return 0

        def chmod(self, path, mode):
            os.chmod(self._path(path, change=True), mode)
            return 0

        def utimens(self, path, times=None):
            os.utime(self._path(path, change=True), ns=times)
            return 0

    try:
        mfusepy.FUSE(Flaky(), mountpoint, foreground=True, nothreads=False, allow_other=True)
    except RuntimeError:
        if os.path.ismount(mountpoint):
            raise  # the loop failed while mounted; unmounted (FlakyMount.close), its exit code is no news


class FlakyMount:
    """``backing`` served at ``mountpoint`` by a ``chaos.flaky_fs`` process; ``set(mode)`` flips it."""

    def __init__(self, backing: Path, mountpoint: Path, log_path: Path) -> None:
        self.backing, self.mountpoint, self.log_path = backing, mountpoint, log_path
        self.mode_file = mountpoint.parent / f".{mountpoint.name}.mode"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 20.0) -> FlakyMount:
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.set("ok")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "chaos.flaky_fs", str(self.backing), str(self.mountpoint),
                                          "--mode-file", str(self.mode_file)],
                                         cwd=Path(__file__).resolve().parent.parent, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not os.path.ismount(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"flaky filesystem not mounted at {self.mountpoint}: "
                                   f"{self.log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        return self

    def set(self, mode: str) -> None:
        """Switch to ``mode`` (``ok``, ``erofs``, ``eio``); in force within 20 ms, waited for here."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
        tmp = self.mode_file.with_suffix(".tmp")
        tmp.write_text(mode)
        os.replace(tmp, self.mode_file)
        time.sleep(0.06)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> FlakyMount:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.flaky_fs", description=__doc__.splitlines()[0])
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--mode-file", required=True)
    args = parser.parse_args(argv)
    serve(args.backing, args.mountpoint, args.mode_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
