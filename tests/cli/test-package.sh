#!/bin/sh
# The Debian package as a packager builds it: dpkg-buildpackage -us -uc -b on a clean copy of the
# tree with Debian's default flags, lintian (pedantic) without an error or a warning, and the
# packages holding what they must. TAP on stdout. Missing tools are failures (scripts/deps --test
# installs them).
# usage: test-package.sh SOURCE_DIR [SHARED_DIR]   (SHARED_DIR: the packages built once for
# this suite and the installed one, tests/tools/build-deb.sh)
set -u
src=$1
shared=${2:-}
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
finish() { echo "1..$n"; [ "$failed" = 0 ]; exit $?; }

for tool in dpkg-buildpackage dh lintian; do
        command -v $tool >/dev/null || { not_ok "$tool is not installed"; finish; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if "$(dirname "$0")/../tools/build-deb.sh" "$src" "$work" "$shared"; then
        ok "dpkg-buildpackage -us -uc -b builds lockd and lockd-dev"
else
        not_ok "dpkg-buildpackage failed"
        tail -n 30 "$work/log" | sed 's/^/# /'
        finish
fi
deb=$(ls "$work"/lockd_*_amd64.deb)
dev=$(ls "$work"/lockd-dev_*_amd64.deb)
if lintian --pedantic --fail-on error,warning "$work"/lockd_*_amd64.changes >"$work/lintian.log" 2>&1
then
        ok "lintian --pedantic: no error, no warning"
else
        not_ok "lintian --pedantic"
        sed 's/^/# /' "$work/lintian.log"
fi
dpkg -c "$deb" | awk '{print $6}' >"$work/files"
dpkg -c "$dev" | awk '{print $6}' >>"$work/files"
for f in ./usr/sbin/lockd ./usr/bin/lockctl ./usr/bin/lockask ./usr/bin/lockd-sign \
        ./usr/libexec/lockd/lockd-verify ./usr/share/man/man1/lockd-sign.1.gz \
        ./lib/systemd/system/lockd.service ./lib/systemd/system/lockd.socket \
        ./lib/systemd/system/lockd-console.socket ./usr/lib/sysusers.d/lockd.conf \
        ./usr/lib/tmpfiles.d/lockd.conf ./usr/share/man/man8/lockd.8.gz \
        ./usr/share/man/man1/lockask.1.gz ./usr/share/man/man5/lockd.yaml.5.gz \
        ./etc/lockd/lockd.yaml ./usr/share/bash-completion/completions/lockctl \
        ./usr/include/lockd/lockplugin.h ./usr/include/lockd/lockd-agent.h \
        ./usr/share/lockd/go/go.mod ./usr/share/lockd/go/sdk.go \
        ./usr/share/lockd/go/sdktest/sdktest.go; do
        grep -qx "$f" "$work/files" && ok "holds $f" || not_ok "does not hold $f"
done
# The Go SDK as lockd-dev installs it is a whole module: a Go plugin from the packaged lockctl
# builds against it, static (go.mod's replace points at the unpacked copy).
dpkg-deb -x "$deb" "$work/root"
dpkg-deb -x "$dev" "$work/root"
if command -v go >/dev/null &&
        "$work/root/usr/bin/lockctl" plugin new acme.packaged --lang go --dir "$work/gop" \
                --sdk "$work/root/usr/share/lockd/go" >/dev/null &&
        (cd "$work/gop" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOPROXY=off GOCACHE="$work/gocache" \
                GOPATH="$work/gopath" go vet ./... && CGO_ENABLED=0 GOFLAGS=-mod=mod \
                GOPROXY=off GOCACHE="$work/gocache" GOPATH="$work/gopath" \
                go build -trimpath -o plugin .) >"$work/go.log" 2>&1 &&
        file "$work/gop/plugin" | grep -q "statically linked"; then
        ok "a Go plugin from lockctl plugin new builds against lockd-dev's Go SDK"
else
        not_ok "a Go plugin does not build against lockd-dev's Go SDK"
        sed 's/^/# /' "$work/go.log" 2>/dev/null
fi
dpkg -e "$deb" "$work/control"
grep -qx /etc/lockd/lockd.yaml "$work/control/conffiles" && ok "lockd.yaml is a conffile" ||
        not_ok "lockd.yaml is not a conffile"
grep -q "systemd-sysusers.*lockd.conf" "$work/control/postinst" &&
        ok "postinst creates the lockd-console group (systemd-sysusers)" ||
        not_ok "postinst runs no systemd-sysusers"
# The units a fresh installation enables: what follows dh's "new installations run enable".
fresh=$(awk '/new installations run enable/ { getline; print }' "$work/control/postinst" |
        grep -o "'[^']*'" | sort | tr '\n' ' ')
if [ "$fresh" = "'lockd-console.socket' 'lockd.socket' " ]; then
        ok "postinst enables the sockets, not the service"
else
        not_ok "postinst enables on a fresh installation: $fresh"
fi
finish
