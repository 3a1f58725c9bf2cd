#!/bin/sh
# lockctl plugin new as an author uses it: for C and Go, protocol 1 and 2, the new directory
# builds (static), lints, and passes its own fixtures under the sandbox with `make test`, and a
# fixture changed to the wrong answer makes `make test` fail. Then what it refuses. TAP.
# usage: test-plugin-new.sh LOCKCTL SOURCE_DIR GO
set -u
lockctl=$(realpath "$1")
src=$(realpath "$2")
go=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CGO_ENABLED=0 GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOENV=off
n=0
failed=0
check() {
        name=$1
        shift
        n=$((n + 1))
        if "$@" >"$tmp/log" 2>&1; then
                echo "ok $n - $name"
        else
                failed=$((failed + 1))
                echo "not ok $n - $name"
                sed 's/^/# /' "$tmp/log"
        fi
}
fails() {
        ! "$@"
}
make_test() {
        make -C "$1" GO="$go" LOCKCTL="$lockctl" LOCKD_INCLUDE="$src/client" test
}
for lang in c go; do
        for protocol in 1 2; do
                dir=$tmp/acme.$lang-p$protocol
                check "$lang, protocol $protocol: written" \
                        "$lockctl" plugin new "acme.$lang-p$protocol" --lang $lang \
                        --protocol $protocol --dir "$dir" --sdk "$src/client/go"
                check "$lang, protocol $protocol: make test builds, lints, passes its fixtures" \
                        make_test "$dir"
                check "$lang, protocol $protocol: a static binary" \
                        sh -c 'file "$1" | grep -q "statically linked"' sh "$dir/plugin"
                check "$lang, protocol $protocol: the manifest lints" \
                        "$lockctl" plugin lint "$dir"
                # A fixture under the wrong answer: lockctl and (for Go) go test both fail.
                wrong=$(ls "$dir/fixtures/one" | grep -v '\.inputs\.json$' | head -1)
                mv "$dir/fixtures/one/$wrong" "$dir/fixtures/zero/wrong-$wrong"
                [ -e "$dir/fixtures/one/$wrong.inputs.json" ] &&
                        mv "$dir/fixtures/one/$wrong.inputs.json" \
                                "$dir/fixtures/zero/wrong-$wrong.inputs.json"
                check "$lang, protocol $protocol: a wrong fixture fails make test" \
                        fails make_test "$dir"
                check "$lang, protocol $protocol: and names it" \
                        sh -c '"$1" plugin test "$2" --fixtures | grep -q "^FAIL zero/wrong-"' \
                        sh "$lockctl" "$dir"
        done
done
check "an existing directory is never written into" \
        fails "$lockctl" plugin new acme.again --lang c --dir "$tmp/acme.c-p1"
check "a name that is not a plugin name is refused" \
        fails "$lockctl" plugin new Acme_Bad --lang c --dir "$tmp/bad"
check "a language other than c or go is refused" \
        fails "$lockctl" plugin new acme.rust --lang rust --dir "$tmp/rust"
check "a missing Go SDK is refused, and nothing is written" \
        sh -c '! "$1" plugin new acme.nosdk --lang go --dir "$2" --sdk "$2.sdk" && [ ! -e "$2" ]' \
        sh "$lockctl" "$tmp/nosdk"
echo "1..$n"
[ "$failed" = 0 ]
