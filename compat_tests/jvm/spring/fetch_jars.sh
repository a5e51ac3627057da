#!/usr/bin/env bash
# Copy Spring for Apache Kafka's jars (see pom.xml) and their dependencies into compat_tests/jvm/spring/.cache/jars,
# once. Usage: compat_tests/jvm/spring/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# The test compiles SpringKafkaApp.java against them: javac -cp "compat_tests/jvm/spring/.cache/jars/*" ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../../tools/maven_jars.sh" "$here"
