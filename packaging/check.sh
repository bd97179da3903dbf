#!/usr/bin/env bash
# Checks what scripts/package.sh left in DIR (default target/package), as the test
# command does: the Debian package's fields and files, dpkg unpacking it into a scratch
# root, `turnpike --version` run from there, `systemd-analyze verify` of its units
# against that root, the maintainer scripts' syntax, and the tarball's contents and
# binary. Prints each check; exits non-zero on the first failure.
set -euo pipefail
dir="${1:-target/package}"
deb=$(ls "$dir"/turnpike_*.deb)
tarball=$(ls "$dir"/turnpike-*-linux.tar.gz)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "package check: $*" >&2; exit 1; }

# Fields and files.
info=$(dpkg-deb -I "$deb")
for field in "Package: turnpike" "Depends: .*libc6 (>= " "Architecture: $(dpkg --print-architecture)"; do
  grep -q "^ $field" <<<"$info" || fail "control lacks '$field'"
done
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/turnpike ./lib/systemd/system/turnpike-control-plane.service \
  ./lib/systemd/system/turnpike-gateway.service ./etc/turnpike/control-plane.env \
  ./etc/turnpike/gateway.env ./usr/share/turnpike/ui/index.html ./usr/share/doc/turnpike/copyright; do
  grep -qx "$f" <<<"$files" || fail "$deb lacks $f"
done
[ "$(dpkg-deb -f "$deb" Package)" = turnpike ] || fail "package name"
for script in postinst prerm postrm; do
  dpkg-deb --ctrl-tarfile "$deb" | tar -xO "./$script" | sh -n || fail "$script: syntax"
done
echo "package check: $(basename "$deb"): fields, files and maintainer scripts ok"

# dpkg itself installs the files (unpack: the maintainer scripts would act on this host).
root="$scratch/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-not-root --unpack "$deb" >/dev/null
dpkg --root="$root" -s turnpike | grep -q '^Status: install ok unpacked' || fail "dpkg did not unpack it"
[ "$(dpkg --root="$root" -s turnpike | sed -n 's/^Version: //p')" = "$(dpkg-deb -f "$deb" Version)" ] || fail "version"
version=$("$root/usr/bin/turnpike" --version)
[ "$version" = "turnpike $(dpkg-deb -f "$deb" Version)" ] || fail "turnpike --version said '$version'"
echo "package check: dpkg unpacked it into a scratch root; $version"

# The units, against the unpacked tree (ExecStart's binary must be there).
units=("$root"/lib/systemd/system/turnpike-*.service)
# The targets the units order against (sysinit.target, network-online.target, ...) come
# from this host's systemd, beside the package's units (never over them).
cp -an /lib/systemd/system/. "$root/lib/systemd/system/"
[ "${#units[@]}" = 2 ] || fail "expected two units, found ${#units[@]}"
out=$(systemd-analyze verify --root="$root" "${units[@]}" 2>&1) || fail "systemd-analyze verify: $out"
# verify only warns (exit 0) about unknown or misspelt settings: any line naming our
# units is a failure.
if grep -E 'turnpike-(control-plane|gateway)\.service' <<<"$out"; then fail "systemd-analyze verify warned"; fi
for setting in User=turnpike ProtectSystem=strict NoNewPrivileges=yes \
  AmbientCapabilities=CAP_NET_BIND_SERVICE LimitNOFILE= ReadWritePaths=/var/lib/turnpike; do
  for u in "${units[@]}"; do grep -q "^$setting" "$u" || fail "$(basename "$u") lacks $setting"; done
done
echo "package check: systemd-analyze verify ok: $(basename -a "${units[@]}" | paste -sd' ')"

# The tarball.
tar -C "$scratch" -xzf "$tarball"
top="$scratch/$(basename "$tarball" .tar.gz)"
for f in turnpike LICENSE deployment.md ui/index.html systemd/turnpike-control-plane.service \
  systemd/turnpike-gateway.service env/control-plane.env env/gateway.env examples/gateway.yaml; do
  [ -e "$top/$f" ] || fail "$(basename "$tarball") lacks $f"
done
[ "$("$top/turnpike" --version)" = "$version" ] || fail "tarball binary version"
echo "package check: $(basename "$tarball"): files ok; $version"
