# shellcheck shell=bash disable=SC2034 # CGROUP2, CG_PID and CG_WHY are the callers'
# Cgroups a whole-binary test makes itself in the machine's cgroup2 mount, to
# put a real process where a service, a user's own manager or an engine would
# (systemd-run needs systemd as pid 1, which these machines may lack). Source
# it after testlib.sh. A function that cannot do what it is asked on this
# machine returns 1 with the reason in CG_WHY, for the caller to skip (or
# fail) with; the cgroups it made are the caller's to remove.
#
#   cgroup2_find || { skip "..." "$CG_WHY"; finish; }
#   cgroup_make "$CGROUP2/system.slice/x.service" || { skip "..." "$CG_WHY"; finish; }
#   cgroup_start "$CGROUP2/system.slice/x.service" sleep 300 || { skip "..." "$CG_WHY"; finish; }
#   pid=$CG_PID

CGROUP2=""   # set by cgroup2_find: where the cgroup2 file system is mounted
CG_PID=""    # set by cgroup_start: the pid of the process it started
CG_WHY=""    # why the last thing could not be done

# cgroup2_find: sets CGROUP2 to the (first) mount point of the cgroup2 file
# system. Returns 1, saying so in CG_WHY, where none is mounted.
cgroup2_find() {
    CGROUP2=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -n 1)
    [ -n "$CGROUP2" ] && return 0
    CG_WHY="no cgroup2 file system is mounted here"
    return 1
}

# cgroup_make DIR...: makes each cgroup DIR, and the ones above it that are
# missing. Returns 1, with mkdir's words in CG_WHY, when one cannot be made.
cgroup_make() {
    local said
    said=$(mkdir -p "$@" 2>&1) && return 0
    CG_WHY="cannot make $*: $said"
    return 1
}

# cgroup_start CGROUP CMD...: starts CMD in the background (a child of the
# test's shell, for stop_pid) and moves it into the cgroup directory CGROUP
# (its cgroup.procs), leaving its pid in CG_PID. Returns 1, with the
# kernel's words in CG_WHY, when the move is refused; that process is then
# stopped and CG_PID is "". Call it directly, not in $(...): it sets CG_PID.
cgroup_start() {
    local cgroup=$1 said
    shift
    "$@" &
    CG_PID=$!
    said=$({ echo "$CG_PID" >"$cgroup/cgroup.procs"; } 2>&1) && return 0
    stop_pid "$CG_PID"
    CG_PID=""
    CG_WHY="cannot move a process into $cgroup: $said"
    return 1
}
