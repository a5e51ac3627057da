"""Fixtures shared by tests/ and compat_tests/: real pykbroker processes on free ports."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from pykbroker.testing import BrokerProcess

# Property tests check results, not speed: no per-example deadline (200 ms by default; a process descheduled on
# a loaded machine overran it and Hypothesis failed the test as Flaky, "Unreliable test timings") and no
# too_slow health check on generation. Tests that set their own settings keep them.
settings.register_profile("pykbroker", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pykbroker")


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
