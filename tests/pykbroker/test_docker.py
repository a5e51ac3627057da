"""pykbroker.docker and the Dockerfile: the image built from this checkout, run by testcontainers, serves
code written for testcontainers' KafkaContainer. Needs Docker; skipped with the reason where it is absent."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.pykbroker.test_testcontainers import NO_DOCKER, WRITTEN_FOR_TESTCONTAINERS

REPO = Path(__file__).resolve().parents[2]


def test_the_image_copies_every_package_the_wheel_installs():
    copied = set(re.findall(r"^COPY (\w+) \1$", (REPO / "Dockerfile").read_text(), re.M))
    setup = (REPO / "setup.py").read_text()
    layers = set(re.findall(r'"(\w+)"', re.search(r"^LAYERS = \((.*)\)$", setup, re.M).group(1)))
    assert copied == layers | {"pykbroker"}


@pytest.mark.skipif(NO_DOCKER is not None, reason=f"Docker is absent: {NO_DOCKER}")
@pytest.mark.timeout(900)
def test_the_image_serves_code_written_for_testcontainers():  # pragma: no cover - needs Docker
    subprocess.run(["docker", "build", "-t", "pykbroker:latest", str(REPO)], check=True, timeout=840)
    source = WRITTEN_FOR_TESTCONTAINERS.replace("from testcontainers.kafka import KafkaContainer",
                                                "from pykbroker.docker import PykbrokerContainer as KafkaContainer")
    namespace: dict = {}
    exec(compile(source, "written_for_testcontainers.py", "exec"), namespace)
    namespace["test_with_statement"]()
