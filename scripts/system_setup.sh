#!/usr/bin/env bash
# System set-up the code sandbox needs on a fresh Debian/Ubuntu machine; idempotent.
#
#   scripts/system_setup.sh            # = packages + docker
#   scripts/system_setup.sh packages   # apt-get install bubblewrap docker.io debootstrap + the languages' toolchains
#   scripts/system_setup.sh docker     # start dockerd in the background unless an engine already answers
#
#   SANDBOX_LANGUAGES=core|all|python,go,...   which languages' toolchains `packages` installs (default: core,
#                                       i.e. python, cpp, c, bash). The packages come from sandbox/languages.toml
#                                       (scripts/language_packages.py, with the system python3: no venv needed);
#                                       `make setup`/`make demo` stay on core, CI (.ci/run) installs all.
#                                       Only missing packages are installed (--no-install-recommends). A
#                                       language with npm_packages (jest) gets them from `npm install -g` where
#                                       node is not Debian's (NodeSource's nodejs conflicts with Debian's jest).
#   INSPECTOR_BROWSER=1                 also install Chromium (Debian's `chromium`): the headless browser the
#                                       rollout inspector's page is tested in (tests/integration/
#                                       test_inspector_browser.py; it skips without one). Default 0; CI (.ci/run)
#                                       sets 1, with INSPECTOR_REQUIRE_BROWSER=1 so the tests cannot skip there.
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
SANDBOX_LANGUAGES=${SANDBOX_LANGUAGES:-core}
INSPECTOR_BROWSER=${INSPECTOR_BROWSER:-0}
HERE=$(cd "$(dirname "$0")" && pwd)
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

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

node_is_debian() {
    # No node yet (apt will install Debian's), or the installed nodejs is a version Debian's archive has.
    have node || return 0
    local version
    version=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null) || return 1   # a node apt did not install
    apt-cache madison nodejs 2>/dev/null | awk -F'|' -v v="$version" '{ gsub(/ /, "", $2) } $2 == v && $3 !~ /nodesource/' |
        grep -q .
}

language_packages() {  # language_packages apt|npm [flags]: the set's packages, one a line
    local kind=$1
    shift
    python3 "$HERE/language_packages.py" "$kind" "$SANDBOX_LANGUAGES" "$@"
}

install_languages() {
    local node_flag=() packages missing=() npm_missing=() p
    if ! have python3; then   # the language table is read with the system python3
        if is_root && have apt-get; then
            apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 >/dev/null
        else
            log "python3 is missing (it reads sandbox/languages.toml); as root run: apt-get install -y python3"
            return 0
        fi
    fi
    node_is_debian || node_flag=(--node-not-debian)
    packages=$(language_packages apt "${node_flag[@]}") || return 1
    for p in $packages; do installed "$p" || missing+=("$p"); done
    if [ ${#node_flag[@]} -gt 0 ] && [ -n "$(language_packages npm)" ] && ! have npm; then
        log "node here is not Debian's and has no npm: install ${SANDBOX_LANGUAGES}'s npm packages by hand:" \
            "$(language_packages npm | tr '\n' ' ')"
    elif [ ${#node_flag[@]} -gt 0 ]; then
        for p in $(language_packages npm); do
            [ -e "$(npm root -g 2>/dev/null)/${p%@*}/package.json" ] || npm_missing+=("$p")
        done
    fi
    if [ ${#missing[@]} -eq 0 ] && [ ${#npm_missing[@]} -eq 0 ]; then
        return 0
    fi
    if ! is_root || ! have apt-get; then
        log "SANDBOX_LANGUAGES=$SANDBOX_LANGUAGES: missing ${missing[*]} ${npm_missing[*]}; as root run:" \
            "apt-get install -y --no-install-recommends ${missing[*]}${npm_missing:+; npm install -g ${npm_missing[*]}}"
        return 0
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        log "SANDBOX_LANGUAGES=$SANDBOX_LANGUAGES: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
        [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq; APT_UPDATED=1; }
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    if [ ${#npm_missing[@]} -gt 0 ]; then
        log "SANDBOX_LANGUAGES=$SANDBOX_LANGUAGES: npm install -g ${npm_missing[*]} (node here is not Debian's)"
        npm install -g --no-fund --no-audit --loglevel=error "${npm_missing[@]}" >/dev/null
    fi
}

install_browser() {
    # The test drives Chromium itself (--dump-dom, --screenshot): no WebDriver, no Python package.
    [ "$INSPECTOR_BROWSER" = 1 ] || return 0
    if have chromium || have chromium-browser; then
        return 0
    fi
    if ! is_root || ! have apt-get; then
        log "INSPECTOR_BROWSER=1: chromium is missing; as root run: apt-get install -y --no-install-recommends chromium"
        return 0
    fi
    log "INSPECTOR_BROWSER=1: installing chromium"
    export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
    [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq; APT_UPDATED=1; }
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
}

install_packages() {
    local missing=()
    have bwrap || missing+=(bubblewrap)
    have dockerd || missing+=(docker.io)
    have debootstrap || missing+=(debootstrap)
    if [ ${#missing[@]} -gt 0 ]; then
        if ! is_root || ! have apt-get; then
            log "missing: ${missing[*]}; as root on Debian/Ubuntu run: apt-get install -y ${missing[*]}"
        else
            log "installing ${missing[*]}"
            export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
            apt-get update -qq
            APT_UPDATED=1
            # Recommends stay on: docker.io recommends cgroupfs-mount, which mounts cgroups where no init did.
            apt-get install -y -qq "${missing[@]}" >/dev/null
        fi
    fi
    install_languages
    install_browser
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
