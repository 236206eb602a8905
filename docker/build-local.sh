#!/usr/bin/env bash
# Builds the Sextant image with podman on a machine that reaches Debian's mirror and the
# package registries but no container registry (the development machines here).
#
# The two base images the Dockerfile names are made locally instead of pulled:
#   - Debian bookworm (minbase) from Debian's mirror with debootstrap, imported as an image;
#   - a Rust build image: that base plus this machine's Rust toolchain (`rustc --print
#     sysroot`), laid out like the official rust image (CARGO_HOME=/usr/local/cargo).
# Then `podman build -f docker/Dockerfile` runs exactly as it would against Docker Hub.
#
# Usage: docker/build-local.sh [TAG]      (default tag localhost/sextant:dev)
# Needs root (or a working rootless podman). Installs podman, runc and debootstrap with
# apt when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${1:-localhost/sextant:dev}"
base_image="localhost/sextant-base/debian:bookworm-slim"
rust_version="$(rustc --version | awk '{print $2}')"
rust_image="localhost/sextant-base/rust:${rust_version}-slim-bookworm"
need=()
for tool in podman runc debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# shellcheck source=docker/podman-env.sh
. docker/podman-env.sh

if ! podman image exists "$base_image"; then
  rootfs="$cache/bookworm-rootfs"
  if [ ! -x "$rootfs/bin/sh" ]; then
    echo "== debootstrap bookworm into $rootfs"
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log"
  fi
  # Security and point-release updates, as the official image has; no apt caches.
  cat >"$rootfs/etc/apt/sources.list" <<'SOURCES'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  # Certificate authorities this machine adds to Debian's (a TLS-inspecting egress proxy,
  # here): `update-ca-certificates`, run when an image installs ca-certificates, picks
  # them up, so crates.io and PyPI verify inside the build as they do outside it.
  extra_ca="${SEXTANT_EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"
  if compgen -G "$extra_ca/*.crt" >/dev/null; then
    mkdir -p "$rootfs/usr/local/share/ca-certificates"
    cp "$extra_ca"/*.crt "$rootfs/usr/local/share/ca-certificates/"
  fi
  echo "== importing $base_image"
  tar -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' - "$base_image" >/dev/null
fi

if ! podman image exists "$rust_image"; then
  sysroot="$(rustc --print sysroot)"
  echo "== $rust_image from $sysroot"
  ctr="$(podman create "$base_image")"
  podman cp "$sysroot" "$ctr:/usr/local/rust"
  podman commit \
    --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' \
    "$ctr" "$rust_image" >/dev/null
  podman rm "$ctr" >/dev/null
fi

echo "== podman build -t $tag (a cold release build takes most of an hour on 2 cores)"
start=$(date +%s)
# `--format docker`: the OCI format has no HEALTHCHECK.
podman build --format docker --runtime runc --network host \
  --build-arg RUST_IMAGE="$rust_image" \
  --build-arg BASE_IMAGE="$base_image" \
  -f docker/Dockerfile -t "$tag" .
echo "== built $tag in $(( $(date +%s) - start )) s"
podman image ls "$tag"
