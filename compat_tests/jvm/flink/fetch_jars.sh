#!/usr/bin/env bash
# Copy Apache Flink's jars and its Kafka connector (see pom.xml) into compat_tests/jvm/flink/.cache/jars, once.
# Usage: compat_tests/jvm/flink/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# The tests compile FlinkKafkaJob.java against "compat_tests/jvm/flink/.cache/jars/*" and run it in one JVM.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../../tools/maven_jars.sh" "$here"
