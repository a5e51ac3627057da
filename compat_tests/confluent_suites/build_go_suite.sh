#!/usr/bin/env bash
# Build confluent-kafka-go's own integration tests (its kafka package, `go test -c`, cgo against the static
# librdkafka the module bundles) from the version pinned here (its go.sum hash checked), once, into the gitignored
# .cache (~13 min on 2 busy cores: its test imports pull in testcontainers' docker compose); prints the test
# binary's path (it reads testconf.json from the directory it runs in). Without Go it prints nothing and exits 0
# (the suite skips). The source comes from the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")"
SKIPPED="confluent-kafka-go's integration suite" source ../franz/find_go.sh
module=github.com/confluentinc/confluent-kafka-go/v2
version=v2.11.1
sum="h1:qGCQznyp2BxyBNyOE+M7O1YS2tI1/Y60O0jQP452zA4="
src=".cache/confluent-kafka-go-$version"
binary=".cache/confluent-kafka-go-$version.test"
if [ ! -x "$binary" ] || [ ! -d "$src/kafka" ]; then
    info=$(GOFLAGS=-mod=mod "$GO" mod download -json "$module@$version")
    dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info")
    got=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' <<<"$info")
    [ "$got" = "$sum" ] || { echo "$module@$version: checksum $got, pinned $sum" >&2; exit 1; }
    [ -d "$dir" ] || { echo "go mod download gave no directory for $module@$version" >&2; exit 1; }
    mkdir -p .cache
    rm -rf "$src" "$binary"
    # The module cache is read-only: the tests run from a writable copy of the pinned source.
    cp -r "$dir" "$src.tmp"
    chmod -R u+w "$src.tmp"
    mv "$src.tmp" "$src"
    (cd "$src/kafka" && GOFLAGS=-mod=mod "$GO" test -c -o "$OLDPWD/$binary.tmp" . >&2)
    mv "$binary.tmp" "$binary"
fi
echo "$PWD/$binary"
