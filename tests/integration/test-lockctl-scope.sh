#!/bin/sh
# lockctl plugin test --scope against the real manager at $LOCKD_TEST_BUS (run through
# with-systemd): the run happens inside lockctl-test-<pid>-0.scope in lockd-plugins.slice with the
# manifest's limits, the report names the unit, a timeout kills it, a memory-limit kill reads as
# oom, the scope is gone afterwards, and without a manager there is no run at all.
# Usage: with-systemd test-lockctl-scope.sh LOCKCTL PLUGINS_BUILD_DIR PLUGINS_SRC_DIR
set -u
lockctl=$1 bin=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { # DESCRIPTION COMMAND...
        desc=$1
        shift
        if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

case "${LOCKD_TEST_BUS:-}" in
"") echo "Bail out! LOCKD_TEST_BUS is not set: run through with-systemd"; exit 1 ;;
system) export LOCKD_SCOPE_BUS=system; systemctl() { command systemctl "$@"; } ;;
*) export LOCKD_SCOPE_BUS=$LOCKD_TEST_BUS; systemctl() { command systemctl --user "$@"; } ;;
esac

mkplugin() { # CASE
        mkdir -p "$work/$1"
        cp "$src/$1/plugin.toml" "$work/$1/plugin.toml"
        cp "$bin/$1" "$work/$1/plugin"
}
# The units of ours the manager still knows, one per line.
units() { systemctl list-units --all --no-legend --plain 'lockctl-test-*' | awk '{ print $1 }'; }
# Waits up to 5 s until the manager forgot every unit of ours.
units_gone() {
        for _ in $(seq 50); do
                [ -z "$(units)" ] && return 0
                sleep 0.1
        done
        return 1
}

printf 'a fixture\n' >"$work/fixture"
mkplugin good-one
mkplugin sleep-timeout
mkplugin scope-oom

out=$("$lockctl" plugin test "$work/good-one" "$work/fixture" --scope 2>"$work/err") && rc=0 || rc=$?
check "an answer from inside a scope (exit $rc, stdout '$out')" [ "$rc:$out" = "0:1" ]
check "the report names the unit" \
        grep -Eq "^scope: lockctl-test-[0-9]+-0\.scope in lockd-plugins\.slice \(MemoryMax=134217728, TasksMax=513," "$work/err"
check "the scope is gone afterwards" units_gone

# --fixtures --scope: every run in a unit of its own, numbered from 0, each collected.
mkdir -p "$work/good-one/fixtures/one" "$work/good-one/fixtures/zero"
printf 'a\n' >"$work/good-one/fixtures/one/a"
printf 'b\n' >"$work/good-one/fixtures/one/b"
printf 'c\n' >"$work/good-one/fixtures/zero/c"
"$lockctl" plugin test "$work/good-one" --fixtures --scope --json >"$work/out" 2>"$work/err" &&
        rc=0 || rc=$?
check "--fixtures --scope: two fixtures answer 1, the third fails as it should (exit $rc)" \
        sh -c '[ "$1" = 1 ] && grep -q "\"passed\": 2" "$2" && grep -q "\"failed\": 1" "$2"' \
        sh "$rc" "$work/out"
check "--fixtures --scope: the runs' units are gone afterwards" units_gone
rm -rf "$work/good-one/fixtures"

# sleep-timeout runs for its 1 s timeout: long enough to look at its unit while it runs.
"$lockctl" plugin test "$work/sleep-timeout" "$work/fixture" --scope >"$work/out" 2>"$work/err" &
pid=$!
unit=""
for _ in $(seq 40); do
        unit=$(units | head -n 1)
        [ -n "$unit" ] && break
        sleep 0.02
done
check "the unit exists while the plugin runs ($unit)" [ "$unit" = "lockctl-test-$pid-0.scope" ]
props=$(systemctl show -p ActiveState -p Slice -p MemoryMax -p TasksMax "$unit" | sort | tr '\n' ' ')
check "it is active in lockd-plugins.slice with the manifest's limits ($props)" \
        [ "$props" = "ActiveState=active MemoryMax=134217728 Slice=lockd-plugins.slice TasksMax=513 " ]
wait $pid && rc=0 || rc=$?
check "a timeout is a plugin_error (exit $rc)" [ "$rc:$(cat "$work/out")" = "1:plugin_error" ]
check "the cause is timeout" grep -q "^cause: timeout" "$work/err"
check "the report names the killed unit" grep -q "^scope: lockctl-test-$pid-0\.scope" "$work/err"
check "the killed scope is gone afterwards" units_gone

# 115 MiB of heap within RLIMIT_DATA, then pipe buffers: over MemoryMax= the manifest's 128 MiB.
out=$("$lockctl" plugin test "$work/scope-oom" "$work/fixture" --scope 2>"$work/err") && rc=0 || rc=$?
check "a plugin over its scope's memory is a plugin_error (exit $rc)" [ "$rc:$out" = "1:plugin_error" ]
check "the cause is oom" grep -q "^cause: oom" "$work/err"
check "the OOM-killed scope is gone afterwards" units_gone

LOCKD_SCOPE_BUS=unix:path=$work/none/systemd/private \
        "$lockctl" plugin test "$work/good-one" "$work/fixture" --scope >"$work/out" 2>"$work/err" &&
        rc=0 || rc=$?
check "no manager: no run, exit 2 (exit $rc)" [ "$rc:$(cat "$work/out")" = "2:" ]
check "no manager: a clear message" grep -q "^lockctl: --scope: cannot use the manager at" "$work/err"

echo "1..$n"
[ "$failed" = 0 ]
