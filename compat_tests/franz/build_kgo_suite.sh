#!/usr/bin/env bash
# Build franz-go's own kgo integration tests (pkg/kgo, `go test -c`) from the module version pinned in go.mod/go.sum,
# once per version, into the gitignored .cache; prints the test binary's path, then the package directory it runs
# in. Without Go it prints nothing and exits 0 (the suite skips). The source comes from the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")"
SKIPPED="franz-go's kgo suite" source ./find_go.sh
module=github.com/twmb/franz-go
version=$("$GO" list -m -f '{{.Version}}' "$module")
src=".cache/franz-go-$version"
binary=".cache/kgo-$version.test"
if [ ! -x "$binary" ] || [ ! -d "$src/pkg/kgo" ]; then
    # The module cache is read-only: the tests run from a writable copy of the pinned source.
    dir=$("$GO" mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$dir" ] || { echo "go mod download gave no directory for $module@$version" >&2; exit 1; }
    mkdir -p .cache
    rm -rf "$src" "$binary"
    cp -r "$dir" "$src.tmp"
    chmod -R u+w "$src.tmp"
    mv "$src.tmp" "$src"
    (cd "$src/pkg/kgo" && "$GO" test -c -o "$OLDPWD/$binary.tmp" . >&2)
    mv "$binary.tmp" "$binary"
fi
echo "$PWD/$binary"
echo "$PWD/$src/pkg/kgo"
