#!/usr/bin/env bash
# Builds Turnpike's container image on a machine that reaches no container registry
# (issue 28 item 2), from the release tarball scripts/package.sh made, and smoke-tests it.
#
# The Containerfile's stages pull node, rust and distroless base images from registries;
# where none is reachable (this project's build machines: Debian's packages, crates, npm,
# PyPI, Go and Maven, but no registry), this script assembles the same runtime image FROM
# scratch: the tarball's binary, portals, licence and examples, the C runtime the binary
# links (ldd: glibc, libm, libgcc_s, the loader) and the CA bundle copied from this Debian 12
# host (the distroless cc-debian12 base is made of the same Debian packages), a passwd entry
# for the non-root user 65532, and the Containerfile's ENV, USER, VOLUME, EXPOSE and
# ENTRYPOINT. Then it runs the image: `turnpike --version`, and a control plane whose
# /health and /ready answer.
#
# Builder: podman + buildah from Debian (apt), run with runc and no default ulimits: this
# KVM guest's hybrid cgroup v1 layout refuses crun and podman's default RLIMIT_NPROC
# (docs/deployment.md "Container image").
#
# Usage: packaging/image.sh [TARBALL] [TAG]   (defaults: target/package/turnpike-*.tar.gz,
#        localhost/turnpike:VERSION)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tarball="${1:-$(ls "$root"/target/package/turnpike-*-linux.tar.gz | head -1)}"
need=()
command -v podman >/dev/null || need+=(podman)
command -v buildah >/dev/null || need+=(buildah)
command -v runc >/dev/null || need+=(runc)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi
work="$(mktemp -d)"
cid=""
cleanup() { [ -n "$cid" ] && podman --runtime runc rm -f "$cid" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
# This host's layout refuses podman's default ulimits; an empty list keeps the host's.
printf '[containers]\ndefault_ulimits = []\npids_limit = 0\n' >"$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"
pod() { podman --runtime runc "$@"; }

tar -xzf "$tarball" -C "$work"
pkg="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'turnpike-*')"
version="$("$pkg/turnpike" --version | awk '{print $2}')"
tag="${2:-localhost/turnpike:$version}"

rootfs="$work/rootfs"
install -D -m 0755 "$pkg/turnpike" "$rootfs/usr/bin/turnpike"
mkdir -p "$rootfs/usr/share/turnpike" "$rootfs/usr/share/doc/turnpike/examples" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
cp -r "$pkg/ui" "$rootfs/usr/share/turnpike/ui"
cp "$pkg/LICENSE" "$rootfs/usr/share/doc/turnpike/LICENSE"
cp "$pkg"/examples/*.yaml "$rootfs/usr/share/doc/turnpike/examples/"
chmod 1777 "$rootfs/tmp"
# The C runtime the binary links, at the paths the loader looks for them.
ldd "$pkg/turnpike" | awk '/=> \//{print $3} /^[ \t]*\/lib/{print $1}' | while read -r lib; do
  install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
done
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
# The user's directories come from their own COPY with --chown (a directory already in an
# earlier layer would keep that layer's owner).
mkdir -m 0750 "$work/state"

cat >"$work/Containerfile" <<'IMAGE'
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 state/ /var/lib/turnpike/
COPY --chown=65532:65532 state/ /home/nonroot/
ENV TURNPIKE_BIND=0.0.0.0 \
    TURNPIKE_CP_BIND=0.0.0.0 \
    TURNPIKE_DATA_DIR=/var/lib/turnpike \
    TURNPIKE_DATABASE=sqlite:///var/lib/turnpike/turnpike.db \
    TURNPIKE_UI_DIR=/usr/share/turnpike/ui \
    TURNPIKE_METRICS_ADDR=0.0.0.0:9091 \
    TURNPIKE_LOG_FORMAT=json \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /var/lib/turnpike
VOLUME /var/lib/turnpike
EXPOSE 8280 8243 9091 9400
ENTRYPOINT ["/usr/bin/turnpike"]
CMD ["control-plane"]
IMAGE
pod build -q -t "$tag" -f "$work/Containerfile" "$work" >/dev/null
echo "image: $tag ($(pod image inspect "$tag" --format '{{.Size}}') bytes)"

echo "-- turnpike --version in the image, as user $(pod image inspect "$tag" --format '{{.Config.User}}')"
pod run --rm "$tag" --version
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
echo "-- control plane in the image on host port $port"
cid="$(pod run -d --network=host -e TURNPIKE_ADMIN_PASSWORD=image-check-password "$tag" \
  control-plane --bind 127.0.0.1 --port "$port")"
for _ in $(seq 1 60); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.5
done
health="$(curl -fsS "http://127.0.0.1:$port/health")" || { pod logs "$cid" >&2; exit 1; }
echo "/health: $health"
curl -fsS -o /dev/null -w 'portal index: %{http_code}\n' "http://127.0.0.1:$port/"
echo "image check: ok"
