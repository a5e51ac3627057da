"""A real ZooKeeper server per test module, for the ZooKeeper tests of the metadata layer and the controller
(tests that kill or restart it get their own)."""

from __future__ import annotations

import shutil
import uuid

import pytest

from pykbroker.testing import ZooKeeperProcess


@pytest.fixture(scope="module")
def zk_server(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("ZooKeeper needs java")
    with ZooKeeperProcess(tmp_path_factory.mktemp("zk")) as server:
        yield server


@pytest.fixture
def chroot() -> str:
    """A fresh chroot per test, so tests sharing a server do not see each other's znodes."""
    return f"/t-{uuid.uuid4().hex[:12]}"
