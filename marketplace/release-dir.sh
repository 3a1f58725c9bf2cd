#!/bin/sh
# Makes a plugin's release directory OUT: its plugin.toml and its static executable `plugin`,
# either a C plugin's binary as meson built it or a Go module built here (go-build.sh).
# usage: release-dir.sh OUT PLUGIN_TOML --binary BINARY
#        release-dir.sh OUT PLUGIN_TOML --go GO GO_BUILD_SH MODULE_DIR
set -eu
out=$1
toml=$2
tmp="$out.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$toml" "$tmp/plugin.toml"
case $3 in
--binary) cp "$4" "$tmp/plugin" ;;
--go) "$5" "$4" "$6" "$tmp/plugin" ;;
*) echo "release-dir.sh: unknown kind $3" >&2; exit 2 ;;
esac
chmod 0644 "$tmp/plugin.toml"
chmod 0755 "$tmp/plugin"
# Replaced whole, so that the directory's time says it changed.
rm -rf "$out"
mv "$tmp" "$out"
