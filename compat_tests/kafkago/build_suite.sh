#!/usr/bin/env bash
# Build segmentio/kafka-go's own tests (`go test -c`) of the packages that talk to a broker (the root package kafka,
# compress, sasl, topics) from the module version pinned in go.mod/go.sum (checked against go.sum, which the Go
# checksum database vouched for), once per version, into the gitignored .cache; prints the directory holding the
# test binaries (one per package, named after it), then the source directory they run in. Without Go it prints
# nothing and exits 0 (the suite skips). The source comes from the Go module proxy, unmodified.
set -euo pipefail
cd "$(dirname "$0")"
SKIPPED="kafka-go's test suite" source ../franz/find_go.sh
module=github.com/segmentio/kafka-go
version=$("$GO" list -m -f '{{.Version}}' "$module")
src=".cache/kafka-go-$version"
bin=".cache/kafka-go-$version.tests"
if [ ! -f "$bin/.done" ] || [ ! -d "$src" ]; then
    # The module cache is read-only: the tests run from a writable copy of the pinned source.
    dir=$("$GO" mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$dir" ] || { echo "go mod download gave no directory for $module@$version" >&2; exit 1; }
    mkdir -p .cache
    rm -rf "$src" "$bin" "$bin.tmp"
    cp -r "$dir" "$src.tmp"
    chmod -R u+w "$src.tmp"
    mv "$src.tmp" "$src"
    mkdir -p "$bin.tmp"
    # Its own go.mod/go.sum pin its dependencies; -mod=readonly refuses anything they do not vouch for (today's go
    # only wants its "go 1.23" line spelled "go 1.23.0").
    sed -i 's/^go \([0-9]*\.[0-9]*\)$/go \1.0/' "$src/go.mod"
    (cd "$src" && GOFLAGS=-mod=readonly "$GO" test -c -o "$OLDPWD/$bin.tmp/" . ./compress ./sasl ./topics >&2)
    touch "$bin.tmp/.done"
    mv "$bin.tmp" "$bin"
fi
echo "$PWD/$bin"
echo "$PWD/$src"
