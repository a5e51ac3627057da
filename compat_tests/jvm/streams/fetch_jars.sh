#!/usr/bin/env bash
# Copy Kafka Streams' jars (see pom.xml) and their dependencies into compat_tests/jvm/streams/.cache/jars, once.
# Usage: compat_tests/jvm/streams/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# Run the test application with: java -cp "compat_tests/jvm/streams/.cache/jars/*" StreamsCountApp.java ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../../tools/maven_jars.sh" "$here"
