# Sourced by docker/build-local.sh and docker/test-image.sh: podman settings for machines
# like the development VMs here (a Firecracker VM with cgroup v1 in hybrid mode and no
# CAP_SYS_RESOURCE), where crun cannot start containers and podman's default rlimits are
# higher than the host allows. runc works there, with rlimits no higher than the host's.
# CONTAINERS_CONF points podman at this file instead of the machine's containers.conf.
cache="${SEXTANT_IMAGE_CACHE:-$HOME/.cache/sextant/images}"
mkdir -p "$cache"
CONTAINERS_CONF="$cache/containers.conf"
cat >"$CONTAINERS_CONF" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF
