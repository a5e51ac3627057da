"""The single-file Java drivers of compat_tests/jvm (``AdminDriver.java``, ``ShareConsumerDriver.java``) run from
classes compiled once: ``java Driver.java`` compiles the source in memory on every run (~3.5 s of CPU each time),
which several runs of a driver in ``make test`` paid again and again."""

from __future__ import annotations

import os
from pathlib import Path

from pykbroker.testing import compiled_java

CACHE = Path(__file__).resolve().parent / ".cache" / "classes"


def run_args(source: Path, jars: Path) -> list[str]:
    """The ``java`` arguments that run ``source``'s class (named as its file) against ``jars``: ``-cp`` and the class,
    compiled on first use into a folder per source and jar folder; without ``javac``, the source itself."""
    classes = compiled_java(source, f"{jars.resolve()}/*", CACHE)
    if classes is None:
        return ["-cp", f"{jars}/*", str(source)]
    return ["-cp", f"{classes}{os.pathsep}{jars}/*", source.stem]
