"""Fixtures shared by tests/ and compat_tests/: real pykbroker processes on free ports."""

from __future__ import annotations

import pytest

from pykbroker.testing import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker shared by the tests of one module; the module fails if it dies."""
    with BrokerProcess(tmp_path_factory.mktemp("broker")) as b:
        yield b
        assert b.alive, f"the broker died during the tests; its log:\n{b.log()}"


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of one's own, for tests that restart, kill or reconfigure it."""
    with BrokerProcess(tmp_path / "broker") as b:
        yield b
