# shellcheck shell=bash
# Real Docker and Podman daemons for the whole-binary tests, each private to a
# directory DIR (socket, storage, state and logs all live under DIR). Source
# this file; every function says on stderr what it does and, when something
# cannot run on this machine, returns non-zero after saying why, so that the
# caller can skip with that reason (also left in CT_WHY). Call docker_up and
# podman_up directly, not in $(...): they set globals that dk and pm use.
# dockerd runs without iptables or a bridge; Podman only with runc, cgroupfs
# and ulimits this machine allows (ct_podman_config).
#
#   at_exit 'docker_down "$WORK/docker"'
#   docker_up "$WORK/docker" || { skip "real docker" "$CT_WHY"; finish; }
#   gpuledger ... --docker "unix://$WORK/docker/docker.sock"
#   id=$(docker_run_task worker-<alloc> com.hashicorp.nomad.alloc_id=<alloc> -- sleep 300)
#   pid=$(container_pid "$id")

CT_IMAGE=gpuledger-test/busybox:1
CT_LABEL=gpuledger-test=1     # on every container started here
CT_DOCKER_DIR=""              # set by docker_up: the daemon dk talks to
CT_PODMAN_DIR=""              # set by podman_up: the storage pm works on
# shellcheck disable=SC2034 # read by the caller
CT_WHY=""                     # why the last thing could not run

# ct_say TEXT...: one progress line on stderr. Returns 0.
ct_say() { printf 'containers: %s\n' "$*" >&2; }

# ct_fail TEXT...: says why something cannot run, and keeps it in CT_WHY.
# Returns 1.
ct_fail() {
    # shellcheck disable=SC2034 # read by the caller
    CT_WHY=$*
    printf 'containers: cannot run: %s\n' "$*" >&2
    return 1
}

# ct_now_ms: prints a monotonic-enough clock in milliseconds.
ct_now_ms() { local s n; read -r s n < <(date '+%s %N'); echo $((s * 1000 + 10#$n / 1000000)); }

# ct_alive PID: succeeds while PID is a running (not zombie) process.
ct_alive() {
    local stat
    [ -n "$1" ] && stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# ct_apt PKG...: installs the Debian packages not yet installed
# (scripts/install-missing). Returns non-zero, with apt's last lines in
# CT_WHY, when they cannot be installed.
ct_apt() {
    local said
    said=$("$GPULEDGER_SOURCE_DIR/scripts/install-missing" "$@" 2>&1) || { ct_fail "$said"; return 1; }
    [ -z "$said" ] || ct_say "$said"
}

# ct_busybox_tar DIR: writes DIR/busybox.tar, a root filesystem holding only a
# static busybox with sh, sleep, cat and true. Returns non-zero if it cannot.
ct_busybox_tar() {
    local root=$1/busybox-root tool
    mkdir -p "$root/bin" || return 1
    cp -L /bin/busybox "$root/bin/busybox" || { ct_fail "no /bin/busybox (busybox-static)"; return 1; }
    for tool in sh sleep cat true; do ln -sf busybox "$root/bin/$tool"; done
    tar -C "$root" -cf "$1/busybox.tar" . || { ct_fail "cannot write $1/busybox.tar"; return 1; }
}

# ct_wait_ping SOCKET PID SECONDS: waits until the Engine API on SOCKET answers
# /_ping with OK. Returns non-zero if PID dies or SECONDS pass first.
ct_wait_ping() {
    local deadline=$(($(ct_now_ms) + $3 * 1000))
    while [ "$(ct_now_ms)" -lt "$deadline" ]; do
        [ "$(curl -s --max-time 2 --unix-socket "$1" http://d/_ping 2>/dev/null)" = OK ] && return 0
        ct_alive "$2" || return 1
        sleep 0.1
    done
    return 1
}

# ct_stop PID SECONDS: SIGTERM, then SIGKILL if PID still runs after SECONDS.
# Returns 0.
ct_stop() {
    local pid=$1 i
    ct_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < $2 * 10; i++)); do
        ct_alive "$pid" || return 0
        sleep 0.1
    done
    ct_say "pid $pid ignored SIGTERM for $2 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    return 0
}

# ct_kill_leftovers DIR: SIGKILLs each daemon-side process (dockerd,
# containerd, its shims, runc, conmon, podman) whose command line names DIR:
# what a stopped daemon left behind. Returns 0.
ct_kill_leftovers() {
    local proc pid comm
    for proc in /proc/[0-9]*; do
        pid=${proc#/proc/}
        comm=$(cat "$proc/comm" 2>/dev/null) || continue
        case $comm in dockerd | containerd | containerd-shim* | runc | conmon | podman) ;; *) continue ;; esac
        if tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "$1/"; then
            ct_say "killing leftover $comm (pid $pid)"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
    return 0
}

# ct_unmount_under DIR: lazily unmounts every mount point under DIR, deepest
# first (overlays, shm, netns, the storage's own bind mount). Returns 0.
ct_unmount_under() {
    local mnt
    # mountinfo field 5 is the mount point, with \040-style escapes.
    awk -v d="$1/" 'index($5, d) == 1 { print length($5), $5 }' /proc/self/mountinfo |
        sort -rn | while read -r _ mnt; do
            mnt=$(printf '%b' "$mnt")
            ct_say "umount -l $mnt"
            umount -l "$mnt" 2>/dev/null || true
        done
    return 0
}

# ct_remove_dir DIR: unmounts what is left under DIR and removes it, never
# crossing into another filesystem. Returns 0.
ct_remove_dir() {
    ct_unmount_under "$1"
    rm -rf --one-file-system "$1" 2>/dev/null || rm -rf --one-file-system "$1"
    return 0
}

# ct_abs DIR: prints DIR as an absolute path without symlinks.
ct_abs() { readlink -m -- "$1"; }

# dk ARGS...: the docker CLI, talking to the daemon of the last docker_up.
dk() {
    DOCKER_CONFIG=$CT_DOCKER_DIR/cli timeout 60 "$(ct_docker_cli)" -H "unix://$CT_DOCKER_DIR/docker.sock" "$@"
}

# ct_docker_cli: prints the docker client to use (Debian's, matching dockerd).
ct_docker_cli() { if [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else echo docker; fi; }

# docker_up DIR: installs docker.io and busybox-static if missing, starts a
# private dockerd under DIR (no iptables, no bridge), waits for /_ping and
# imports the busybox image as gpuledger-test/busybox:1 (API socket:
# DIR/docker.sock). Returns non-zero, saying why, when any step fails; a
# daemon it started is then stopped again (docker_down DIR).
docker_up() {
    local dir start pid why
    dir=$(ct_abs "$1")
    start=$(ct_now_ms)
    ct_apt docker.io busybox-static || return 1
    command -v dockerd >/dev/null || { ct_fail "no dockerd after installing docker.io"; return 1; }
    mkdir -p "$dir" || { ct_fail "cannot create $dir"; return 1; }
    CT_DOCKER_DIR=$dir
    ct_say "starting dockerd in $dir"
    (setsid dockerd --iptables=false --ip6tables=false --bridge=none \
        -H "unix://$dir/docker.sock" --data-root "$dir/data" --exec-root "$dir/exec" \
        --pidfile "$dir/docker.pid" </dev/null >"$dir/dockerd.log" 2>&1 &
        echo $! >"$dir/dockerd.launched")
    pid=$(cat "$dir/dockerd.launched")
    if ! ct_wait_ping "$dir/docker.sock" "$pid" 30; then
        if ct_alive "$pid"; then why="did not answer /_ping within 30 s"; else why="exited"; fi
        ct_fail "dockerd $why: $(tail -n 3 "$dir/dockerd.log" | tr '\n' ' ')"
        docker_down "$dir"
        return 1
    fi
    ct_busybox_tar "$dir" || { docker_down "$dir"; return 1; }
    ct_say "importing $CT_IMAGE"
    dk import "$dir/busybox.tar" "$CT_IMAGE" >/dev/null || { ct_fail "docker import failed"; docker_down "$dir"; return 1; }
    ct_say "docker up in $(($(ct_now_ms) - start)) ms"
}

# docker_down DIR: removes the containers, stops dockerd (SIGTERM, SIGKILL
# after 15 s), kills what it left, unmounts everything under DIR and removes
# DIR. Idempotent; safe in an EXIT trap. Returns 0.
docker_down() {
    local dir pid ids
    dir=$(ct_abs "$1")
    [ -n "$1" ] && [ "$dir" != / ] && [ -d "$dir" ] || return 0
    pid=$(cat "$dir/docker.pid" 2>/dev/null || cat "$dir/dockerd.launched" 2>/dev/null)
    if ct_alive "$pid"; then
        ids=$(CT_DOCKER_DIR=$dir dk ps -aq 2>/dev/null)
        if [ -n "$ids" ]; then
            ct_say "removing containers $(echo "$ids" | tr '\n' ' ')"
            # shellcheck disable=SC2086 # one id per word
            CT_DOCKER_DIR=$dir dk rm -f $ids >/dev/null 2>&1
        fi
        ct_say "stopping dockerd (pid $pid)"
        ct_stop "$pid" 15
    fi
    ct_kill_leftovers "$dir"
    ct_remove_dir "$dir"
    [ "$CT_DOCKER_DIR" = "$dir" ] && CT_DOCKER_DIR=""
    return 0
}

# ct_run_args ARGS...: splits "LABEL... -- CMD..." into the arrays ct_opts
# (--label k=v for each label; a word starting with - passes through, e.g.
# --env=NVIDIA_VISIBLE_DEVICES=GPU-1) and ct_cmd. Returns 2 on a malformed list.
ct_run_args() {
    ct_opts=(--label "$CT_LABEL") ct_cmd=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in -*) ct_opts+=("$1") ;; *) ct_opts+=(--label "$1") ;; esac
        shift
    done
    [ $# -gt 1 ] || { ct_say "expected LABEL... -- CMD..."; return 2; }
    shift
    ct_cmd=("$@")
}

# docker_run_task NAME LABEL... -- CMD...: starts a detached container NAME
# (no network) from the busybox image with the labels k=v, running CMD.
# Prints the container's full id. Returns docker's status.
docker_run_task() {
    local name=$1
    shift
    ct_run_args "$@" || return 2
    ct_say "docker run $name: ${ct_cmd[*]}"
    dk run -d --network none --name "$name" "${ct_opts[@]}" "$CT_IMAGE" "${ct_cmd[@]}"
}

# container_pid ID: prints the host pid of the container's init process, asking
# the docker daemon, then podman. Returns non-zero when neither knows ID.
container_pid() {
    local pid
    if [ -n "$CT_DOCKER_DIR" ]; then
        pid=$(dk inspect -f '{{.State.Pid}}' "$1" 2>/dev/null) && [ "${pid:-0}" != 0 ] && { echo "$pid"; return 0; }
    fi
    if [ -n "$CT_PODMAN_DIR" ]; then
        pid=$(pm inspect -f '{{.State.Pid}}' "$1" 2>/dev/null) && [ "${pid:-0}" != 0 ] && { echo "$pid"; return 0; }
    fi
    ct_say "no running container $1"
    return 1
}

# pm ARGS...: the podman CLI on the private storage and config of the last
# podman_up (the same ones its API service uses).
pm() {
    CONTAINERS_CONF=$CT_PODMAN_DIR/containers.conf \
        CONTAINERS_STORAGE_CONF=$CT_PODMAN_DIR/storage.conf \
        timeout 60 podman "$@"
}

# ct_podman_config DIR: writes DIR/containers.conf (runc, cgroupfs, file events,
# ulimits this machine allows) and DIR/storage.conf (storage under DIR).
ct_podman_config() {
    mkdir -p "$1/networks" "$1/tmp" || return 1
    cat >"$1/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$1/events.log"
tmp_dir = "$1/tmp"

[network]
network_config_dir = "$1/networks"
EOF
    cat >"$1/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$1/storage"
runroot = "$1/run"
EOF
}

# podman_up DIR: installs podman, runc and busybox-static if missing, writes a
# private config under DIR, starts `podman system service` on DIR/podman.sock
# (Docker-compatible API), waits for /_ping and imports the busybox image.
# Returns non-zero, with podman's own words, when any step fails; a service
# it started is then stopped again (podman_down DIR).
podman_up() {
    local dir start pid out why
    dir=$(ct_abs "$1")
    start=$(ct_now_ms)
    ct_apt podman runc busybox-static || return 1
    command -v podman >/dev/null || { ct_fail "no podman after installing it"; return 1; }
    ct_podman_config "$dir" || { ct_fail "cannot write the podman config under $dir"; return 1; }
    CT_PODMAN_DIR=$dir
    ct_say "starting podman system service in $dir"
    (CONTAINERS_CONF=$dir/containers.conf CONTAINERS_STORAGE_CONF=$dir/storage.conf \
        setsid podman system service --time=0 "unix://$dir/podman.sock" \
        </dev/null >"$dir/podman.log" 2>&1 &
        echo $! >"$dir/podman.pid")
    pid=$(cat "$dir/podman.pid")
    if ! ct_wait_ping "$dir/podman.sock" "$pid" 30; then
        if ct_alive "$pid"; then why="did not answer /_ping within 30 s"; else why="exited"; fi
        ct_fail "podman service $why: $(tail -n 3 "$dir/podman.log" | tr '\n' ' ')"
        podman_down "$dir"
        return 1
    fi
    ct_busybox_tar "$dir" || { podman_down "$dir"; return 1; }
    ct_say "importing $CT_IMAGE"
    out=$(pm import "$dir/busybox.tar" "$CT_IMAGE" 2>&1) || { ct_fail "podman import: $out"; podman_down "$dir"; return 1; }
    ct_say "podman up in $(($(ct_now_ms) - start)) ms"
}

# podman_run_task NAME LABEL... -- CMD...: as docker_run_task, with podman.
# Prints the container's full id. Returns non-zero, with podman's words, if
# the container does not start.
podman_run_task() {
    local name=$1 out
    shift
    ct_run_args "$@" || return 2
    ct_say "podman run $name: ${ct_cmd[*]}"
    out=$(pm run -d --network none --name "$name" "${ct_opts[@]}" "$CT_IMAGE" "${ct_cmd[@]}" 2>&1) ||
        { ct_fail "podman run: $out"; return 1; }
    echo "${out##*$'\n'}"
}

# podman_down DIR: removes the containers, stops the service (SIGTERM, SIGKILL
# after 15 s), kills conmon and whatever else names DIR, unmounts everything
# under DIR and removes DIR. Idempotent; safe in an EXIT trap. Returns 0.
podman_down() {
    local dir pid
    dir=$(ct_abs "$1")
    [ -n "$1" ] && [ "$dir" != / ] && [ -d "$dir" ] || return 0
    if [ -f "$dir/containers.conf" ] && command -v podman >/dev/null; then
        ct_say "removing podman containers"
        CT_PODMAN_DIR=$dir pm rm -af -t 0 >/dev/null 2>&1
    fi
    pid=$(cat "$dir/podman.pid" 2>/dev/null)
    if ct_alive "$pid"; then
        ct_say "stopping podman service (pid $pid)"
        ct_stop "$pid" 15
    fi
    ct_kill_leftovers "$dir"
    ct_remove_dir "$dir"
    [ "$CT_PODMAN_DIR" = "$dir" ] && CT_PODMAN_DIR=""
    return 0
}

# engine_up_or_skip ENGINE DIR: for a test script (after testlib.sh), ENGINE
# docker or podman: has ENGINE's daemon under DIR stopped when the script
# ends (docker_down, podman_down), starts it (docker_up, podman_up) and sets
# DOCKER or PODMAN to its API address. Where it cannot run, skips "real
# ENGINE" with the reason and ends the script.
engine_up_or_skip() {
    local engine=$1 dir=$2
    at_exit "${engine}_down '$dir'"
    if ! "${engine}_up" "$dir"; then
        skip "real $engine" "$CT_WHY"
        finish
    fi
    printf -v "${engine^^}" 'unix://%s/%s.sock' "$dir" "$engine"
}
