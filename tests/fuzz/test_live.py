"""A short live-socket fuzz run: mutated client sessions over many connections beside a normal producer
and consumer; the broker survives, logs no unhandled error, and the normal records arrive intact."""

from __future__ import annotations

from fuzz.live import findings, run
from pykbroker.testing import BrokerProcess


def test_mutated_sessions_beside_normal_clients(tmp_path):
    with BrokerProcess(tmp_path, overrides={"group.initial.rebalance.delay.ms": "0"}) as broker:
        result = run(broker.bootstrap, seconds=8, concurrency=8, seed=7)
        assert not findings(broker, result), (findings(broker, result), broker.log_path)
    assert result["connections"] > 500 and result["closed_by_broker"] > 0
    assert result["normal_acked"] > 100
