#!/usr/bin/env bash
# Builds Turnpike's release artefacts in target/package/:
#   turnpike-VERSION-ARCH-linux.tar.gz  binary, web portals, example config and env files,
#                                       systemd units, LICENSE, docs/deployment.md
#   turnpike_VERSION_DEBARCH.deb        the same laid out for Debian (dpkg-deb; see
#                                       packaging/debian/), with its own user, units and
#                                       /etc/turnpike/*.env
# Usage: scripts/package.sh [--profile release|quickstart|ci-bench|dev] [--no-build]
#   --profile   cargo profile of the binary (default release: what users get). The test
#               command packages the binary it already built instead of a fat-LTO one.
#   --no-build  use target/PROFILE/turnpike and ui/dist as they are.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="${2:?--profile needs a value}"; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
profile_dir=$profile
[ "$profile" = dev ] && profile_dir=debug

if [ "$build" = 1 ]; then
  (cd ui && npm run --silent build)
  cargo build --locked --profile "$profile" -p turnpike
fi
bin="${CARGO_TARGET_DIR:-target}/$profile_dir/turnpike"
[ -x "$bin" ] || { echo "package.sh: no $bin (build it or drop --no-build)" >&2; exit 1; }
[ -s ui/dist/index.html ] || { echo "package.sh: no ui/dist (cd ui && npm run build)" >&2; exit 1; }

version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' Cargo.toml)
arch=$(uname -m)
deb_arch=$(dpkg --print-architecture)
out=target/package
rm -rf "$out" && mkdir -p "$out"

# One tree, laid out as installed, for both artefacts.
root="$out/root"
install -Dm755 "$bin" "$root/usr/bin/turnpike"
mkdir -p "$root/usr/share/turnpike" && cp -r ui/dist "$root/usr/share/turnpike/ui"
for unit in packaging/systemd/*.service; do
  install -Dm644 "$unit" "$root/lib/systemd/system/$(basename "$unit")"
done
for env in packaging/env/*.env; do
  install -Dm640 "$env" "$root/etc/turnpike/$(basename "$env")"
done
doc="$root/usr/share/doc/turnpike"
install -Dm644 LICENSE "$doc/copyright"
install -Dm644 docs/deployment.md "$doc/deployment.md"
install -Dm644 examples/gateway.yaml "$doc/examples/gateway.yaml"
install -Dm644 examples/echo.yaml "$doc/examples/echo.yaml"

# The tarball: the same files under one directory, LICENSE at its top.
name="turnpike-$version-$arch-linux"
tar_dir="$out/$name"
mkdir -p "$tar_dir"
cp -r "$root/usr/bin/turnpike" "$root/usr/share/turnpike/ui" "$tar_dir/"
mkdir -p "$tar_dir/systemd" "$tar_dir/env" "$tar_dir/examples"
cp packaging/systemd/*.service "$tar_dir/systemd/"
cp packaging/env/*.env "$tar_dir/env/"
cp examples/gateway.yaml examples/echo.yaml "$tar_dir/examples/"
cp LICENSE docs/deployment.md "$tar_dir/"
tar -C "$out" --owner=0 --group=0 -czf "$out/$name.tar.gz" "$name"
rm -rf "$tar_dir"

# The Debian package: control fields computed from the binary (its shared libraries'
# packages, the newest glibc symbol version it needs) and the tree's size.
depends=$(packaging/debian/depends.sh "$root/usr/bin/turnpike")
size=$(du -sk "$root" | cut -f1)
mkdir -p "$root/DEBIAN"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$deb_arch/" -e "s/@DEPENDS@/$depends/" \
  -e "s/@SIZE@/$size/" packaging/debian/control.in >"$root/DEBIAN/control"
install -m644 packaging/debian/conffiles "$root/DEBIAN/conffiles"
install -m755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"
deb="$out/turnpike_${version}_$deb_arch.deb"
dpkg-deb --root-owner-group -Zgzip -z9 --build "$root" "$deb" >/dev/null
rm -rf "$root"

echo "package: $out/$name.tar.gz"
echo "package: $deb"
