"""A ``KAFKA_PATH`` for librdkafka's test runner built from Kafka 4.4's jars (Maven Central; compat_tests/jvm).

The suite calls a Kafka distribution's scripts: ``$KAFKA_PATH/bin/kafka-topics.sh`` (test_kafka_topics: 0045,
0052, 0077), ``kafka-acls.sh`` (0109, 0115, 0119), ``kafka-run-class.sh`` (tests/java/run-class.sh: 0098's and
0113's Java clients, compiled by ``make java`` against ``$KAFKA_PATH/libs/kafka-clients-*.jar``). Maven Central has
no distribution tarball, so this writes one's shape into the gitignored ``.cache``: ``libs`` links to the jars and
each ``bin`` script runs the main class the real script runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).parent

# bin script -> the main class Kafka 4.4's script of that name runs.
SCRIPTS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-acls.sh": "org.apache.kafka.tools.AclCommand",
    "kafka-configs.sh": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups.sh": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
}

# As Kafka's kafka-run-class.sh: $CLASSPATH first (run-class.sh puts tests/java there), a 256 MB heap
# (KAFKA_HEAP_OPTS' default), tool logging at WARN.
RUN_CLASS = """#!/usr/bin/env bash
# Written by compat_tests/rdkafka_suite/kafka_path.py: runs a class from Kafka's jars as bin/kafka-run-class.sh does.
base="$(cd "$(dirname "${{BASH_SOURCE[0]}}")/.." && pwd)"
exec java ${{KAFKA_HEAP_OPTS:--Xmx256m}} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \\
    -Dlog4j2.configurationFile="$base/config/tools-log4j2.properties" \\
    -cp "${{CLASSPATH:+$CLASSPATH:}}$base/libs/*" "$@"
"""
SCRIPT = """#!/usr/bin/env bash
exec "$(dirname "${{BASH_SOURCE[0]}}")/kafka-run-class.sh" {main} "$@"
"""
LOG4J = ("rootLogger.level=WARN\nrootLogger.appenderRef.stderr.ref=STDERR\nappender.stderr.type=Console\n"
         "appender.stderr.name=STDERR\nappender.stderr.target=SYSTEM_ERR\nappender.stderr.layout.type=PatternLayout\n"
         "appender.stderr.layout.pattern=%m%n\n")


def kafka_path(jars: Path, root: Path | None = None) -> Path:
    """The KAFKA_PATH for ``jars`` (written once under ``.cache``; rewritten when the scripts change)."""
    root = root or HERE / ".cache" / f"kafka-path-{jars.name.removeprefix('jars-')}"
    files = {f"bin/{name}": SCRIPT.format(main=main) for name, main in SCRIPTS.items()}
    files["bin/kafka-run-class.sh"] = RUN_CLASS.format()
    files["config/tools-log4j2.properties"] = LOG4J
    for name, text in files.items():
        path = root / name
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.chmod(0o755)
    libs = root / "libs"
    if not libs.is_symlink() or libs.resolve() != jars.resolve():
        if libs.is_symlink() or libs.is_file():
            libs.unlink()
        elif libs.exists():
            shutil.rmtree(libs)
        libs.symlink_to(jars.resolve(), target_is_directory=True)
    return root
