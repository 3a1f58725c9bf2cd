#!/bin/sh
# lockd-sign as an author meets it (the installed build, not the tests' signer): init and sign say
# what they wrote; sign refuses a --ref that is not the manifest's tag and a file it cannot read,
# before signing anything; index writes index.json from releases/, raises its version, signs it
# so that lockctl release verify --index accepts the release, and refuses what it cannot list.
# Usage: test-lockd-sign.sh LOCKD_SIGN LOCKCTL STATIC_BINARY MANIFEST
set -u
sign=$1 lockctl=$2 binary=$3 manifest=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 failed=0
issuer=https://token.actions.githubusercontent.com
workflow=https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@
pattern='^https://github\.com/acme/lockfile-plugins/\.github/workflows/release\.yml@refs/tags/.*'
name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$manifest")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$manifest")
tag=refs/tags/$name/v$version

ok() { # DESCRIPTION CONDITION...
        desc=$1
        shift
        n=$((n + 1))
        if "$@"; then
                echo "ok $n - $desc"
        else
                failed=$((failed + 1))
                echo "not ok $n - $desc"
                sed 's/^/# /' "$work/out"
        fi
}
run() { # WANT_EXIT COMMAND...: runs COMMAND into $work/out, true when it exits WANT_EXIT
        want=$1
        shift
        "$@" >"$work/out" 2>&1 && rc=0 || rc=$?
        [ "$rc" = "$want" ]
}
has() { grep -qF -- "$1" "$work/out"; }

run 0 "$sign" init "$work/signer"
ok "init says what it made" has "wrote $work/signer/trusted_root.json: give it to lockd"

rel=$work/market/releases/$name/$version
mkdir -p "$rel"
cp "$manifest" "$rel/plugin.toml"
cp "$binary" "$rel/plugin"
signit() { # REF FILE...
        ref=$1
        shift
        "$sign" sign "$work/signer" --identity "$workflow$ref" --issuer "$issuer" --ref "$ref" "$@"
}
run 1 signit "refs/tags/$name/v9.9.9" "$rel/plugin.toml" "$rel/plugin"
ok "sign refuses a --ref that is not the manifest's tag, naming the right one" \
        has "lockd wants --ref $tag"
ok "... and signs nothing" test ! -e "$rel/plugin.toml.sigstore.json" -a ! -e "$rel/plugin.sigstore.json"
run 1 signit "$tag" "$rel/plugin" "$work/nonexistent"
ok "sign names a file it cannot read and why" has "cannot read $work/nonexistent: No such file or directory"
ok "... before signing the others" test ! -e "$rel/plugin.sigstore.json"
run 0 signit "$tag" "$rel/plugin.toml" "$rel/plugin"
ok "sign says what it wrote" has "signed $rel/plugin: wrote $rel/plugin.sigstore.json"

index() { # ARGS...
        "$sign" index "$work/market" --name local --signer "$work/signer" \
                --identity "${workflow}refs/tags/index" --issuer "$issuer" --ref refs/tags/index "$@"
}
run 0 index
ok "index writes version 1 with the release" has "marketplace local, version 1, 1 release, expires"
run 0 "$lockctl" release verify "$rel" --trusted-root "$work/signer/trusted_root.json" \
        --issuer "$issuer" --identity "$pattern" --index "$work/market" --name local
ok "the release verifies against the index lockd-sign wrote and signed" has "ok $name $version"
run 0 index --expires 2030-01-01T00:00:00Z
ok "index raises the version and takes an expiry time" has "version 2, 1 release, expires 2030-01-01T00:00:00Z"
ok "... written into the index" grep -q '"version": 2' "$work/market/index.json"
run 2 index --expires 5y
ok "index refuses an expiry it cannot read" has "--expires 5y is neither a duration"
mkdir -p "$work/market/releases/$name/0.0.1"
cp "$manifest" "$work/market/releases/$name/0.0.1/plugin.toml"
cp "$binary" "$work/market/releases/$name/0.0.1/plugin"
run 1 index
ok "index refuses a manifest in another version's directory" \
        has "names another plugin or version than its directory"
rm -rf "$work/market/releases/$name/0.0.1"
printf '{' >"$work/market/index.json"
run 1 index
ok "index does not replace an index.json it cannot read the version of" has "does not parse"
echo "1..$n"
[ "$failed" = 0 ]
