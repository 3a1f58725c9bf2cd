#!/bin/sh
# A marketplace plugin's checks, as its CI runs them (TAP on stdout): the release directory's
# lint, the import check of its source (`plugin lint --source`), every fixture of fixtures/one
# and fixtures/zero under lockd's real sandbox (`plugin test --fixtures`), every file of
# fixtures/error ending as plugin_error by the plugin's own exit, never by the timeout (a hostile
# input must end within the manifest's limits, not be cut off), and the same for the fixtures
# make-fixtures.sh made at build time (MADE/one, MADE/zero, MADE/error). A protocol-2 fixture's
# inputs are in NAME.inputs.json beside it.
# usage: check-plugin.sh LOCKCTL RELEASE_DIR SOURCE_DIR [MADE_FIXTURES_DIR]
set -u
lockctl=$1
rel=$2
src=$3
made=${4:-}
n=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

result() {
        n=$((n + 1))
        if [ "$1" = 0 ]; then
                echo "ok $n - $2"
        else
                failed=$((failed + 1))
                echo "not ok $n - $2"
                sed 's/^/# /' "$log"
        fi
}

# One fixture FILE (shown as LABEL) must give WANT (1, 0 or plugin_error); a plugin_error must
# not be the timeout.
fixture() {
        want=$1
        file=$2
        label=$3
        set -- "$lockctl" plugin test "$src" "$file" --plugin "$rel/plugin" --json
        [ -f "$file.inputs.json" ] && set -- "$@" --inputs "$file.inputs.json"
        "$@" >"$log" 2>&1
        python3 - "$want" "$log" <<'PY' >>"$log" 2>&1
import json, sys
want, path = sys.argv[1], sys.argv[2]
text = open(path).read()
start = text.find("{")
try:
    r = json.loads(text[start:text.rindex("}") + 1])
except ValueError:
    print("no JSON result from lockctl")
    sys.exit(1)
got = r.get("outcome")
if got != want:
    print(f"expected {want}, got {got} ({r.get('cause')})")
    sys.exit(1)
if got == "plugin_error" and r.get("cause") == "timeout":
    print("plugin_error by the timeout: the plugin did not end within its limits")
    sys.exit(1)
PY
        result $? "$want: $label"
}

"$lockctl" plugin lint "$rel" >"$log" 2>&1
result $? "lint $(basename "$rel")"

# The import check. Until lockctl has --source, its usage names no such option: only then skip.
if "$lockctl" plugin lint --source "$src" "$rel" >"$log" 2>&1; then
        grep -qx ok "$log"
        result $? "import check"
elif ! grep -q -- '--source' "$log" && grep -q -e 'usage:' -e 'unknown option' "$log"; then
        n=$((n + 1))
        echo "ok $n - import check # SKIP lockctl plugin lint has no --source"
else
        result 1 "import check"
fi

"$lockctl" plugin test "$src" --fixtures --plugin "$rel/plugin" >"$log" 2>&1
result $? "fixtures/one and fixtures/zero"

for f in "$src"/fixtures/error/*; do
        [ -f "$f" ] || continue
        case $f in *.inputs.json) continue ;; esac
        fixture plugin_error "$f" "${f#"$src"/}"
done

if [ -n "$made" ]; then
        for d in one zero error; do
                want=$d
                [ "$d" = error ] && want=plugin_error
                [ "$d" = one ] && want=1
                [ "$d" = zero ] && want=0
                for f in "$made/$d"/*; do
                        [ -f "$f" ] || continue
                        case $f in *.inputs.json) continue ;; esac
                        fixture "$want" "$f" "made at build time: $d/${f##*/}"
                done
        done
fi

echo "1..$n"
[ "$failed" = 0 ]
