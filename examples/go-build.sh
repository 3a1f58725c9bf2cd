#!/bin/sh
# Builds the Go plugin whose module is DIR into OUT, static as lockd needs it (CGO_ENABLED=0),
# offline (the only dependency, lockd/sdk, is replaced by the tree's client/go).
# usage: go-build.sh GO DIR OUT
set -eu
go=$1
out=$(realpath -m "$3")
cd "$2"
CGO_ENABLED=0 GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOENV=off exec "$go" build -trimpath -o "$out" .
