#ifndef GPULEDGER_PROCFS_H
#define GPULEDGER_PROCFS_H
#include <stddef.h>

#define CONTAINER_ID_LEN 64
#define ALLOC_ID_LEN     36  /* a Nomad allocation id: a UUID, 8-4-4-4-12 hex */
#define CGROUP_NAME_CAP  256 /* a task's or unit's name, NUL included */
#define USER_NAME_CAP    256
#define CGROUP_PATH_CAP  1024 /* a container's cgroup line, NUL included */

/* The cgroups besides the system's own (CGROUP_SYSTEM_ROOTS in procfs.c:
 * /system.slice, /machine.slice, /nomad.slice, /nomad, /docker,
 * /libpod_parent, /kubepods.slice, /kubepods) under which only Nomad or an
 * engine creates cgroups: a Nomad cgroup_parent or cgroup_v2_override, a
 * Docker cgroup-parent. Each is an absolute path without a trailing slash;
 * the list ends with NULL (NULL itself is an empty list). */
typedef const char *const *cgroup_parents;

/* Whether a cgroup path (len bytes) lies in a cgroup only root creates: one
 * of the system's own roots or a parent, or below it. A user's own slice
 * (/user.slice, their systemd manager's user@<uid>.service and anything it
 * delegates) and every other path is not: a user can name a cgroup there as
 * they like, so it proves nothing about a container or a Nomad task. */
int cgroup_path_trusted(const char *path, size_t len, cgroup_parents parents);

/* Finds the container of a process in the text of /proc/<pid>/cgroup
 * (docs/sources.md#proc): the
 * first line whose path is trusted (cgroup_path_trusted), does not contain
 * "libpod-conmon-", holds a run of exactly 64 lowercase hex digits and names
 * a runtime (docker, containerd, nomad or libpod) wins, unless its
 * container cgroup (struct cgroup_owner's container_cgroup) would not fit
 * in CGROUP_PATH_CAP. Writes the id and a
 * NUL into id_out and returns the runtime's name ("libpod", "docker",
 * "containerd" or "nomad", most specific first); returns NULL for a host
 * process. */
const char *cgroup_container_id(const char *text, size_t len, cgroup_parents parents,
                                char id_out[CONTAINER_ID_LEN + 1]);

/* Who a process belongs to, as its cgroup says. */
enum cgroup_owner_kind {
    OWNER_PROCESS,    /* nothing but the process itself: its name and uid */
    OWNER_CONTAINER,  /* runtime, container_id */
    OWNER_NOMAD_TASK, /* alloc_id ("" when the cgroup does not name it), task */
    OWNER_SERVICE,    /* unit, a systemd service of /system.slice */
    OWNER_SESSION,    /* session_uid, a user's login session of /user.slice */
};

struct cgroup_owner {
    enum cgroup_owner_kind kind;
    const char *runtime; /* static; NULL unless a container */
    char container_id[CONTAINER_ID_LEN + 1];
    /* the cgroup that names the container, as its line has it: the line's
     * `<id>:<controllers>:` and its path up to the end of the component
     * holding the id (`0::/system.slice/docker-<id>.scope`); "" unless a
     * container. The same text for two processes: the same container's
     * cgroup (or below it), as the engine made it. */
    char container_cgroup[CGROUP_PATH_CAP];
    char alloc_id[ALLOC_ID_LEN + 1];
    char task[CGROUP_NAME_CAP];
    char unit[CGROUP_NAME_CAP];
    long session_uid; /* -1 unless a session */
};

/* Reads who owns a process from the text of /proc/<pid>/cgroup, first form
 * that any line shows wins, in this order:
 *  1. a container (cgroup_container_id), with its container_cgroup;
 *  2. a Nomad task of the exec, raw_exec, java or exec2 drivers: on a cgroup
 *     v2 line (`0::`), a last component `<alloc>.<task>.scope` right under
 *     /nomad.slice, its share.slice or reserve.slice, or one of parents (a
 *     custom cgroup_parent of Nomad 1.3-1.6); on a v1 line under `/nomad/`,
 *     `<alloc>.<task>` (any depth, so `/nomad/reserve/…` too) or the
 *     `/nomad/reserved/<alloc>-<task>` cpuset of Nomad 1.3-1.6;
 *  3. a Nomad 1.3-1.6 v1 task cgroup `/nomad/<uuid>` that names no
 *     allocation: a Nomad task with alloc_id and task "";
 *  4. a systemd service: the first `<unit>.service` component below
 *     `/system.slice/`; or a login session below `/user.slice/user-<uid>.slice`;
 *  5. otherwise a bare process.
 * A container or Nomad task is taken only from a line whose path is trusted
 * (cgroup_path_trusted): under a user's own slice the process is that
 * user's session. A line's " (deleted)" suffix is ignored. A name that does
 * not fit its field is not taken. Never fails; out is fully written. */
void cgroup_owner(const char *text, size_t len, cgroup_parents parents, struct cgroup_owner *out);

/* The real uid in the text of /proc/<pid>/status (its "Uid:" line), or -1
 * when there is none. */
long status_real_uid(const char *text, size_t len);

/* Reads <proc_root>/<pid>/<name> (name is "cgroup" or "status") into buf
 * (at most cap-1 bytes, NUL added). Returns the length, or -1 when it is
 * missing or unreadable (a vanished or foreign process). */
long procfs_read_file(const char *proc_root, long pid, const char *name, char *buf, size_t cap);

/* The passwd file that goes with a proc root: the `etc/passwd` beside it
 * ("/proc" → "/etc/passwd", "testdata/proc" → "testdata/etc/passwd",
 * "proc" → "etc/passwd"). Returns 0, or -1 when it does not fit in cap. */
int passwd_path_beside(const char *proc_root, char *out, size_t cap);

/* Looks uid up in a passwd file (name:password:uid:…), read directly,
 * without NSS (the release binary is static). Writes the first matching
 * name into name_out and returns 1; returns 0 when the file has no such uid
 * or cannot be read (name_out is then ""). */
int passwd_user_name(const char *passwd_path, long uid, char name_out[USER_NAME_CAP]);

#endif
