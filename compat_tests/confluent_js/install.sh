#!/usr/bin/env bash
# Builds @confluentinc/kafka-javascript's own broker tests (test/promisified run by jest, e2e run by mocha) into
# .cache/suite, once, and prints that directory. The tests are not in the npm package: they come from a checkout of
# confluentinc/confluent-kafka-javascript at COMMIT, CKJS_SOURCE=<checkout> or GitHub's codeload when it can be
# reached. librdkafka's source comes from npm's tarball of the package (pinned sha256, the one
# compat_tests/rdkafka_suite builds from), linked dynamically (its ./configure --install-deps would download
# zlib/zstd/OpenSSL from their sites); the binding is compiled by node-gyp against the system's node headers
# (/usr/include/node). Prints nothing and exits 0 without node, npm, a C++ compiler or the source: the suite is then
# skipped. Several minutes the first time (librdkafka, niced).
set -euo pipefail
cd "$(dirname "$0")"
COMMIT="5969442d12bc0fe2a1b0857374b1b36c70cda428"   # main after v1.10.0 (the tests' newest state)
PACKAGE="@confluentinc/kafka-javascript"
PACKAGE_VERSION="1.10.1"
SHA256="ada7d703bb1d3237e2292bfabf438d663b6160c9f1ac2a2406b5dc4257c81b66"
TARBALL="confluentinc-kafka-javascript-$PACKAGE_VERSION.tgz"
SUITE=".cache/suite"
STAMP="$SUITE/.built-$(sha256sum install.sh | cut -c1-16)"

for tool in node npm c++ cc make; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$tool not found: confluent-kafka-javascript's suite will be skipped" >&2
        exit 0
    fi
done
if [ -f "$STAMP" ] && [ -f "$SUITE/build/Release/confluent-kafka-javascript.node" ]; then
    echo "$PWD/$SUITE"
    exit 0
fi
mkdir -p .cache
if [ ! -f "$SUITE/package.json" ]; then
    rm -rf "$SUITE" .cache/src.part
    mkdir -p .cache/src.part
    if [ -n "${CKJS_SOURCE:-}" ]; then
        if [ -d "$CKJS_SOURCE/.git" ] || [ -f "$CKJS_SOURCE/HEAD" ]; then
            git -C "$CKJS_SOURCE" archive "$COMMIT" | tar x -C .cache/src.part
        else
            cp -r "$CKJS_SOURCE/." .cache/src.part/
        fi
    elif ! curl -fsSL --max-time 120 \
            "https://codeload.github.com/confluentinc/confluent-kafka-javascript/tar.gz/$COMMIT" \
            | tar xz --strip-components=1 -C .cache/src.part 2>/dev/null; then
        rm -rf .cache/src.part
        echo "confluent-kafka-javascript's source is not reachable (set CKJS_SOURCE to a checkout at $COMMIT):" \
             "its suite will be skipped" >&2
        exit 0
    fi
    mv .cache/src.part "$SUITE"
fi
if [ ! -f ".cache/$TARBALL" ] || ! echo "$SHA256  .cache/$TARBALL" | sha256sum -c --quiet >/dev/null 2>&1; then
    (cd .cache && rm -f "$TARBALL" && npm pack --silent "$PACKAGE@$PACKAGE_VERSION" >/dev/null)
    echo "$SHA256  .cache/$TARBALL" | sha256sum -c --quiet \
        || { echo "$TARBALL does not match its pinned sha256" >&2; rm -f ".cache/$TARBALL"; exit 1; }
fi
cd "$SUITE"
{
    if [ ! -f deps/librdkafka/configure ]; then
        rm -rf deps/librdkafka unpack && mkdir -p unpack
        tar xzf "../$TARBALL" -C unpack package/deps/librdkafka
        mv unpack/package/deps/librdkafka deps/librdkafka && rm -rf unpack
    fi
    if [ ! -d node_modules/jest ]; then
        # the root package alone: its workspaces (the schema registry's) are not needed by these tests
        node -e 'const f="package.json",p=JSON.parse(require("fs").readFileSync(f));delete p.workspaces;
                 require("fs").writeFileSync(f,JSON.stringify(p,null,2))'
        rm -f package-lock.json
        npm install --ignore-scripts --no-audit --no-fund --loglevel=error
    fi
    CKJS_LINKING=dynamic BUILD_LIBRDKAFKA=1 nice npx node-gyp rebuild --nodedir=/usr
} >&2
touch "$(basename "$STAMP")"
echo "$PWD"
