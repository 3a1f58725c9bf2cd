#!/bin/sh
# The C SDK as a plugin author uses it: every example plugin builds with a plain `cc -static`,
# lockplugin.h and nothing else (none of meson's flags, no _GNU_SOURCE from outside), without a
# warning, under C11 and GNU11 alike. TAP on stdout.
# usage: test-sdk-build.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
for dir in "$src"/examples/plugins/*/; do
        [ -e "$dir/plugin.c" ] || continue # a Go plugin: tests/go/test-go-modules.sh
        name=$(basename "$dir")
        for std in c11 gnu11; do
                n=$((n + 1))
                if cc -static -O2 -std=$std -Wall -Wextra -Werror -I "$src/client" \
                        -o "$tmp/$name" "$dir/plugin.c" >"$tmp/log" 2>&1; then
                        echo "ok $n - $name builds with cc -static -std=$std -Wall -Wextra -Werror"
                else
                        failed=$((failed + 1))
                        echo "not ok $n - $name builds with cc -static -std=$std -Wall -Wextra -Werror"
                        sed 's/^/# /' "$tmp/log"
                fi
        done
done
echo "1..$n"
[ "$failed" = 0 ]
