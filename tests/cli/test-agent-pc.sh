#!/bin/sh
# liblockd-agent as a C program outside this tree uses it: lockd-agent.pc (the uninstalled
# variant meson writes) gives what compiling and linking examples/agent/ask-one.c takes, and
# lockd-agent.h compiles on its own under strict C99. TAP on stdout.
# usage: test-agent-pc.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }

export PKG_CONFIG_PATH="$build/meson-uninstalled"
if flags=$(pkg-config --cflags --libs lockd-agent) &&
        cc -Wall -Werror -o "$tmp/ask-one" "$src/examples/agent/ask-one.c" $flags 2>"$tmp/cc.log"; then
        ok "ask-one.c builds with pkg-config lockd-agent"
else
        not_ok "ask-one.c builds with pkg-config lockd-agent"
        sed 's/^/# /' "$tmp/cc.log"
fi
"$tmp/ask-one" "$tmp/no-such.sock" h p >"$tmp/out" 2>&1
rc=$?
if [ "$rc" = 3 ] && grep -q "No such file" "$tmp/out"; then
        ok "an unreachable lockd is exit status 3"
else
        not_ok "an unreachable lockd is exit status 3 (got $rc)"
        sed 's/^/# /' "$tmp/out"
fi
printf '#include <lockd-agent.h>\n' >"$tmp/only.c"
if cc -std=c99 -pedantic -Wall -Wextra -Werror -c -o "$tmp/only.o" "$tmp/only.c" \
        $(pkg-config --cflags lockd-agent) 2>"$tmp/cc2.log"; then
        ok "lockd-agent.h compiles alone under -std=c99 -pedantic"
else
        not_ok "lockd-agent.h compiles alone under -std=c99 -pedantic"
        sed 's/^/# /' "$tmp/cc2.log"
fi
echo "1..$n"
[ "$failed" = 0 ]
