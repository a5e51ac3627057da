"""The single-file Java drivers of compat_tests/jvm (``AdminDriver.java``, ``ShareConsumerDriver.java``) run from
classes compiled once: ``java Driver.java`` compiles the source in memory on every run (~3.5 s of CPU each time),
which several runs of a driver in ``make test`` paid again and again."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache" / "classes"


def run_args(source: Path, jars: Path) -> list[str]:
    """The ``java`` arguments that run ``source``'s class (named as its file) against ``jars``: ``-cp`` and the class,
    compiled on first use into a folder per source and jar folder; without ``javac``, the source itself."""
    if shutil.which("javac") is None:
        return ["-cp", f"{jars}/*", str(source)]
    digest = hashlib.sha256(source.read_bytes() + str(jars.resolve()).encode()).hexdigest()[:16]
    classes = CACHE / f"{source.stem}-{digest}"
    if not (classes / f"{source.stem}.class").is_file():
        building = classes.with_name(f"{classes.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        subprocess.run(["javac", "-nowarn", "-d", str(building), "-cp", f"{jars}/*", str(source)], check=True,
                       timeout=300, stdin=subprocess.DEVNULL)
        try:
            building.rename(classes)  # whole or not at all; another session may have been first
        except OSError:
            shutil.rmtree(building, ignore_errors=True)
    return ["-cp", f"{classes}{os.pathsep}{jars}/*", source.stem]
