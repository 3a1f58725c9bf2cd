#!/bin/sh
# marketplace/release.sh: one release of an official plugin, the steps of the release workflow
# (.github/workflows/release.yml) run the same way by hand. For the tag NAME/vX.Y.Z: checks that
# marketplace/plugins/NAME/plugin.toml is that very name and version, builds it (meson), lints it,
# runs the import check and every fixture under lockd's sandbox (check-plugin.sh), copies the
# release into OUT/releases/NAME/X.Y.Z/ (never over one published before), signs plugin.toml and
# plugin, and rewrites and re-signs OUT/index.json with lockd-sign index (its version raised).
# OUT is the marketplace's published tree: what its URL serves (docs/marketplace.md).
#
# Signing: --keyless signs with cosign (Sigstore's public-good instance, the CI's OIDC identity;
# the workflow's way); --signer DIR --identity-base URI --issuer URL signs with lockd-sign's
# private instance in DIR, the identity being URI followed by refs/tags/NAME/vX.Y.Z.
#
# usage: marketplace/release.sh TAG BUILD OUT [--name MARKETPLACE] [--expires 30d] [--no-build]
#                               (--keyless | --signer DIR --identity-base URI --issuer URL)
set -eu
cd "$(dirname "$0")/.."

die() {
        echo "release.sh: $*" >&2
        exit 1
}
usage() {
        sed -n 's/^# usage: //p; s/^#   *\((--keyless.*\)/    \1/p' "$0" >&2
        exit 2
}

[ $# -ge 3 ] || usage
tag=$1
build=$2
out=$3
shift 3
market=official
expires=30d
build_it=true
mode=""
signer=""
identity_base=""
issuer=""
while [ $# -gt 0 ]; do
        case $1 in
        --name) market=$2; shift 2 ;;
        --expires) expires=$2; shift 2 ;;
        --no-build) build_it=false; shift ;;
        --keyless) mode=keyless; shift ;;
        --signer) mode=signer; signer=$2; shift 2 ;;
        --identity-base) identity_base=$2; shift 2 ;;
        --issuer) issuer=$2; shift 2 ;;
        *) usage ;;
        esac
done
[ -n "$mode" ] || usage
[ "$mode" = keyless ] || { [ -n "$identity_base" ] && [ -n "$issuer" ]; } || usage

# The tag names the plugin and its version; the manifest must say the same, or lockd refuses the
# release (RELEASE_E_TAG) long after it was published.
case $tag in
*/v*) ;;
*) die "the tag '$tag' is not NAME/vX.Y.Z" ;;
esac
name=${tag%/v*}
version=${tag##*/v}
src=marketplace/plugins/$name
[ -f "$src/plugin.toml" ] || die "no plugin $name (marketplace/plugins/$name/plugin.toml)"
m_name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$src/plugin.toml")
m_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$src/plugin.toml")
[ "$m_name" = "$name" ] && [ "$m_version" = "$version" ] ||
        die "the tag is $name $version, but $src/plugin.toml says $m_name $m_version"

lockctl=$build/client/lockctl
sign=$build/client/lockd-sign
if $build_it; then
        echo "== build"
        meson compile -C "$build" >/dev/null
fi
rel=$build/marketplace/$name
[ -f "$rel/plugin" ] && [ -f "$rel/plugin.toml" ] || die "$rel holds no built release"

echo "== lint, import check and fixtures under the sandbox"
made=""
[ -d "$build/marketplace/$name.fixtures" ] && made=$build/marketplace/$name.fixtures
marketplace/check-plugin.sh "$lockctl" "$rel" "$src" $made

echo "== release $name $version"
dest=$out/releases/$name/$version
# A published release is never replaced: a user who installed it has its digests.
[ ! -e "$dest" ] || die "$dest exists: $name $version is published already"
mkdir -p "$dest"
cp "$rel/plugin.toml" "$rel/plugin" "$dest/"
ref=refs/tags/$tag

case $mode in
keyless)
        for f in plugin.toml plugin; do
                cosign sign-blob --yes --new-bundle-format --bundle "$dest/$f.sigstore.json" \
                        "$dest/$f" >/dev/null
                echo "signed $dest/$f: wrote $dest/$f.sigstore.json"
        done
        "$sign" index "$out" --name "$market" --expires "$expires"
        cosign sign-blob --yes --new-bundle-format --bundle "$out/index.json.sigstore.json" \
                "$out/index.json" >/dev/null
        echo "signed $out/index.json: wrote $out/index.json.sigstore.json"
        ;;
signer)
        "$sign" sign "$signer" --identity "$identity_base$ref" --issuer "$issuer" --ref "$ref" \
                "$dest/plugin.toml" "$dest/plugin"
        "$sign" index "$out" --name "$market" --expires "$expires" --signer "$signer" \
                --identity "$identity_base$ref" --issuer "$issuer" --ref "$ref"
        ;;
esac
echo "== published: $out serves $name $version; publish $out at the marketplace's URL"
