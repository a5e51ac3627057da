"""A tiny run of the cluster bench against a three-broker pykbroker cluster, so the harness does not rot (no
timing asserted). About a minute (two kill -9 stalls, a rolling restart): PYKBROKER_CLUSTER_BENCH_SLOW=1
(`make test-cluster-bench-slow`)."""

import os

import pytest

from bench import cluster_bench

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_CLUSTER_BENCH_SLOW") != "1",
                                reason="about a minute: PYKBROKER_CLUSTER_BENCH_SLOW=1 (make test-cluster-bench-slow)")


def test_smoke_run_measures_every_cluster_figure(tmp_path, capsys):
    results, failures = cluster_bench.main(["pykbroker"], scale=0.005, java=False, repeat=1, failovers=1,
                                           rolling=1, results_dir=tmp_path)
    assert failures == []
    measured = {metric for metric, by_broker in results.values.items() if "pykbroker" in by_broker}
    assert cluster_bench.JOIN in measured
    assert cluster_bench.ROLLING in measured
    assert "acks=all stall after a follower's kill -9 p50 s" in measured
    assert "acks=all stall after a leader's kill -9 p50 s" in measured
    assert "RF=3 acks=all produce 1 KiB, librdkafka MB/s" in measured
    assert all(v > 0 for by_broker in results.values.values() for v in by_broker.values())
    assert list(tmp_path.glob("cluster-*.json")), "results JSON written"
    assert "KIP-848 group of 8" in capsys.readouterr().out
