#!/bin/sh
# lockctl plugin test|lint from the outside: outputs and exit codes (0 answer, 1 plugin_error,
# 2 usage or manifest error), refusals with clear messages, and a typed value never echoed.
# Usage: test-lockctl.sh LOCKCTL PLUGINS_BUILD_DIR PLUGINS_SRC_DIR
set -u
lockctl=$1 bin=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }

mkplugin() { # NAME CASE: a plugin directory from a test plugin
        mkdir -p "$work/$1"
        cp "$src/$2/plugin.toml" "$work/$1/plugin.toml"
        cp "$bin/$2" "$work/$1/plugin"
}

# expect DESCRIPTION WANT_EXIT WANT_STDOUT STDERR_REGEX -- ARGS...
expect() {
        desc=$1 want_rc=$2 want_out=$3 want_err=$4
        shift 5
        out=$("$lockctl" "$@" 2>"$work/stderr") && rc=0 || rc=$?
        if [ "$rc" = "$want_rc" ] && { [ -z "$want_out$out" ] || printf '%s\n' "$out" | grep -Eqx -- "$want_out"; } &&
                { [ -z "$want_err" ] || grep -Eq -- "$want_err" "$work/stderr"; }; then
                ok "$desc"
        else
                not_ok "$desc (exit $rc, stdout '$out', stderr: $(tr '\n' ' ' <"$work/stderr"))"
        fi
}

printf 'some content with a needle inside\n' >"$work/fixture"
: >"$work/empty"
mkplugin one good-one
mkplugin zero good-zero
mkplugin inputs good-inputs
mkplugin segv raise-sigsegv
mkplugin eleven print-11
mkplugin timeout sleep-timeout

expect "answer 1" 0 1 "uid: .*landlock abi: [0-9]" -- plugin test "$work/one" "$work/fixture"
expect "answer 0" 0 0 "landlock abi" -- plugin test "$work/zero" "$work/fixture"
expect "good-one on an empty file answers 0" 0 0 "" -- plugin test "$work/one" "$work/empty"
expect "SIGSEGV is plugin_error" 1 plugin_error "cause: signal:SIGSEGV" -- plugin test "$work/segv" "$work/fixture"
expect "'11' is plugin_error" 1 plugin_error "cause: bad_output" -- plugin test "$work/eleven" "$work/fixture"
expect "timeout is plugin_error" 1 plugin_error "cause: timeout" -- plugin test "$work/timeout" "$work/fixture"
expect "inputs and detail" 0 1 "detail \(shown here only\): offset=" -- \
        plugin test "$work/inputs" "$work/fixture" --input needle=needle
expect "inputs: --input=NAME=VALUE form" 0 0 "" -- \
        plugin test "$work/inputs" "$work/fixture" --input=needle=absent
expect "missing input" 2 "" "missing --input needle" -- plugin test "$work/inputs" "$work/fixture"
expect "undeclared input" 2 "" "declares no input 'other'" -- \
        plugin test "$work/inputs" "$work/fixture" --input needle=x --input other=y
expect "input given twice" 2 "" "given twice" -- \
        plugin test "$work/inputs" "$work/fixture" --input needle=x --input needle=y
expect "inputs on a plugin without inputs" 2 "" "declares no inputs" -- \
        plugin test "$work/one" "$work/fixture" --input needle=x
secret="s3cr3t-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
long=$(printf "%070d" 0)
expect "a value over max_bytes is input_invalid" 2 "" "input_invalid" -- \
        plugin test "$work/inputs" "$work/fixture" --input "needle=$secret$long"
if grep -q "$secret" "$work/stderr"; then not_ok "an invalid value is never echoed"; else ok "an invalid value is never echoed"; fi

expect "usage: no arguments" 2 "" "usage: lockctl plugin test" -- plugin test
expect "usage: unknown option" 2 "" "unknown option '--bogus'" -- plugin test --bogus "$work/one" "$work/fixture"
expect "missing fixture" 2 "" "No such file" -- plugin test "$work/one" "$work/nonexistent"
expect "missing directory" 2 "" "No such file" -- plugin test "$work/nonexistent" "$work/fixture"

# A dynamically linked binary is refused before anything runs, with the reason.
mkdir -p "$work/dynamic"
cp "$src/good-one/plugin.toml" "$work/dynamic/"
cp /bin/true "$work/dynamic/plugin"
expect "dynamic binary refused" 2 "" "dynamically linked.*PT_INTERP" -- plugin test "$work/dynamic" "$work/fixture"
mkdir -p "$work/script"
cp "$src/good-one/plugin.toml" "$work/script/"
printf '#!/bin/sh\necho 1\n' >"$work/script/plugin"
expect "a script is refused" 2 "" "not a static x86-64 ELF executable" -- plugin test "$work/script" "$work/fixture"

# A bad manifest is a usage error for test, a lint failure for lint.
mkdir -p "$work/badmanifest"
cp "$bin/good-one" "$work/badmanifest/plugin"
sed 's/^protocol = 2/protocol = 3/; s/^protocol = 1/protocol = 3/' "$src/good-one/plugin.toml" >"$work/badmanifest/plugin.toml"
expect "bad manifest refused by test" 2 "" "error: E_MANIFEST_PROTOCOL: .*\(4:12\)" -- plugin test "$work/badmanifest" "$work/fixture"
expect "lint: bad manifest" 1 "error: E_MANIFEST_PROTOCOL: .* \(4:12\)" "" -- plugin lint "$work/badmanifest"
expect "lint: good manifest" 0 ok "" -- plugin lint "$work/one"
expect "unknown command" 2 "" "unknown command" -- frobnicate

# marketplace lint: 0 and "ok" for a pinned pattern, 1 with the warnings, 2 without a pattern.
expect "marketplace lint: good pattern" 0 ok "" -- \
        marketplace lint --identity '^https://github\.com/acme/lockfile-plugins/\.github/workflows/release\.yml@refs/tags/'
expect "marketplace lint: owner prefix" 1 "warning: W_IDENTITY_PREFIX_REPO: .*acme-evil.* \(at byte 25\)" "" -- \
        marketplace lint --identity '^https://github\.com/acme'
expect "marketplace lint: unescaped dot" 1 "warning: W_IDENTITY_UNESCAPED_DOT: .* \(at byte 15\)" "" -- \
        marketplace lint --identity '^https://github.com/acme/x/'
expect "marketplace lint: invalid regex" 2 "" "error: invalid regular expression: " -- \
        marketplace lint --identity '^https://github\.com/(acme'
expect "marketplace lint: no --identity" 2 "" "usage: lockctl marketplace lint --identity PATTERN" -- \
        marketplace lint

echo "1..$n"
[ "$failed" = 0 ]
