"""The tests of kafka-go's suite that fail on Apache Kafka 4.4 too, set up as compat_tests/kafkago sets it up:
they are skipped (``-test.skip``), so what runs is what passes on the judge."""

from __future__ import annotations

# package -> tests failing on a single Kafka 4.4 node (top-level name, or Test/subtest as -test.skip matches it).
KAFKA_FAILURES: dict[str, tuple[str, ...]] = {
    "kafka-go": (
        # Panic on any broker, and take the rest of the package down with them: their getOffsets helper builds a
        # ConsumerGroup by hand, without the dialer function NewConsumerGroup sets (nil pointer in coordinator()).
        "TestReaderConsumerGroup/^verify_offset_committed$",
        "TestReaderConsumerGroup/^verify_offset_committed_when_using_interval_committer$",
        "TestReaderConsumerGroup/^consumer_group_commits_on_close$",
    ),
}
# ... and more on a 3-node Kafka 4.4 cluster.
KAFKA_CLUSTER_FAILURES: dict[str, tuple[str, ...]] = {}


def skips(target: str) -> dict[str, str]:
    """package -> -test.skip pattern for ``target``."""
    failing = {p: list(names) for p, names in KAFKA_FAILURES.items()}
    if target.endswith("-cluster"):
        for p, names in KAFKA_CLUSTER_FAILURES.items():
            failing.setdefault(p, []).extend(names)
    return {p: "|".join(f"^{n}$" if "/" not in n else n for n in names) for p, names in failing.items() if names}

# Tests (package:Test) that fail now and then on Kafka 4.4 too, for a race of their own: a failure is run again.
RACY: frozenset[str] = frozenset()
