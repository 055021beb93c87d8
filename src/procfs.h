#ifndef GPULEDGER_PROCFS_H
#define GPULEDGER_PROCFS_H
#include <stddef.h>

#define CONTAINER_ID_LEN 64

/* Finds the container of a process in the text of /proc/<pid>/cgroup (SPEC
 * 2.2): the first line that does not contain "libpod-conmon-", holds a run of
 * exactly 64 lowercase hex digits and names a runtime (docker, containerd,
 * nomad or libpod) wins. Writes the id and a NUL into id_out and returns the
 * runtime's name ("libpod", "docker", "containerd" or "nomad", most specific
 * first); returns NULL for a host process. */
const char *cgroup_container_id(const char *text, size_t len, char id_out[CONTAINER_ID_LEN + 1]);

/* Reads <proc_root>/<pid>/cgroup into buf (at most cap-1 bytes, NUL added).
 * Returns the length, or -1 when it is missing or unreadable (a vanished or
 * foreign process: the caller treats it as a host process). */
long procfs_read_cgroup(const char *proc_root, long pid, char *buf, size_t cap);

#endif
