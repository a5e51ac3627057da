#!/usr/bin/env bash
# Copy MirrorMaker 2's jars (see pom.xml) and their dependencies into compat_tests/jvm/mirror/.cache/jars, once.
# Usage: compat_tests/jvm/mirror/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# Run it with: java -cp "compat_tests/jvm/mirror/.cache/jars/*" org.apache.kafka.connect.mirror.MirrorMaker mm2.properties
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../../tools/maven_jars.sh" "$here"
