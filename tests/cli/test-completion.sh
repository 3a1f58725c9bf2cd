#!/bin/bash
# The shell completions: bash completes lockctl's and lockask's commands, subcommands and
# options; the zsh and fish files parse (zsh -n, fish -n). TAP on stdout.
# usage: test-completion.sh SOURCE_DIR
set -u
src=$1/shell-completion
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }

# complete FILE FUNCTION WORD... : what bash offers for the last word.
complete_words() {
        local file=$1 fn=$2
        shift 2
        bash -c 'source "$1"; fn=$2; shift 2; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
                 "$fn"; printf "%s\n" "${COMPREPLY[@]}"' _ "$file" "$fn" "$@" | sort | tr '\n' ' '
}

expect() {
        local desc=$1 want=$2 got
        shift 2
        got=$(complete_words "$@")
        if [ "$got" = "$want" ]; then ok "$desc"; else not_ok "$desc: got '$got', want '$want'"; fi
}

expect "lockctl pl" "plugin " "$src/lockctl.bash" _lockctl lockctl pl
expect "lockctl plugin t" "test " "$src/lockctl.bash" _lockctl lockctl plugin t
expect "lockctl plugin n" "new " "$src/lockctl.bash" _lockctl lockctl plugin n
expect "lockctl plugin new x --l" "--lang " "$src/lockctl.bash" _lockctl lockctl plugin new x --l
expect "lockctl --json ma" "marketplace " "$src/lockctl.bash" _lockctl lockctl --json ma
expect "lockctl plugin test D F --st" "--stderr " "$src/lockctl.bash" _lockctl lockctl plugin test d f --st
expect "lockctl plugin lint --so" "--source " "$src/lockctl.bash" _lockctl lockctl plugin lint --so
expect "lockctl grant F --a" "--agent --auto " "$src/lockctl.bash" _lockctl lockctl grant f --a
expect "lockctl budget r" "reset " "$src/lockctl.bash" _lockctl lockctl budget r
expect "lockctl agent run --u" "--user " "$src/lockctl.bash" _lockctl lockctl agent run --u
expect "lockask a" "ask " "$src/lockask.bash" _lockask lockask a
expect "lockask ask H P --n" "--no-wait " "$src/lockask.bash" _lockask lockask ask h p --n
expect "lockask wait T --t" "--timeout " "$src/lockask.bash" _lockask lockask wait t --t

for f in _lockctl _lockask; do
        if ! command -v zsh >/dev/null; then
                not_ok "$f: zsh is not installed (scripts/deps --test installs it)"
        elif zsh -n "$src/$f"; then ok "$f parses (zsh -n)"; else not_ok "$f: zsh -n"; fi
done
for f in lockctl.fish lockask.fish; do
        if ! command -v fish >/dev/null; then
                not_ok "$f: fish is not installed (scripts/deps --test installs it)"
        elif fish -n "$src/$f"; then ok "$f parses (fish -n)"; else not_ok "$f: fish -n"; fi
done
echo "1..$n"
[ "$failed" = 0 ]
