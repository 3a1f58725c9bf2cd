#!/bin/sh
# Replays a Go plugin's fuzz corpus offline: `go test -run ^Fuzz` runs every Fuzz function of the
# module on its seeds (f.Add and testdata/fuzz/FuzzXxx/), as a normal test, no fuzzing engine.
# A module without a Fuzz function fails: each marketplace plugin has a fuzz target. PACKAGES
# (go test's, `.` by default) is `./...` for the module the plugins share (marketplace/go).
# usage: go-fuzz-replay.sh GO MODULE_DIR [PACKAGES]
set -eu
go=$1
cd "$2"
pkgs=${3:-.}
if ! grep -rqs --include='*_test.go' '^func Fuzz[A-Z0-9_a-z]*(f \*testing\.F)' .; then
        echo "$2: no func FuzzXxx(f *testing.F) in a *_test.go" >&2
        exit 1
fi
export CGO_ENABLED=0 GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOENV=off
exec "$go" test -count=1 -run '^Fuzz' -v "$pkgs"
