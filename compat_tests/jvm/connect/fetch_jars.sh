#!/usr/bin/env bash
# Copy Kafka Connect's jars (see pom.xml) and their dependencies into
# compat_tests/jvm/connect/.cache/jars, once.
# Usage: compat_tests/jvm/connect/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# Run a worker with: java -cp "compat_tests/jvm/connect/.cache/jars/*" org.apache.kafka.connect.cli.ConnectDistributed w.properties
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../../tools/maven_jars.sh" "$here"
