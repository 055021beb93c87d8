/* /proc/<pid>/cgroup → who a process belongs to (docs/sources.md#proc): the container it runs in,
 * the Nomad task, systemd service or login session; its uid from
 * /proc/<pid>/status and the uid's name from the passwd file. */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* True for 0-9 and a-f, the digits of a container id. */
static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* True for a hexadecimal digit of either case. */
static int is_hex(char c)
{
    return is_lower_hex(c) || (c >= 'A' && c <= 'F');
}

/* True when word occurs in the len bytes of line. */
static int line_contains(const char *line, size_t len, const char *word)
{
    return memmem(line, len, word, strlen(word)) != NULL;
}

/* Yields the lines of a text, one a call: the line at *cursor (before end),
 * with its length, newline not counted, in *line_len; *cursor moves past
 * the newline. Returns NULL once the text is used up (a last line without a
 * newline is still a line; "" holds none). */
static const char *next_line(const char **cursor, const char *end, size_t *line_len)
{
    const char *line = *cursor;
    if (line >= end)
        return NULL;
    const char *newline = memchr(line, '\n', (size_t)(end - line));
    *line_len = (size_t)((newline ? newline : end) - line);
    *cursor = newline ? newline + 1 : end;
    return line;
}

/* The first container id in a line: a run of hex digits, bounded by non-hex
 * characters, exactly CONTAINER_ID_LEN long and all lowercase. A longer run
 * (some other hash) or one with upper-case digits is not an id. Returns NULL
 * when the line has none. */
static const char *find_container_id(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (!is_hex(line[i])) {
            i++;
            continue;
        }
        size_t run_start = i;
        int all_lower = 1;
        while (i < len && is_hex(line[i])) {
            all_lower &= is_lower_hex(line[i]);
            i++;
        }
        if (i - run_start == CONTAINER_ID_LEN && all_lower)
            return line + run_start;
    }
    return NULL;
}

/* The runtime a cgroup line names, most specific first, or NULL. */
static const char *line_runtime(const char *line, size_t len)
{
    static const char *const runtimes[] = {"libpod", "docker", "containerd", "nomad"};
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (line_contains(line, len, runtimes[i]))
            return runtimes[i];
    return NULL;
}

/* One line of a cgroup file: `<id>:<controllers>:<path>`. */
struct cgroup_line {
    int is_v2; /* the unified hierarchy's line, `0::<path>` */
    const char *path;
    size_t path_len; /* without a " (deleted)" suffix */
};

/* True when the len bytes at s start with prefix. */
static int has_prefix(const char *s, size_t len, const char *prefix)
{
    size_t prefix_len = strlen(prefix);
    return len >= prefix_len && memcmp(s, prefix, prefix_len) == 0;
}

/* True when the len bytes at s end with suffix. */
static int has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t suffix_len = strlen(suffix);
    return len >= suffix_len && memcmp(s + len - suffix_len, suffix, suffix_len) == 0;
}

/* Splits a line into its parts; returns 0 when it is not of that form. */
static int split_cgroup_line(const char *line, size_t len, struct cgroup_line *out)
{
    const char *first = memchr(line, ':', len);
    if (!first)
        return 0;
    const char *second = memchr(first + 1, ':', (size_t)(line + len - first - 1));
    if (!second)
        return 0;
    out->is_v2 = first + 1 == second;
    out->path = second + 1;
    out->path_len = (size_t)(line + len - out->path);
    if (has_suffix(out->path, out->path_len, " (deleted)"))
        out->path_len -= strlen(" (deleted)");
    return 1;
}

/* The roots of the system's own cgroups: only root creates a cgroup there
 * (systemd's system and machine slices, Nomad's, Docker's and Podman's
 * cgroupfs parents, the kubelet's). */
static const char *const CGROUP_SYSTEM_ROOTS[] = {
    "/system.slice", "/machine.slice", "/nomad.slice",    "/nomad",
    "/docker",       "/libpod_parent", "/kubepods.slice", "/kubepods",
};

/* Whether path is root or lies below it (root has no trailing slash). */
static int path_under(const char *path, size_t len, const char *root)
{
    size_t root_len = strlen(root);
    return root_len > 0 && has_prefix(path, len, root) &&
           (len == root_len || path[root_len] == '/');
}

/* As procfs.h says. */
int cgroup_path_trusted(const char *path, size_t len, cgroup_parents parents)
{
    for (size_t i = 0; i < sizeof CGROUP_SYSTEM_ROOTS / sizeof CGROUP_SYSTEM_ROOTS[0]; i++)
        if (path_under(path, len, CGROUP_SYSTEM_ROOTS[i]))
            return 1;
    for (size_t i = 0; parents && parents[i]; i++)
        if (path_under(path, len, parents[i]))
            return 1;
    return 0;
}

/* cgroup_container_id that also writes the container's cgroup (struct
 * cgroup_owner's container_cgroup) into cgroup_out, "" when NULL is
 * returned. */
static const char *find_container(const char *text, size_t len, cgroup_parents parents,
                                  char id_out[CONTAINER_ID_LEN + 1],
                                  char cgroup_out[CGROUP_PATH_CAP])
{
    id_out[0] = cgroup_out[0] = '\0';
    if (!text)
        return NULL;
    const char *cursor = text, *line;
    size_t line_len;
    while ((line = next_line(&cursor, text + len, &line_len))) {
        struct cgroup_line parts;
        if (!split_cgroup_line(line, line_len, &parts) ||
            !cgroup_path_trusted(parts.path, parts.path_len, parents) ||
            line_contains(parts.path, parts.path_len, "libpod-conmon-"))
            continue;
        const char *id = find_container_id(parts.path, parts.path_len);
        const char *runtime = id ? line_runtime(parts.path, parts.path_len) : NULL;
        if (!runtime)
            continue;
        const char *path_end = parts.path + parts.path_len;
        const char *component_end = memchr(id, '/', (size_t)(path_end - id));
        size_t cgroup_len = (size_t)((component_end ? component_end : path_end) - line);
        if (cgroup_len >= CGROUP_PATH_CAP)
            continue;
        memcpy(id_out, id, CONTAINER_ID_LEN);
        id_out[CONTAINER_ID_LEN] = '\0';
        memcpy(cgroup_out, line, cgroup_len);
        cgroup_out[cgroup_len] = '\0';
        return runtime;
    }
    return NULL;
}

/* As procfs.h says; id_out is "" when NULL is returned. */
const char *cgroup_container_id(const char *text, size_t len, cgroup_parents parents,
                                char id_out[CONTAINER_ID_LEN + 1])
{
    char cgroup[CGROUP_PATH_CAP];
    return find_container(text, len, parents, id_out, cgroup);
}

/* Calls match on each line of a cgroup file until one returns 1; returns
 * whether one did. */
static int first_matching_line(const char *text, size_t len, cgroup_parents parents,
                               int (*match)(const struct cgroup_line *, cgroup_parents,
                                            struct cgroup_owner *),
                               struct cgroup_owner *out)
{
    const char *cursor = text, *line;
    size_t line_len;
    while ((line = next_line(&cursor, text + len, &line_len))) {
        struct cgroup_line parts;
        if (split_cgroup_line(line, line_len, &parts) && match(&parts, parents, out))
            return 1;
    }
    return 0;
}

/* Whether s starts with a lowercase UUID, 8-4-4-4-12 hex digits. */
static int starts_with_uuid(const char *s, size_t len)
{
    if (len < ALLOC_ID_LEN)
        return 0;
    for (size_t i = 0; i < ALLOC_ID_LEN; i++) {
        int dash_here = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash_here ? s[i] != '-' : !is_lower_hex(s[i]))
            return 0;
    }
    return 1;
}

/* The last component of a path, and the one before it ("" when none). */
static const char *last_component(const char *path, size_t len, size_t *component_len)
{
    const char *start = path + len;
    while (start > path && start[-1] != '/')
        start--;
    *component_len = (size_t)(path + len - start);
    return start;
}

/* Copies a name of len bytes into a field of cap bytes; 0 when it does not
 * fit, is empty or holds a NUL. */
static int copy_name(char *field, size_t cap, const char *name, size_t len)
{
    if (len == 0 || len >= cap || memchr(name, '\0', len))
        return 0;
    memcpy(field, name, len);
    field[len] = '\0';
    return 1;
}

/* Takes `<alloc><separator><task><suffix>` as a Nomad task. */
static int take_nomad_task(const char *name, size_t len, char separator, const char *suffix,
                           struct cgroup_owner *out)
{
    size_t suffix_len = strlen(suffix);
    if (len <= ALLOC_ID_LEN + 1 + suffix_len || !starts_with_uuid(name, len) ||
        name[ALLOC_ID_LEN] != separator || !has_suffix(name, len, suffix))
        return 0;
    const char *task = name + ALLOC_ID_LEN + 1;
    if (!copy_name(out->task, sizeof out->task, task, len - ALLOC_ID_LEN - 1 - suffix_len))
        return 0;
    memcpy(out->alloc_id, name, ALLOC_ID_LEN);
    out->alloc_id[ALLOC_ID_LEN] = '\0';
    out->kind = OWNER_NOMAD_TASK;
    return 1;
}

/* The cgroups Nomad puts a task's `<alloc>.<task>.scope` right under on
 * cgroup v2: its slice (1.3-1.6), its slice's partitions (1.7+). */
static const char *const NOMAD_V2_PARENTS[] = {
    "/nomad.slice",
    "/nomad.slice/share.slice",
    "/nomad.slice/reserve.slice",
};

/* Whether a v2 task scope's parent (len bytes, its trailing slash not
 * counted) is Nomad's own or one of parents. */
static int nomad_v2_parent(const char *parent, size_t len, cgroup_parents parents)
{
    for (size_t i = 0; i < sizeof NOMAD_V2_PARENTS / sizeof NOMAD_V2_PARENTS[0]; i++)
        if (len == strlen(NOMAD_V2_PARENTS[i]) && has_prefix(parent, len, NOMAD_V2_PARENTS[i]))
            return 1;
    for (size_t i = 0; parents && parents[i]; i++)
        if (len == strlen(parents[i]) && has_prefix(parent, len, parents[i]))
            return 1;
    return 0;
}

/* A Nomad task cgroup that names its allocation (cgroup_owner, form 2). */
static int match_nomad_task(const struct cgroup_line *line, cgroup_parents parents,
                            struct cgroup_owner *out)
{
    size_t name_len;
    const char *name = last_component(line->path, line->path_len, &name_len);
    size_t parent_len = (size_t)(name - line->path);
    if (line->is_v2)
        return parent_len > 0 && nomad_v2_parent(line->path, parent_len - 1, parents) &&
               take_nomad_task(name, name_len, '.', ".scope", out);
    if (!has_prefix(line->path, line->path_len, "/nomad/"))
        return 0;
    if (take_nomad_task(name, name_len, '.', "", out))
        return 1;
    return has_suffix(line->path, parent_len, "/reserved/") &&
           take_nomad_task(name, name_len, '-', "", out);
}

/* A Nomad 1.3-1.6 v1 task cgroup, `/nomad/<uuid>` (cgroup_owner, form 3). */
static int match_nomad_cgroup(const struct cgroup_line *line, cgroup_parents parents,
                              struct cgroup_owner *out)
{
    (void)parents; /* /nomad is the system's own */
    const size_t len = strlen("/nomad/") + ALLOC_ID_LEN;
    if (line->is_v2 || line->path_len != len || !has_prefix(line->path, len, "/nomad/") ||
        !starts_with_uuid(line->path + strlen("/nomad/"), ALLOC_ID_LEN))
        return 0;
    out->kind = OWNER_NOMAD_TASK;
    return 1;
}

/* The decimal uid that starts at s (before end), or -1 when s does not
 * start with a digit or the number is beyond any uid. *after is where the
 * digits end. */
static long parse_uid(const char *s, const char *end, const char **after)
{
    const char *digits = s;
    uint64_t uid = 0;
    int too_big = 0;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (!too_big)
            uid = uid * 10 + (uint64_t)(*s - '0');
        too_big |= uid > UINT32_MAX;
    }
    *after = s;
    return s == digits || too_big ? -1 : (long)uid;
}

/* A systemd service or a login session (cgroup_owner, form 4). */
static int match_systemd_unit(const struct cgroup_line *line, cgroup_parents parents,
                              struct cgroup_owner *out)
{
    (void)parents; /* /system.slice is the system's own; a session is its user's */
    const char *path = line->path, *end = line->path + line->path_len;
    if (has_prefix(path, line->path_len, "/system.slice/")) {
        for (const char *component = path + strlen("/system.slice/"); component < end;) {
            const char *slash = memchr(component, '/', (size_t)(end - component));
            size_t component_len = (size_t)((slash ? slash : end) - component);
            if (has_suffix(component, component_len, ".service")) {
                if (!copy_name(out->unit, sizeof out->unit, component, component_len))
                    return 0;
                out->kind = OWNER_SERVICE;
                return 1;
            }
            component = slash ? slash + 1 : end;
        }
        return 0;
    }
    if (!has_prefix(path, line->path_len, "/user.slice/user-"))
        return 0;
    const char *digits = path + strlen("/user.slice/user-");
    const char *after;
    long uid = parse_uid(digits, end, &after);
    if (uid < 0 || !has_prefix(after, (size_t)(end - after), ".slice"))
        return 0;
    after += strlen(".slice");
    if (after != end && *after != '/')
        return 0;
    out->session_uid = uid;
    out->kind = OWNER_SESSION;
    return 1;
}

/* As procfs.h says. */
void cgroup_owner(const char *text, size_t len, cgroup_parents parents, struct cgroup_owner *out)
{
    memset(out, 0, sizeof *out);
    out->kind = OWNER_PROCESS;
    out->session_uid = -1;
    if (!text)
        return;
    out->runtime = find_container(text, len, parents, out->container_id, out->container_cgroup);
    if (out->runtime) {
        out->kind = OWNER_CONTAINER;
        return;
    }
    if (first_matching_line(text, len, parents, match_nomad_task, out) ||
        first_matching_line(text, len, parents, match_nomad_cgroup, out))
        return;
    first_matching_line(text, len, parents, match_systemd_unit, out);
}

/* As procfs.h says: the first number after "Uid:" at the start of a line. */
long status_real_uid(const char *text, size_t len)
{
    const char *cursor = text, *line;
    size_t line_len;
    while ((line = next_line(&cursor, text + len, &line_len))) {
        if (!has_prefix(line, line_len, "Uid:"))
            continue;
        const char *digit = line + strlen("Uid:"), *line_end = line + line_len;
        while (digit < line_end && (*digit == ' ' || *digit == '\t'))
            digit++;
        return parse_uid(digit, line_end, &digit);
    }
    return -1;
}

/* As procfs.h says; a pid <= 0 or a cap of 0 gives -1, a NULL proc_root
 * means "/proc", and a longer file is cut at cap-1 bytes. */
long procfs_read_file(const char *proc_root, long pid, const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX];
    if (pid <= 0 || cap == 0)
        return -1;
    if (!proc_root)
        proc_root = "/proc";
    int path_len = snprintf(path, sizeof path, "%s/%ld/%s", proc_root, pid, name);
    if (path_len < 0 || (size_t)path_len >= sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len < cap - 1) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) { /* EISDIR, or ESRCH when the process went away */
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (long)len;
}

/* As procfs.h says; trailing slashes of proc_root do not count. */
int passwd_path_beside(const char *proc_root, char *out, size_t cap)
{
    size_t len = strlen(proc_root);
    while (len > 1 && proc_root[len - 1] == '/')
        len--;
    size_t name_len;
    const char *name = last_component(proc_root, len, &name_len);
    size_t parent_len = (size_t)(name - proc_root); /* with its slash, or 0 */
    int written = snprintf(out, cap, "%.*setc/passwd", (int)parent_len, proc_root);
    return written >= 0 && (size_t)written < cap ? 0 : -1;
}

/* As procfs.h says; a line that is too long for a name or malformed is
 * skipped. */
int passwd_user_name(const char *passwd_path, long uid, char name_out[USER_NAME_CAP])
{
    name_out[0] = '\0';
    FILE *passwd = fopen(passwd_path, "re");
    if (!passwd)
        return 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t line_len;
    int found = 0;
    while (!found && (line_len = getline(&line, &line_cap, passwd)) >= 0) {
        char *name_end = memchr(line, ':', (size_t)line_len);
        char *password_end =
            name_end ? memchr(name_end + 1, ':', (size_t)(line + line_len - name_end - 1)) : NULL;
        if (!password_end)
            continue;
        const char *uid_end;
        long line_uid = parse_uid(password_end + 1, line + line_len, &uid_end);
        if (line_uid >= 0 && line_uid == uid && *uid_end == ':')
            found = copy_name(name_out, USER_NAME_CAP, line, (size_t)(name_end - line));
    }
    free(line);
    fclose(passwd);
    return found;
}
