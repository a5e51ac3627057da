#!/usr/bin/env bash
# Copy Apache Kafka's jars (see pom.xml) and their dependencies into compat_tests/jvm/.cache/jars, once.
# Usage: compat_tests/jvm/fetch_jars.sh [VERSION]   (prints the jar directory; a no-op when the cache is there)
# Without VERSION: the pom's Kafka version (4.1.0, the judge) into .cache/jars. With VERSION (e.g. 4.2.0, the
# judge for share groups, released there): that version into .cache/jars-VERSION.
# Run java with: java -cp "compat_tests/jvm/.cache/jars/*" kafka.tools.DumpLogSegments ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:-}"
if [[ -n "$version" && ! "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "fetch_jars.sh: VERSION must look like 4.2.0, not '$version'" >&2
    exit 2
fi
jars="$here/.cache/jars${version:+-$version}"
stamp="$here/.cache/jars${version:+-$version}.stamp"
# The stamp holds the pom's hash (and the version): editing the pom (a new Kafka version) refreshes the cache.
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)${version:+ $version}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$(ls -A "$jars" 2>/dev/null)" ]]; then
    echo "$jars"
    exit 0
fi
command -v mvn >/dev/null || { echo "fetch_jars.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
rm -rf "$jars"
mkdir -p "$jars"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$jars" -DincludeScope=runtime \
    ${version:+-Dkafka.version=$version} >&2
echo "$want" > "$stamp"
echo "$jars"
