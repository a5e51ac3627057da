"""Tiered storage, the issue's measurement: ``TIERED_BENCH_MB`` (256; the issue's is 2048) written to a topic whose
local retention is ``TIERED_BENCH_LOCAL_MB`` (1/16 of it by default; the issue's is 100) with 4 MiB segments, on pykbroker and on Apache Kafka 4.4 with its LocalTieredStorage
(compat_tests/jvm/tiered), both tiering to a directory, one after the other with the same client:

- local disk used by the partition and bytes in the remote store once copying settled;
- consumer throughput from offset 0 (nearly all of it remote) and from the local log start (the local tail, the
  best of three reads: it is short);
- produce throughput to the tiered topic while it is being copied, against a topic without tiering.

    python -m bench tiered            # or: make bench-tiered
    TIERED_BENCH_MB=2048 TIERED_BENCH_LOCAL_MB=100 make bench-tiered   # the issue's measurement
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.broker_bench import confluent_consume, confluent_produce
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.remote_storage import LOCAL_TIERED_STORAGE
from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import ListOffsetsRequest
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

RECORD = 1024
SEGMENT = 4 << 20
TAIL_READS = 3
COMMON = {"remote.log.storage.system.enable": "true", "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
          "remote.log.manager.task.interval.ms": "500", "log.retention.check.interval.ms": "500",
          "log.initial.task.delay.ms": "0", "log.segment.delete.delay.ms": "0",
          "rlmm.config.remote.log.metadata.topic.num.partitions": "3"}


def dir_bytes(path: Path) -> int:
    """Disk used (allocated blocks: preallocated index files count for what they hold, as du shows)."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def list_offset(bootstrap: str, topic: str, timestamp: int) -> int:
    with RawClient(bootstrap) as c:
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
        return c.request(request, 9).topics[0].partitions[0].offset


def measure(name: str, bootstrap: str, log_dir: Path, remote_dir: Path, total_mb: int,
            local_mb: float) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient, NewTopic
    records = total_mb * (1 << 20) // RECORD
    local_bytes = int(local_mb * (1 << 20))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic, configs in (("plain", {}), ("tiered", {"remote.storage.enable": "true",
                                                      "local.retention.bytes": str(local_bytes)})):
        admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": str(SEGMENT), **configs})])[topic] \
            .result(120)
    out: dict[str, float] = {}
    out["produce MB/s, no tiering"] = confluent_produce(bootstrap, "plain", records, RECORD, "all", "none")["mb_per_s"]
    out["produce MB/s, tiered"] = confluent_produce(bootstrap, "tiered", records, RECORD, "all", "none")["mb_per_s"]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # settled: the local log holds about its retention, the rest is remote
        if dir_bytes(log_dir / "tiered-0") <= local_bytes + 3 * SEGMENT:
            break
        time.sleep(1.0)
    time.sleep(2.0)
    out["local MB"] = dir_bytes(log_dir / "tiered-0") / 1e6
    out["remote MB"] = dir_bytes(remote_dir) / 1e6
    local_start = list_offset(bootstrap, "tiered", -4)
    out["consume MB/s from 0"] = confluent_consume(bootstrap, "tiered", records)["mb_per_s"]
    # The tail is short (the local retention): one read of it is a second or less, where the client's own pace
    # and the machine's load swing it by ±30% (the broker spends ~0.03 s of CPU per 100 MB of it, sendfile, the
    # same on a topic without tiering), so the best of TAIL_READS is reported.
    out["consume MB/s from the local tail"] = max(
        confluent_consume(bootstrap, "tiered", records - local_start, local_start)["mb_per_s"]
        for _ in range(TAIL_READS))
    print(f"  {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in out.items()), flush=True)
    return out


def tiered_jars() -> Path | None:
    import shutil
    import subprocess
    if shutil.which("java") is None:
        return None
    here = Path(__file__).resolve().parents[1] / "compat_tests" / "jvm" / "tiered" / "fetch_jars.sh"
    try:
        out = subprocess.run(["bash", str(here)], capture_output=True, text=True, timeout=900, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return Path(out.stdout.strip().splitlines()[-1])


def main() -> None:
    total_mb = int(os.environ.get("TIERED_BENCH_MB", "256"))
    local_mb = float(os.environ.get("TIERED_BENCH_LOCAL_MB", total_mb / 16))
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="tiered-bench-") as tmp:
        root = Path(tmp)
        with BrokerProcess(root / "pykbroker", overrides={**COMMON, "rsm.config.dir": str(root / "p-remote")}) as b:
            results["pykbroker"] = measure("pykbroker", b.bootstrap, root / "pykbroker" / "logs", root / "p-remote",
                                           total_mb, local_mb)
        jars = tiered_jars()
        if jars is None:
            print("  Kafka 4.4 with LocalTieredStorage unavailable (java or Maven missing): pykbroker only")
        else:
            kafka = KafkaBroker(jars, root / "kafka", quick_start=False, overrides={
                **COMMON, "rsm.config.dir": str(root / "k-remote"),
                "remote.log.metadata.manager.listener.name": "PLAINTEXT",
                "rlmm.config.remote.log.metadata.topic.replication.factor": "1"})
            with kafka:
                results["kafka"] = measure("kafka 4.4", kafka.bootstrap, root / "kafka" / "logs", root / "k-remote",
                                           total_mb, local_mb)
    print(f"  {total_mb} MiB written, local retention {local_mb:.0f} MiB, 4 MiB segments, 1 KiB records")
    names = list(results["pykbroker"])
    for key in names:
        ours = results["pykbroker"][key]
        line = f"  {key:36s} pykbroker {ours:9.1f}"
        if "kafka" in results:
            theirs = results["kafka"][key]
            line += f"   kafka {theirs:9.1f}   ratio {ours / theirs if theirs else float('nan'):.2f}"
        print(line)
    ours = results["pykbroker"]
    print(f"  pykbroker produce while tiering / without: {ours['produce MB/s, tiered'] / ours['produce MB/s, no tiering']:.2f}")
