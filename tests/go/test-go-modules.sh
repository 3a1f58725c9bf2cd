#!/bin/sh
# `go vet` and `go test` for every Go module of the tree: the SDK (client/go: package sdk's unit
# tests), the hostile Go plugins (tests/go/hostile) and the example plugins' fixtures, the last
# two under lockd's real sandbox through LOCKCTL's `plugin test`. Offline: the only dependency,
# lockd/sdk, is the tree's own. TAP on stdout.
# usage: test-go-modules.sh GO SOURCE_DIR LOCKCTL
set -u
go=$1
src=$(realpath "$2")
export LOCKCTL
LOCKCTL=$(realpath "$3")
export CGO_ENABLED=0 GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOENV=off
n=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
step() {
        name=$1
        shift
        n=$((n + 1))
        if "$@" >"$log" 2>&1; then
                echo "ok $n - $name"
        else
                failed=$((failed + 1))
                echo "not ok $n - $name"
                sed 's/^/# /' "$log"
        fi
}
for mod in client/go tests/go/hostile examples/plugins/zip-is-encrypted \
        examples/plugins/json-is-valid examples/plugins/csv-has-column; do
        step "$mod: go vet" sh -c 'cd "$1" && "$2" vet ./...' sh "$src/$mod" "$go"
        step "$mod: go test" sh -c 'cd "$1" && "$2" test -count=1 -v ./...' sh "$src/$mod" "$go"
done
echo "1..$n"
[ "$failed" = 0 ]
