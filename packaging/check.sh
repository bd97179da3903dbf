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
status=$(dpkg --root="$root" -s turnpike)
grep -q '^Status: install ok unpacked' <<<"$status" || fail "dpkg did not unpack it"
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

# The env files configure the binary alone (twelve-factor): the unpacked control plane
# and a gateway following it, each started with nothing but its unit's EnvironmentFiles
# (ports moved to free ones, paths into the scratch root), answer their probes and the
# gateway serves a snapshot. secrets.env is what postinst would write.
run="$scratch/run"
mkdir -p "$run"
printf 'TURNPIKE_GATEWAY_TOKEN=check-token-%s\nTURNPIKE_ADMIN_PASSWORD=check-password\n' "$$" >"$run/secrets.env"
start_role() { # role, then VAR=value overrides: runs it in the background
  local role=$1; shift
  # Unpacked but not configured, dpkg leaves conffiles as NAME.dpkg-new.
  local env_file="$root/etc/turnpike/$role.env"
  [ -e "$env_file" ] || env_file="$env_file.dpkg-new"
  (set -a; . "$run/secrets.env"; . "$env_file"; set +a
   exec env "$@" "$root/usr/bin/turnpike" "${role%%.*}" >"$run/$role.out" 2>&1) &
  echo $! >"$run/$role.pid"
}
wait_for() { # file, pattern: the first match's URL
  for _ in $(seq 1 100); do
    grep -o "$2" "$1" 2>/dev/null | head -1 | grep -o 'http://.*' && return 0
    sleep 0.2
  done
  cat "$1" >&2; return 1
}
# SIGINT: stop at once, without the drain delay SIGTERM gets.
stop_roles() { for f in "$run"/*.pid; do kill -INT "$(cat "$f")" 2>/dev/null || true; done; }
trap 'stop_roles; rm -rf "$scratch"' EXIT
start_role control-plane TURNPIKE_CP_PORT=0 TURNPIKE_DATABASE="sqlite://$run/cp/turnpike.db" \
  TURNPIKE_UI_DIR="$root/usr/share/turnpike/ui"
cp_url=$(wait_for "$run/control-plane.out" 'control plane listening on http://127\.0\.0\.1:[0-9]*') || fail "control plane did not start from its env files"
curl -sf "$cp_url/health" >/dev/null || fail "control plane /health"
curl -sf "$cp_url/ready" >/dev/null || fail "control plane /ready"
page=$(curl -sf "$cp_url/") || fail "control plane / did not answer"
grep -qi '<html' <<<"$page" || fail "control plane does not serve the packaged portals"
start_role gateway TURNPIKE_CONTROL_PLANE="$cp_url" TURNPIKE_HTTP_PORT=0 TURNPIKE_HTTPS_PORT=off \
  TURNPIKE_BIND=127.0.0.1 TURNPIKE_METRICS_ADDR=127.0.0.1:0 TURNPIKE_DATA_DIR="$run/gw"
mgmt=$(wait_for "$run/gateway.out" 'gateway metrics on http://127\.0\.0\.1:[0-9]*') || fail "gateway did not start from its env files"
for _ in $(seq 1 50); do curl -sf "$mgmt/ready" >/dev/null && break; sleep 0.2; done
curl -sf "$mgmt/ready" >/dev/null || fail "gateway /ready (no snapshot from the control plane)"
curl -sf "$mgmt/health" >/dev/null || fail "gateway /health"
echo "package check: control plane and gateway run from the packaged env files; probes answer"
