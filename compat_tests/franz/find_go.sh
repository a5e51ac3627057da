# Sourced by the build scripts here: sets GO to the go command (on PATH or in /usr/local/go), or, without Go,
# says that $SKIPPED will be skipped and exits 0 (the caller prints nothing, so its test skips).
GO=$(command -v go || true)
[ -n "$GO" ] || { [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go; } || true
if [ -z "$GO" ]; then
    echo "go not found: $SKIPPED will be skipped" >&2
    exit 0
fi
