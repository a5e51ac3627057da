#!/usr/bin/env bash
# Copy Apache Kafka 3.9.1 jars (see pom.xml) and their dependencies into compat_tests/jvm/kafka39/.cache/jars, once.
# Usage: compat_tests/jvm/kafka39/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# Run with: java -cp "compat_tests/jvm/kafka39/.cache/jars/*" kafka.Kafka server.properties
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../../tools/maven_jars.sh" "$here"
