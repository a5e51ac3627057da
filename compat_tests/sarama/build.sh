#!/usr/bin/env bash
# Build IBM/sarama's own functional tests (`go test -c -tags functional` of the module version pinned in
# go.mod/go.sum) and the toxiproxy server they put in front of each broker, once per version, into the gitignored
# .cache; prints the test binary's path, the sarama source directory it runs in, then the toxiproxy server's path.
# Without Go it prints nothing and exits 0 (the suite skips). The sources come from the Go module proxy, checked
# against go.sum.
set -euo pipefail
cd "$(dirname "$0")"
SKIPPED="sarama's functional suite" source ../franz/find_go.sh

# copy_module MODULE: a writable copy of the pinned MODULE's source in .cache (the module cache is read-only); prints it
copy_module() {
    local version dir src
    version=$("$GO" list -m -f '{{.Version}}' "$1")
    src=".cache/$(basename "${1%/v2}")-$version"
    if [ ! -d "$src" ]; then
        dir=$("$GO" mod download -json "$1@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
        [ -d "$dir" ] || { echo "go mod download gave no directory for $1@$version" >&2; exit 1; }
        mkdir -p .cache
        rm -rf "$src.tmp"
        cp -r "$dir" "$src.tmp"
        chmod -R u+w "$src.tmp"
        mv "$src.tmp" "$src"
    fi
    echo "$src"
}

sarama=$(copy_module github.com/IBM/sarama)
toxiproxy=$(copy_module github.com/Shopify/toxiproxy/v2)
binary="$sarama.test"
server="$toxiproxy-server"
if [ ! -x "$binary" ]; then
    (cd "$sarama" && "$GO" test -c -tags functional -o "$OLDPWD/$binary.tmp" . >&2)
    mv "$binary.tmp" "$binary"
fi
if [ ! -x "$server" ]; then
    (cd "$toxiproxy" && "$GO" build -o "$OLDPWD/$server.tmp" ./cmd/server >&2)
    mv "$server.tmp" "$server"
fi
echo "$PWD/$binary"
echo "$PWD/$sarama"
echo "$PWD/$server"
