"""A tiny run of the broker bench against pykbroker, so the harness does not rot (no timing asserted)."""

from bench import broker_bench


def test_smoke_run_measures_every_librdkafka_figure(tmp_path, capsys):
    results, failures = broker_bench.main(["pykbroker"], scale=0.002, java=False, repeat=2, results_dir=tmp_path)
    assert failures == []
    measured = {metric for metric, by_broker in results.values.items() if "pykbroker" in by_broker}
    assert "start-up to first ApiVersions s" in measured
    assert "consume 1 KiB cold (librdkafka) MB/s" in measured
    assert "end-to-end latency (librdkafka, 500/s) p99 ms" in measured
    assert "broker CPU over the workloads s" in measured
    # Throughput figures are the median of the repeated runs, all of which are kept.
    runs = results.samples["consume 1 KiB cold (librdkafka) MB/s"]["pykbroker"]
    assert len(runs) == 2 and results.values["consume 1 KiB cold (librdkafka) MB/s"]["pykbroker"] == sum(runs) / 2
    assert sum("(librdkafka) MB/s" in m and m.startswith("produce") for m in measured) == 4
    assert all(v > 0 for by_broker in results.values.values() for v in by_broker.values())
    assert list(tmp_path.glob("broker-*.json")), "results JSON written"
    assert "ratio" in capsys.readouterr().out
