#!/bin/sh
# lockctl's commands that talk to lockd, without a lockd: usage errors (exit 2), local refusals
# before anything is sent (symlinks, FIFOs, missing or half-present bundles), the socket's path
# (--socket, $LOCKD_CONSOLE_SOCKET, the default) and a clear "cannot connect" (exit 1), and an
# input value never echoed.
# Usage: test-lockctl-offline.sh LOCKCTL
set -u
lockctl=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 failed=0 wrap=
unset LOCKD_CONSOLE_SOCKET

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }

# expect DESCRIPTION WANT_EXIT WANT_STDOUT STDERR_REGEX -- ARGS...
# stdout must equal WANT_STDOUT (both empty counts), stderr must match STDERR_REGEX; both are
# also kept in all-output.
expect() {
        desc=$1 want_rc=$2 want_out=$3 want_err=$4
        shift 5
        out=$(timeout 20 $wrap "$lockctl" "$@" </dev/null 2>"$work/stderr") && rc=0 || rc=$?
        { printf '%s\n' "$out"; cat "$work/stderr"; } >>"$work/all-output"
        if [ "$rc" = "$want_rc" ] && [ "$out" = "$want_out" ] &&
                { [ -z "$want_err" ] || grep -Eq -- "$want_err" "$work/stderr"; }; then
                ok "$desc"
        else
                not_ok "$desc (exit $rc, stdout '$out', stderr: $(tr '\n' ' ' <"$work/stderr"))"
        fi
}

nowhere="$work/nowhere/console.sock"
cant="cannot connect to lockd at $nowhere: no such socket \(is lockd running\?\)"

# A release directory: its contents do not matter, nothing reaches a lockd.
rel="$work/rel"
mkdir -p "$rel"
printf 'name = "x.y"\n' >"$rel/plugin.toml"
printf 'not an ELF\n' >"$rel/plugin"
printf 'content\n' >"$work/file"

# The socket's path: --socket (both forms) over $LOCKD_CONSOLE_SOCKET over the default.
expect "--socket: cannot connect" 1 "" "^lockctl: $cant\$" -- --socket "$nowhere" status
expect "--socket=PATH" 1 "" "$cant" -- "--socket=$nowhere" status
expect "--socket without a path" 2 "" "--socket takes a path" -- --socket
expect "--socket= empty" 2 "" "--socket takes a path" -- --socket= status
expect "--socket then nothing" 2 "" "usage: lockctl" -- --socket "$nowhere"
out=$(LOCKD_CONSOLE_SOCKET="$work/env.sock" "$lockctl" status 2>&1) && rc=0 || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$out" | grep -q "cannot connect to lockd at $work/env.sock: "; then
        ok "\$LOCKD_CONSOLE_SOCKET is used"
else
        not_ok "\$LOCKD_CONSOLE_SOCKET is used (exit $rc: $out)"
fi
out=$(LOCKD_CONSOLE_SOCKET="$work/env.sock" "$lockctl" --socket "$nowhere" status 2>&1) && rc=0 || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$out" | grep -q "at $nowhere: "; then
        ok "--socket wins over \$LOCKD_CONSOLE_SOCKET"
else
        not_ok "--socket wins over \$LOCKD_CONSOLE_SOCKET (exit $rc: $out)"
fi
if [ ! -e /run/lockd/console.sock ]; then
        expect "the default socket" 1 "" "cannot connect to lockd at /run/lockd/console.sock: " -- status
else
        ok "the default socket # SKIP a lockd is listening there"
fi
expect "--socket before --version" 0 "lockctl $("$lockctl" --version | cut -d' ' -f2)" "" -- \
        --socket "$nowhere" --version

# A socket nobody listens on, and a path that is not a socket.
if python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$work/dead.sock" 2>/dev/null; then
        expect "a socket nobody listens on" 1 "" "at $work/dead.sock: nobody is listening" -- \
                --socket "$work/dead.sock" status
else
        ok "a socket nobody listens on # SKIP no python3 to bind one"
fi
expect "a regular file as the socket" 1 "" "cannot connect to lockd at $work/file: not a socket\$" -- \
        --socket "$work/file" status
expect "a control character in the socket path is escaped" 1 "" "at $work/a\\\\x1bb: " -- \
        --socket "$work/a$(printf '\033')b" status

# status
expect "status: unknown argument" 2 "" "usage: lockctl \[--socket PATH\] status \[--json\]" -- \
        --socket "$nowhere" status --bogus
expect "status --json: cannot connect" 1 "" "$cant" -- --socket "$nowhere" status --json

# plugin install: everything local is checked before connecting.
expect "install: no DIR" 2 "" "usage: lockctl plugin install DIR" -- --socket "$nowhere" plugin install
expect "install: two DIRs" 2 "" "usage: lockctl plugin install DIR" -- \
        --socket "$nowhere" plugin install "$rel" "$rel"
expect "install: unknown option" 2 "" "unknown option '--bogus'" -- \
        --socket "$nowhere" plugin install "$rel" --bogus
expect "install: --marketplace without a value" 2 "" "usage: lockctl plugin install" -- \
        --socket "$nowhere" plugin install "$rel" --marketplace
expect "install: empty --marketplace" 2 "" "--marketplace takes a name" -- \
        --socket "$nowhere" plugin install "$rel" --marketplace=
expect "install: missing DIR" 2 "" "$work/missing: No such file or directory" -- \
        --socket "$nowhere" plugin install "$work/missing"
expect "install: --index needs --marketplace" 2 "" "--index needs --marketplace" -- \
        --socket "$nowhere" plugin install "$rel" --index "$work"
mkdir -p "$work/nobin"
cp "$rel/plugin.toml" "$work/nobin/"
expect "install: no binary" 2 "" "nobin/plugin: No such file or directory" -- \
        --socket "$nowhere" plugin install "$work/nobin"
mkdir -p "$work/link"
cp "$rel/plugin" "$work/link/"
ln -s "$rel/plugin.toml" "$work/link/plugin.toml"
expect "install: a symlinked plugin.toml is refused" 2 "" "link/plugin.toml: is a symbolic link" -- \
        --socket "$nowhere" plugin install "$work/link"
mkdir -p "$work/fifo"
cp "$rel/plugin.toml" "$work/fifo/"
mkfifo "$work/fifo/plugin"
expect "install: a FIFO binary is refused without hanging" 2 "" "fifo/plugin: not a regular file" -- \
        --socket "$nowhere" plugin install "$work/fifo"
mkdir -p "$work/dirbin"
cp "$rel/plugin.toml" "$work/dirbin/"
mkdir "$work/dirbin/plugin"
expect "install: a directory as the binary is refused" 2 "" "dirbin/plugin: not a regular file" -- \
        --socket "$nowhere" plugin install "$work/dirbin"
expect "install: unsigned, cannot connect" 1 "" "$cant" -- --socket "$nowhere" plugin install "$rel"
expect "install: --marketplace without bundles" 2 "" \
        "rel/plugin.toml.sigstore.json: missing; a release installed from marketplace 'm' needs both bundles" -- \
        --socket "$nowhere" plugin install "$rel" --marketplace m
mkdir -p "$work/half"
cp "$rel/plugin.toml" "$rel/plugin" "$work/half/"
printf '{}' >"$work/half/plugin.toml.sigstore.json"
expect "install: one bundle of two, --marketplace" 2 "" "half/plugin.sigstore.json: missing" -- \
        --socket "$nowhere" plugin install "$work/half" --marketplace m
expect "install: one bundle of two, no --marketplace" 2 "" "holds one Sigstore bundle of two: name the marketplace" -- \
        --socket "$nowhere" plugin install "$work/half"
mkdir -p "$work/signed"
cp "$work/half/"* "$work/signed/"
printf '{}' >"$work/signed/plugin.sigstore.json"
expect "install: bundles without --marketplace are never installed unsigned" 2 "" \
        "holds Sigstore bundles: name the marketplace to verify it under with --marketplace NAME" -- \
        --socket "$nowhere" plugin install "$work/signed"
expect "install: signed, cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" plugin install "$work/signed" --marketplace m
expect "install: --index without index.json" 2 "" "$work/signed/index.json: No such file" -- \
        --socket "$nowhere" plugin install "$work/signed" --marketplace m --index "$work/signed"
mkdir -p "$work/index"
printf '{}' >"$work/index/index.json"
expect "install: --index without its bundle" 2 "" "index/index.json.sigstore.json: No such file" -- \
        --socket "$nowhere" plugin install "$work/signed" --marketplace m --index "$work/index"
printf '{}' >"$work/index/index.json.sigstore.json"
expect "install: --index, cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" plugin install "$work/signed" --marketplace=m --index="$work/index"
head -c 65537 /dev/zero >"$work/big.toml"
mkdir -p "$work/big"
cp "$work/big.toml" "$work/big/plugin.toml"
cp "$rel/plugin" "$work/big/"
expect "install: a manifest over 64 KiB is refused here" 2 "" "big/plugin.toml: larger than 65536 bytes" -- \
        --socket "$nowhere" plugin install "$work/big"

# plugin list, remove
expect "plugin list: unknown argument" 2 "" "usage: lockctl plugin list \[--json\]" -- \
        --socket "$nowhere" plugin list extra
expect "plugin list: cannot connect" 1 "" "$cant" -- --socket "$nowhere" plugin list
expect "plugin remove: no NAME" 2 "" "usage: lockctl plugin remove NAME" -- \
        --socket "$nowhere" plugin remove
expect "plugin remove: --version without a value" 2 "" "usage: lockctl plugin remove" -- \
        --socket "$nowhere" plugin remove x.y --version
expect "plugin remove: cannot connect" 1 "" "$cant" -- --socket "$nowhere" plugin remove x.y --version 1.0.0

# plugin run: a value given with --input is never echoed, whatever fails.
secret="s3cr3t-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
expect "plugin run: no FILE" 2 "" "usage: lockctl plugin run NAME FILE" -- --socket "$nowhere" plugin run x.y
expect "plugin run: --input with an empty name" 2 "" "--input takes NAME=VALUE or NAME" -- \
        --socket "$nowhere" plugin run x.y "$work/file" --input "=$secret"
expect "plugin run: an input given twice" 2 "" "input 'needle' given twice" -- \
        --socket "$nowhere" plugin run x.y "$work/file" --input "needle=$secret" --input needle=b
expect "plugin run: missing FILE" 2 "" "$work/missing: No such file" -- \
        --socket "$nowhere" plugin run x.y "$work/missing" --input "needle=$secret"
expect "plugin run: a directory as FILE" 2 "" "$work: not a regular file" -- \
        --socket "$nowhere" plugin run x.y "$work" --input "needle=$secret"
expect "plugin run: cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" plugin run x.y "$work/file" --input "needle=$secret" --input=other=x
# --input NAME asks on the terminal without echo, once lockd was reached: a peer that accepts
# and then hangs up stands in for it. Type the secret on a pseudo-terminal and look for it in
# everything the terminal showed.
if python3 -c 'import pty' 2>/dev/null; then
        timeout 30 python3 - "$lockctl" "$work/hangup.sock" "$work/file" "$secret" >"$work/pty" 2>&1 <<'EOF2'
import os, pty, select, socket, sys, time
lockctl, sock, file, secret = sys.argv[1:5]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sock)
srv.listen(1)
srv.settimeout(10)
pid, fd = pty.fork()
if pid == 0:
    os.execv(lockctl, [lockctl, "--socket", sock, "plugin", "run", "x.y", file, "--input", "needle"])

def read_some(out, deadline):
    """Reads what the terminal shows until deadline; None at its end (EOF or EIO)."""
    while time.time() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return None
            if not d:
                return None
            return out + d
    return out

out = b""
deadline = time.time() + 10
while out is not None and b"(not echoed): " not in out and time.time() < deadline:
    out = read_some(out, deadline)
if out is not None:
    os.write(fd, secret.encode() + b"\n")
    conn, _ = srv.accept()
    conn.close()
    deadline = time.time() + 10
    while True:
        more = read_some(out, deadline)
        if more is None or time.time() >= deadline:
            break
        out = more
_, st = os.waitpid(pid, 0)
sys.stdout.write((out or b"").decode("latin1"))
print("\nexit %d" % os.waitstatus_to_exitcode(st))
EOF2
        if grep -q "Value of input 'needle' (not echoed): " "$work/pty" &&
                grep -q "plugin run failed: lost the connection to lockd: lockd closed the connection" "$work/pty" &&
                grep -q "^exit 1" "$work/pty" && ! grep -q "$secret" "$work/pty"; then
                ok "plugin run: --input NAME asks on the terminal without echo"
        else
                not_ok "plugin run: --input NAME asks on the terminal without echo: $(tr '\n' ' ' <"$work/pty")"
        fi
else
        ok "plugin run: --input NAME asks on the terminal without echo # SKIP no python3"
fi
# A listener that never answers: lockctl connects, then finds no terminal to ask on.
if command -v python3 >/dev/null; then
        python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(60)' "$work/listen.sock" &
        listener=$!
        for _ in 1 2 3 4 5 6 7 8 9 10; do [ -S "$work/listen.sock" ] && break; sleep 0.2; done
        wrap="setsid -w" # no controlling terminal
        expect "plugin run: --input NAME without a terminal" 2 "" \
                "--input needle asks for its value on the terminal, and there is none: give --input needle=VALUE" -- \
                --socket "$work/listen.sock" plugin run x.y "$work/file" --input needle
        wrap=
        kill "$listener"
        wait "$listener" 2>/dev/null
else
        ok "plugin run: --input NAME without a terminal # SKIP no python3"
fi
bad=$(printf 'needle=\377%s' "$secret")
expect "plugin run: a value that is not UTF-8" 2 "" "input_invalid: the name or value of an input is not UTF-8" -- \
        --socket "$nowhere" plugin run x.y "$work/file" --input "$bad"
# Every output so far, stdout and stderr, of every command above.
if grep -q "$secret" "$work/all-output"; then not_ok "an input value is never echoed"; else ok "an input value is never echoed"; fi

# marketplace add, list, remove
root="$work/root.json"
printf '{}' >"$root"
expect "marketplace add: no options" 2 "" "usage: lockctl marketplace add NAME (\[--url URL\] )?--issuer URL" -- \
        --socket "$nowhere" marketplace add m
expect "marketplace add: no --trusted-root" 2 "" "usage: lockctl marketplace add" -- \
        --socket "$nowhere" marketplace add m --issuer https://token.actions.githubusercontent.com \
        --identity '^x$'
expect "marketplace add: missing trusted root" 2 "" "$work/missing.json: No such file" -- \
        --socket "$nowhere" marketplace add m --issuer https://i --identity '^x$' \
        --trusted-root "$work/missing.json"
expect "marketplace add: unknown option" 2 "" "unknown option '--bogus'" -- \
        --socket "$nowhere" marketplace add m --bogus
expect "marketplace add: cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" marketplace add m --issuer https://i --identity '^x$' \
        --trusted-root "$root" --force
expect "marketplace list: unknown argument" 2 "" "usage: lockctl marketplace list" -- \
        --socket "$nowhere" marketplace list extra
expect "marketplace list: cannot connect" 1 "" "$cant" -- --socket "$nowhere" marketplace list --json
expect "marketplace remove: no NAME" 2 "" "usage: lockctl marketplace remove NAME" -- \
        --socket "$nowhere" marketplace remove
expect "marketplace remove: cannot connect" 1 "" "$cant" -- --socket "$nowhere" marketplace remove m
expect "marketplace: unknown subcommand" 2 "" "usage: lockctl marketplace lint\|add\|list\|remove" -- \
        marketplace bogus

# Help on every command and subcommand (exit 0, its usage on stdout), --json before the verb and
# after it, --json on the commands that change something.
for args in "-h" "--help" "help" "plugin test --help" "plugin lint -h" "plugin install --help" \
        "plugin remove --help" "marketplace add -h" "marketplace remove --help" "grant --help" \
        "revoke -h" "handles --help" "budget reset --help" "tickets -h" "deny --help" \
        "approve --help" "results -h" "session end --help" "console --help" "status -h" \
        "agent run --help" "audit verify --help" "release verify -h" "verify-bundle --help" \
        "help grant"; do
        # shellcheck disable=SC2086
        out=$(timeout 20 "$lockctl" $args 2>/dev/null) && rc=0 || rc=$?
        first=$(printf '%s\n' "$out" | head -n 1)
        case $first in
        "usage: lockctl"*) [ "$rc" = 0 ] && ok "lockctl $args: usage, exit 0" ||
                not_ok "lockctl $args: exit $rc" ;;
        *) not_ok "lockctl $args: no usage ($first), exit $rc" ;;
        esac
done
expect "revoke --json: cannot connect" 1 "" "$cant" -- --socket "$nowhere" revoke h-1 --json
expect "--json revoke: cannot connect" 1 "" "$cant" -- --socket "$nowhere" --json revoke h-1
expect "deny --json: cannot connect" 1 "" "$cant" -- --socket "$nowhere" deny t-1 --json
expect "plugin remove --json: cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" plugin remove x.y --json
expect "marketplace remove --json: cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" --json marketplace remove m
expect "budget reset --json: cannot connect" 1 "" "$cant" -- \
        --socket "$nowhere" budget reset h-1 --yes --json
lint_json=$(timeout 20 "$lockctl" --json plugin lint "$rel" 2>/dev/null) && rc=0 || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$lint_json" | grep -q '"ok": false' &&
        printf '%s' "$lint_json" | grep -q '"error": "error: '; then
        ok "--json plugin lint: a bad manifest is {ok: false, error}, exit 1"
else
        not_ok "--json plugin lint: exit $rc, $lint_json"
fi
audit_json=$(timeout 20 "$lockctl" audit verify "$work/none.jsonl" --json 2>/dev/null) && rc=0 || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$audit_json" | grep -q '"ok": false'; then
        ok "audit verify --json: a missing file is {ok: false}, exit 1"
else
        not_ok "audit verify --json: exit $rc, $audit_json"
fi

# plugin lint --source, the import check: what it refuses before reading anything, and its
# errors on sources and binaries that need no compiler to make.
expect "lint --source without a directory" 2 "" "lockctl plugin lint --source SRC_DIR" -- \
        plugin lint --source
expect "lint --source: a missing directory" 2 "" "$work/missing: No such file or directory" -- \
        plugin lint --source "$work/missing"
expect "lint --source: two release directories" 2 "" "usage: lockctl plugin lint" -- \
        plugin lint --source "$rel" "$rel" "$rel"
expect "lint: an unknown option" 2 "" "unknown option '--bogus'" -- plugin lint "$rel" --bogus
expect "lint --source: a C plugin without its binary" 2 "" "nobin/plugin: No such file or directory" -- \
        plugin lint --source "$work/nobin"
expect "lint --source: a binary that is not ELF" 1 "error: ELF_INVALID: $rel/plugin is not an x86-64 ELF executable" "" -- \
        plugin lint --source "$rel"
expect "lint --source: the binary of RELEASE_DIR is the one read" 1 "error: ELF_INVALID: $rel/plugin is not an x86-64 ELF executable" "" -- \
        plugin lint --source "$work/nobin" "$rel"
gosrc=$work/gosrc
mkdir -p "$gosrc/internal/util" "$gosrc/testdata" "$gosrc/.hidden" "$gosrc/_skip"
printf 'module example.com/acme/x // the module\n\ngo 1.19\n' >"$gosrc/go.mod"
printf 'package main\n\nimport (\n\t"fmt"\n\t"os"\n\n\t"example.com/acme/x/internal/util"\n\t"lockd/sdk"\n)\n' >"$gosrc/main.go"
printf 'package util\n\nimport "bytes"\n' >"$gosrc/internal/util/util.go"
for d in testdata .hidden _skip; do printf 'package x\nimport "net"\n' >"$gosrc/$d/x.go"; done
printf 'package main\nimport "net"\n' >"$gosrc/_x.go"
expect "lint --source: a Go module within the allow-list" 0 "ok" "" -- plugin lint --source "$gosrc"
printf 'package util\n\nimport (\n\t"bytes"\n\tsys "syscall" // raw calls\n)\n' >"$gosrc/internal/util/util.go"
expect "lint --source: a denied import in another package of the module" 1 \
        "error: IMPORT_DENIED: syscall (internal/util/util.go:5:6)" "" -- plugin lint --source "$gosrc"
lint_json=$(timeout 20 "$lockctl" plugin lint --source "$gosrc" --json 2>/dev/null) && rc=0 || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$lint_json" | grep -q '"ok": false' &&
        printf '%s' "$lint_json" | grep -qF '"error: IMPORT_DENIED: syscall (internal/util/util.go:5:6)"'; then
        ok "lint --source --json: {ok: false, errors}, exit 1"
else
        not_ok "lint --source --json: exit $rc, $lint_json"
fi
printf 'package util\n\nimport "bytes\n' >"$gosrc/internal/util/util.go"
expect "lint --source: a Go file that does not parse" 1 \
        "error: GO_SYNTAX: string literal not terminated (internal/util/util.go:3:8)" "" -- \
        plugin lint --source "$gosrc"
rm "$gosrc/internal/util/util.go"
printf 'module net/evil\n' >"$gosrc/go.mod"
expect "lint --source: a module named under the standard library's names" 1 \
        "error: GO_MOD: module net/evil: a path under the standard library's or the SDK's names is not a plugin's own (go.mod)" "" -- \
        plugin lint --source "$gosrc"
printf 'go 1.19\n' >"$gosrc/go.mod"
expect "lint --source: a go.mod without a module" 1 \
        "error: GO_MOD: go.mod has no module directive (go.mod:0:0)" "" -- plugin lint --source "$gosrc"
printf 'module example.com/acme/x\n' >"$gosrc/go.mod"
: >"$gosrc/internal/util/fast_amd64.s"
expect "lint --source: assembly is refused" 1 \
        "error: FILE_DENIED: internal/util/fast_amd64.s (assembly or an object file: linked into the plugin past the import check)" "" -- \
        plugin lint --source "$gosrc"
# A dependency whose go.mod replacement is a local directory is checked by the same rules, the
# package's own files and what they import (the marketplace builds on Debian's Go sources so).
rm "$gosrc/internal/util/fast_amd64.s"
mkdir -p "$work/dep/lzma" "$work/dep/internal/raw"
printf 'module example.com/acme/x\n\nrequire example.com/dep v0.0.0\n\nreplace (\n\texample.com/dep => ../dep // its source\n)\n' >"$gosrc/go.mod"
printf 'package main\n\nimport "example.com/dep/lzma"\n\nvar _ = lzma.X\n' >"$gosrc/main.go"
printf 'package lzma\n\nimport (\n\t"bufio"\n\t"example.com/dep/internal/raw"\n)\n' >"$work/dep/lzma/lzma.go"
printf 'package raw\n\nimport "io"\n' >"$work/dep/internal/raw/raw.go"
printf 'package raw\n\nimport "net"\n' >"$work/dep/internal/raw/raw_test.go"
expect "lint --source: a local replacement whose packages stay inside the allow-list" 0 "ok" "" -- \
        plugin lint --source "$gosrc"
printf 'package raw\n\nimport "os/exec"\n' >"$work/dep/internal/raw/spawn.go"
expect "lint --source: a denied import two packages down a local replacement" 1 \
        "error: IMPORT_DENIED: os/exec ($gosrc/../dep/internal/raw/spawn.go:3:8)" "" -- \
        plugin lint --source "$gosrc"
printf 'package main\n\nimport "example.com/other/pkg"\n' >"$gosrc/main.go"
expect "lint --source: a dependency without a local replacement" 1 \
        "error: IMPORT_DENIED: example.com/other/pkg (main.go:3:8)" "" -- plugin lint --source "$gosrc"

for args in "plugin lint --help" "plugin test -h" "plugin new --help"; do
        # shellcheck disable=SC2086
        out=$(timeout 20 "$lockctl" $args 2>/dev/null)
        case $args in
        *lint*) want="--source" ;;
        *test*) want="--stderr" ;;
        *) want="--sdk" ;;
        esac
        if printf '%s' "$out" | grep -q -- "$want"; then ok "lockctl $args names $want"; else
                not_ok "lockctl $args does not name $want: $out"; fi
done

echo "1..$n"
[ "$failed" = 0 ]
