"""The ZooKeeper tests of the metadata layer need java (ZooKeeper runs on it); the fixtures are in
tests/replication/conftest.py."""

from __future__ import annotations

import shutil

import pytest

if shutil.which("java") is None:
    pytest.skip("ZooKeeper needs java", allow_module_level=True)
