#!/usr/bin/env bash
# Build librdkafka's own integration test runner (tests/test-runner) from the librdkafka source that ships in npm's
# @confluentinc/kafka-javascript tarball (pinned version and sha256 below), once, into .cache/; prints the runner's
# path. Without a C/C++ compiler it prints nothing and exits 0 (the suite is then skipped). Takes several minutes
# on two cores the first time (niced, unoptimised: the runner's speed is the brokers', not the compiler's).
set -euo pipefail
cd "$(dirname "$0")"
PACKAGE="@confluentinc/kafka-javascript"
PACKAGE_VERSION="1.10.1"   # the newest on npm; carries librdkafka 2.15.1
LIBRDKAFKA_VERSION="2.15.1"
SHA256="ada7d703bb1d3237e2292bfabf438d663b6160c9f1ac2a2406b5dc4257c81b66"
TARBALL="confluentinc-kafka-javascript-$PACKAGE_VERSION.tgz"
SRC=".cache/librdkafka-$LIBRDKAFKA_VERSION"
RUNNER="$SRC/tests/test-runner"
STAMP="$SRC/.built-$(sha256sum build.sh | cut -c1-16)"

for tool in cc c++ make; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$tool not found: librdkafka's test suite will be skipped (tools/install_system_deps.sh installs it)" >&2
        exit 0
    fi
done
mkdir -p .cache
if [ -f "$STAMP" ] && [ -x "$RUNNER" ]; then
    echo "$PWD/$RUNNER"
    exit 0
fi
if [ ! -f ".cache/$TARBALL" ] || ! echo "$SHA256  .cache/$TARBALL" | sha256sum -c --quiet >/dev/null 2>&1; then
    command -v npm >/dev/null 2>&1 || { echo "npm not found: cannot fetch $PACKAGE@$PACKAGE_VERSION" >&2; exit 1; }
    (cd .cache && rm -f "$TARBALL" && npm pack --silent "$PACKAGE@$PACKAGE_VERSION" >/dev/null)
    echo "$SHA256  .cache/$TARBALL" | sha256sum -c --quiet \
        || { echo "$TARBALL does not match its pinned sha256" >&2; rm -f ".cache/$TARBALL"; exit 1; }
fi
if [ ! -f "$SRC/configure" ]; then
    rm -rf "$SRC" .cache/unpack
    mkdir -p .cache/unpack
    tar xzf ".cache/$TARBALL" -C .cache/unpack package/deps/librdkafka
    mv .cache/unpack/package/deps/librdkafka "$SRC"
    rm -rf .cache/unpack
fi
cd "$SRC"
{
    if [ ! -f Makefile.config ]; then
        nice ./configure --disable-optimization --disable-debug-symbols --disable-gssapi --disable-curl --disable-sasl
    fi
    nice make -j2 libs
    nice make -j2 -C tests build
} >&2
touch "$(basename "$STAMP")"
echo "$PWD/tests/test-runner"
