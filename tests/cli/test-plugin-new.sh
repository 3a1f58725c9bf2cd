#!/bin/sh
# lockctl plugin new as an author uses it: for C and Go, protocol 1 and 2, the new directory
# builds (static), lints, passes the import check and its own fixtures under the sandbox with a
# plain `make test` from the build tree (lockplugin.h, the Go SDK and this lockctl found with no
# variable set), and a fixture changed to the wrong answer makes `make test` fail. Then what it
# refuses, --help, and the import check (lint --source) and the memory warning (lint) on plugins
# that break them. TAP.
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
# No LOCKCTL or LOCKD_INCLUDE: the Makefile written by a build tree's lockctl finds both.
make_test() {
        make -C "$1" GO="$go" test
}
for lang in c go; do
        for protocol in 1 2; do
                dir=$tmp/acme.$lang-p$protocol
                # Protocol 1 finds the tree's Go SDK itself; protocol 2 is given it.
                sdk_arg=
                [ "$protocol" = 2 ] && sdk_arg="--sdk $src/client/go"
                # shellcheck disable=SC2086
                check "$lang, protocol $protocol: written" \
                        "$lockctl" plugin new "acme.$lang-p$protocol" --lang $lang \
                        --protocol $protocol --dir "$dir" $sdk_arg
                check "$lang, protocol $protocol: the Makefile runs this lockctl" \
                        grep -qx "LOCKCTL ?= $lockctl" "$dir/Makefile"
                check "$lang, protocol $protocol: make test builds, lints, passes its fixtures" \
                        make_test "$dir"
                check "$lang, protocol $protocol: a static binary" \
                        sh -c 'file "$1" | grep -q "statically linked"' sh "$dir/plugin"
                check "$lang, protocol $protocol: the manifest lints" \
                        "$lockctl" plugin lint "$dir"
                check "$lang, protocol $protocol: the import check says ok" \
                        sh -c '[ "$("$1" plugin lint --source "$2")" = ok ]' sh "$lockctl" "$dir"
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
check "the Go SDK of the build tree is the one go.mod replaces to" \
        grep -qx "replace lockd/sdk => $src/client/go" "$tmp/acme.go-p1/go.mod"
check "plugin new --help lists every option" \
        sh -c 'out=$("$1" plugin new --help) && for o in --lang --protocol --dir --sdk; do
                printf "%s" "$out" | grep -q -- "$o" || exit 1; done' sh "$lockctl"

# The import check refuses what the sandbox would: a C plugin that calls socket() and system()
# (linked as the Makefile links, with its relocations), a stripped one, and Go imports.
lint_src() { # SRC_DIR RELEASE_DIR|"" WANT_EXIT WANT_LINE...
        d=$1 rel=$2 want=$3
        shift 3
        if [ -n "$rel" ]; then
                "$lockctl" plugin lint --source "$d" "$rel" >"$tmp/lint.out" 2>&1
        else
                "$lockctl" plugin lint --source "$d" >"$tmp/lint.out" 2>&1
        fi
        rc=$?
        cat "$tmp/lint.out"
        [ "$rc" = "$want" ] || { echo "exit $rc, not $want"; return 1; }
        for line in "$@"; do
                grep -qxF -- "$line" "$tmp/lint.out" || { echo "no line: $line"; return 1; }
        done
}
evil=$tmp/acme.c-evil
mkdir -p "$evil"
cat >"$evil/plugin.c" <<'EOF2'
#include <stdlib.h>
#include <sys/socket.h>
#include "lockplugin.h"
int main(void) {
        lp_answer(socket(AF_INET, SOCK_STREAM, 0) >= 0 || system("true") == 0);
}
EOF2
cp "$tmp/acme.c-p1/Makefile" "$tmp/acme.c-p1/plugin.toml" "$evil/"
check "C: a plugin calling socket() and system() builds" make -C "$evil" plugin
check "C: lint --source refuses socket and system" \
        lint_src "$evil" "" 1 "error: SYMBOL_DENIED: socket" "error: SYMBOL_DENIED: system"
check "C: and names nothing of the C library's own (no clone, no dlopen)" \
        sh -c '! grep -q -e clone -e dlopen "$1"' sh "$tmp/lint.out"
check "C: the binary in RELEASE_DIR is the one checked" \
        lint_src "$evil" "$tmp/acme.c-p1" 0 ok
mkdir -p "$tmp/release"
cp "$evil/plugin" "$tmp/release/plugin"
check "C: ... and a refused one there is refused" \
        lint_src "$tmp/acme.c-p1" "$tmp/release" 1 "error: SYMBOL_DENIED: socket"
strip "$tmp/release/plugin"
check "C: a stripped binary is an error" lint_src "$tmp/acme.c-p1" "$tmp/release" 1
check "C: ... named ELF_STRIPPED" grep -q "^error: ELF_STRIPPED: " "$tmp/lint.out"
goevil=$tmp/acme.go-p1
mkdir -p "$goevil/sub"
cat >"$goevil/extra.go" <<'EOF2'
package main

import (
	h "net/http"
	_ "unsafe"
	"acme.go-p1/sub"
	`os/exec`
)
import . "net\x2furl"

var _ = h.Get
var _ = sub.X
EOF2
printf 'package sub\n\nimport "syscall"\n\nvar X = syscall.Getpid\n' >"$goevil/sub/sub.go"
check "Go: lint --source refuses imports outside the allow-list, in every package" \
        lint_src "$goevil" "" 1 "error: IMPORT_DENIED: net/http (extra.go:4:4)" \
        "error: IMPORT_DENIED: unsafe (extra.go:5:4)" "error: IMPORT_DENIED: os/exec (extra.go:7:2)" \
        "error: IMPORT_DENIED: net/url (extra.go:9:10)" "error: IMPORT_DENIED: syscall (sub/sub.go:3:8)"
check "Go: the module's own package and the SDK are allowed" \
        sh -c '! grep -q -e "acme.go-p1/sub" -e "lockd/sdk" "$1"' sh "$tmp/lint.out"
rm -r "$goevil/extra.go" "$goevil/sub"
printf 'package main\n\nimport "os/exec"\n' >"$goevil/main_test.go"
check "Go: a test file is not built into the plugin, and not checked" lint_src "$goevil" "" 0 ok

# lint DIR warns when the binary's writable segments exceed the manifest's memory: such a run
# dies before main as signal:SIGSEGV.
big=$tmp/acme.c-big
mkdir -p "$big"
sed 's/memory = "64MiB"/memory = "16MiB"/' "$tmp/acme.c-p1/plugin.toml" >"$big/plugin.toml"
printf '#include <unistd.h>\nvolatile char table[40 << 20] = {1};\nint main(void) { return write(1, table[0] ? "1" : "0", 1) != 1; }\n' >"$big/plugin.c"
check "memory: a plugin with 40 MiB of data builds" cc -static -o "$big/plugin" "$big/plugin.c"
check "memory: lint warns, and still says ok" \
        sh -c '"$1" plugin lint "$2" >"$3" && grep -q "^warning: MEMORY_SEGMENTS: .*40.0 MiB.*16.0 MiB" "$3" &&
                tail -n 1 "$3" | grep -qx ok' sh "$lockctl" "$big" "$tmp/lint.out"
check "memory: the run it warns about dies as signal:SIGSEGV" \
        sh -c '"$1" plugin test "$2" "$2/plugin.c" 2>&1 | grep -q "cause: signal:SIGSEGV"' sh "$lockctl" "$big"
sed -i 's/memory = "16MiB"/memory = "64MiB"/' "$big/plugin.toml"
check "memory: with 64 MiB declared, no warning" \
        sh -c '[ "$("$1" plugin lint "$2")" = ok ]' sh "$lockctl" "$big"

# --stderr shows the plugin's stderr to the author, escaped; without it only its size is told.
loud=$tmp/acme.c-loud
mkdir -p "$loud/fixtures/one" "$loud/fixtures/zero"
cp "$tmp/acme.c-p1/plugin.toml" "$loud/"
printf '#include <stdio.h>\n#include <unistd.h>\nint main(void) { fputs("parsing page 7\\n\\033[2Jcleared", stderr); fflush(stderr); return write(1, "1", 1) != 1; }\n' >"$loud/plugin.c"
printf x >"$loud/fixtures/one/x"
printf y >"$loud/fixtures/zero/y"
check "stderr: a plugin that writes to stderr builds" cc -static -o "$loud/plugin" "$loud/plugin.c"
check "stderr: --stderr shows it, escaped, and the answer is unchanged" \
        sh -c '[ "$("$1" plugin test "$2" "$2/fixtures/one/x" --stderr 2>"$3")" = 1 ] &&
                grep -qxF "  | parsing page 7" "$3" && grep -qxF "  | \\x1b[2Jcleared" "$3" &&
                ! grep -q "$(printf "\033")" "$3"' sh "$lockctl" "$loud" "$tmp/stderr.out"
check "stderr: without --stderr it is not shown" \
        sh -c '"$1" plugin test "$2" "$2/fixtures/one/x" 2>"$3" && ! grep -q "parsing page" "$3"' \
        sh "$lockctl" "$loud" "$tmp/stderr.out"
check "stderr: --fixtures --stderr names each fixture's" \
        sh -c '! "$1" plugin test "$2" --fixtures --stderr 2>"$3" >/dev/null &&
                grep -q "^stderr of one/x (" "$3" && grep -q "^stderr of zero/y (" "$3"' \
        sh "$lockctl" "$loud" "$tmp/stderr.out"
check "stderr: --json --stderr has it as \"stderr\"" \
        sh -c '"$1" plugin test "$2" "$2/fixtures/one/x" --stderr --json | grep -qF "\"stderr\": \"parsing page 7\\\\n\\\\x1b[2Jcleared\""' \
        sh "$lockctl" "$loud"
check "stderr: a protocol 2 plugin keeps its inputs and detail under --stderr" \
        sh -c '"$1" plugin test "$2" "$2/fixtures/zero/greeting.txt" --input needle=world --stderr 2>"$3" &&
                grep -q "^detail (shown here only): first match at byte offset 7" "$3"' \
        sh "$lockctl" "$tmp/acme.c-p2" "$tmp/stderr.out"

echo "1..$n"
[ "$failed" = 0 ]
