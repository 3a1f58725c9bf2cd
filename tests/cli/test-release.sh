#!/bin/sh
# lockctl release verify from the outside, on releases signed by tests/tools/lockd-sign:
# accepted, refused for a wrong issuer, another tag, a changed binary and an index mismatch.
# Usage: test-release.sh LOCKCTL LOCKD_SIGN STATIC_BINARY MANIFEST
set -u
lockctl=$1 sign=$2 binary=$3 manifest=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 failed=0
issuer=https://token.actions.githubusercontent.com
workflow=https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@
pattern='^https://github\.com/acme/lockfile-plugins/\.github/workflows/release\.yml@refs/tags/.*'
name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$manifest")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$manifest")

check() { # DESCRIPTION WANT_EXIT STDOUT_REGEX -- ARGS
        desc=$1 want=$2 re=$3
        shift 4
        out=$("$lockctl" "$@" 2>&1) && rc=0 || rc=$?
        n=$((n + 1))
        if [ "$rc" = "$want" ] && printf '%s\n' "$out" | grep -Eq -- "$re"; then
                echo "ok $n - $desc"
        else
                failed=$((failed + 1))
                echo "not ok $n - $desc (exit $rc: $out)"
        fi
}

release() { # DIR REF
        mkdir -p "$work/$1"
        cp "$manifest" "$work/$1/plugin.toml"
        cp "$binary" "$work/$1/plugin"
        "$sign" sign "$work/root" --identity "$workflow$2" --issuer "$issuer" --ref "$2" \
                "$work/$1/plugin.toml" "$work/$1/plugin" >/dev/null
}

"$sign" init "$work/root" >/dev/null || exit 1
root="$work/root/trusted_root.json"
tag="refs/tags/$name/v$version"
release good "$tag"
check "a signed release is accepted" 0 "^ok $name $version$" -- \
        release verify "$work/good" --trusted-root "$root" --issuer "$issuer" --identity "$pattern"
check "another issuer is refused, naming the expected one" 1 \
        "^error: RELEASE_E_IDENTITY: .* is not the expected issuer https://accounts\.google\.com$" -- \
        release verify "$work/good" --trusted-root "$root" --issuer https://accounts.google.com --identity "$pattern"
release othertag "refs/tags/$name/v9.9.9"
check "a signature for another version's tag is refused" 1 "^error: RELEASE_E_TAG: " -- \
        release verify "$work/othertag" --trusted-root "$root" --issuer "$issuer" --identity "$pattern"
release changed "$tag"
printf 'x' >>"$work/changed/plugin"
check "a binary changed after signing is refused" 1 "^error: RELEASE_E_BUNDLE: " -- \
        release verify "$work/changed" --trusted-root "$root" --issuer "$issuer" --identity "$pattern"
mkdir -p "$work/index"
printf '{"name":"local","version":1,"expires":"2099-12-31T23:59:59Z","releases":[{"name":"%s","version":"%s","manifest_sha256":"%s","binary_sha256":"%s"}]}' \
        "$name" "$version" "$(sha256sum "$work/good/plugin.toml" | cut -c1-64)" \
        "$(printf 'other' | sha256sum | cut -c1-64)" >"$work/index/index.json"
"$sign" sign "$work/root" --identity "${workflow}refs/tags/index" --issuer "$issuer" \
        --ref refs/tags/index "$work/index/index.json" >/dev/null
check "digests that differ from the signed index are refused" 1 "^error: RELEASE_E_INDEX_MISMATCH: " -- \
        release verify "$work/good" --trusted-root "$root" --issuer "$issuer" --identity "$pattern" --index "$work/index"
check "usage" 2 "usage: lockctl release verify" -- release verify "$work/good"
echo "1..$n"
[ "$failed" = 0 ]
