#!/usr/bin/env bash
# System set-up the code sandbox needs on a fresh Debian/Ubuntu machine; idempotent.
#
#   scripts/system_setup.sh            # = packages + docker
#   scripts/system_setup.sh packages   # apt-get install bubblewrap docker.io debootstrap g++ (only what is missing)
#   scripts/system_setup.sh docker     # start dockerd in the background unless an engine already answers
#
# Why: the process backend runs code under bubblewrap; the docker backend needs a
# Docker engine, and its runner image is built locally with debootstrap (no
# registry is reachable). `make setup` and .ci/run call this when running as root;
# as another user it only says what is missing and exits 0 (the docker tests then
# skip with that reason, unless SANDBOX_REQUIRE_DOCKER=1, as in CI, makes them fail).
#
# A dockerd started here keeps running after the caller exits (log:
# $DOCKERD_LOG, default /var/log/reward-suite-dockerd.log; stop it with
# `kill $(cat /var/run/docker.pid)`). CI machines are discarded after the run, so
# CI does not stop it; on a workstation it is a normal system daemon.
set -euo pipefail

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/reward-suite-dockerd.log}
DOCKER_WAIT_S=${DOCKER_WAIT_S:-60}

log() { echo "system_setup: $*" >&2; }
is_root() { [ "$(id -u)" = 0 ]; }
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

engine_answers() {
    # The SDK and the CLI both use DOCKER_HOST or /var/run/docker.sock; the CLI may be absent.
    if have docker; then
        timeout 10 docker info >/dev/null 2>&1
    else
        [ -S /var/run/docker.sock ] && timeout 10 curl -sf --unix-socket /var/run/docker.sock http://d/_ping >/dev/null 2>&1
    fi
}

install_packages() {
    local missing=()
    have bwrap || missing+=(bubblewrap)
    have dockerd || missing+=(docker.io)
    have debootstrap || missing+=(debootstrap)
    have g++ || missing+=(g++)
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    if ! is_root || ! have apt-get; then
        log "missing: ${missing[*]}; as root on Debian/Ubuntu run: apt-get install -y ${missing[*]}"
        return 0
    fi
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
    apt-get update -qq
    # Recommends stay on: docker.io recommends cgroupfs-mount, which mounts cgroups where no init did.
    apt-get install -y -qq "${missing[@]}" >/dev/null
}

mount_cgroups() {
    # dockerd needs a cgroup hierarchy. Machines booted without systemd (firecracker
    # VMs, containers) may have none mounted: cgroupfs-mount sets up v1 (what dockerd
    # 20.10 on bookworm expects); failing that, mount the unified v2 hierarchy.
    if grep -qE '^\S+ /sys/fs/cgroup(/\S+)? (cgroup|cgroup2) ' /proc/mounts; then
        return 0
    fi
    if have cgroupfs-mount; then
        cgroupfs-mount || true
    fi
    if ! grep -qE '^\S+ /sys/fs/cgroup(/\S+)? (cgroup|cgroup2) ' /proc/mounts; then
        mount -t cgroup2 none /sys/fs/cgroup || log "could not mount cgroups; dockerd may fail"
    fi
}

start_docker() {
    if engine_answers; then
        return 0
    fi
    if ! have dockerd; then
        log "no Docker engine answers and dockerd is not installed (run: $0 packages)"
        return 0
    fi
    if ! is_root; then
        log "no Docker engine answers; start one as root (e.g. sudo $0 docker)"
        return 0
    fi
    if [ -f /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        log "dockerd (pid $(cat /var/run/docker.pid)) is running but not answering yet; waiting"
    else
        mount_cgroups
        rm -f /var/run/docker.pid
        mkdir -p "$(dirname "$DOCKERD_LOG")"
        log "starting dockerd (log: $DOCKERD_LOG)"
        # setsid + nohup: the daemon outlives this script and the make/pytest that ran it.
        setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
    fi
    local waited=0
    until engine_answers; do
        if [ "$waited" -ge "$DOCKER_WAIT_S" ]; then
            log "dockerd did not answer within ${DOCKER_WAIT_S}s; last lines of $DOCKERD_LOG:"
            tail -n 20 "$DOCKERD_LOG" >&2 || true
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    log "Docker engine ready after ${waited}s"
}

case "${1:-all}" in
    packages) install_packages ;;
    docker) start_docker ;;
    all) install_packages; start_docker ;;
    *) echo "usage: $0 [all|packages|docker]" >&2; exit 2 ;;
esac
