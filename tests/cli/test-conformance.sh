#!/bin/sh
# The sigstore-conformance bundle-verify cases run through the real `lockctl verify-bundle`, as the
# conformance suite drives a client (its SOURCE file): every case by path and by sha256 digest,
# a case's own trusted_root.json when it has one, else the built-in production root.
# Usage: test-conformance.sh LOCKCTL CONFORMANCE_DIR
set -u
lockctl=$1 dir=$2/bundle-verify
[ -d "$dir" ] || { echo "not ok 1 - no conformance data at $dir"; echo "1..1"; exit 1; }
n=0 failed=0
default_identity='https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main'
default_issuer='https://token.actions.githubusercontent.com'
for case in "$dir"/*/; do
        case=${case%/}
        name=$(basename "$case")
        artifact="$dir/a.txt"
        [ -f "$case/artifact" ] && artifact="$case/artifact"
        set -- --bundle "$case/bundle.sigstore.json"
        if [ -f "$case/key.pub" ]; then
                set -- "$@" --key "$case/key.pub"
        else
                identity=$default_identity issuer=$default_issuer
                [ -f "$case/identity" ] && identity=$(cat "$case/identity")
                [ -f "$case/issuer" ] && issuer=$(cat "$case/issuer")
                set -- "$@" --certificate-identity "$identity" --certificate-oidc-issuer "$issuer"
        fi
        [ -f "$case/trusted_root.json" ] && set -- "$@" --trusted-root "$case/trusted_root.json"
        for form in path digest; do
                target=$artifact
                [ "$form" = digest ] && target="sha256:$(sha256sum "$artifact" | cut -c1-64)"
                reason=$("$lockctl" verify-bundle "$@" "$target" 2>&1) && rc=0 || rc=$?
                n=$((n + 1))
                case "$name" in
                *_fail) want=reject ;;
                *) want=accept ;;
                esac
                if { [ "$want" = accept ] && [ "$rc" = 0 ]; } || { [ "$want" = reject ] && [ "$rc" != 0 ] && [ -n "$reason" ]; }; then
                        echo "ok $n - $name ($form): ${want}ed${reason:+: $reason}"
                else
                        failed=$((failed + 1))
                        echo "not ok $n - $name ($form): wanted $want, exit $rc: $reason"
                fi
        done
done
echo "1..$n"
[ "$failed" = 0 ]
