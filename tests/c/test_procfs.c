/* cgroup_container_id on every cgroup form of SPEC 2.2 and 11 "containers",
 * and procfs_read_cgroup on a fixture proc tree. */
#include "check.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

static char id[CONTAINER_ID_LEN + 1];

/* The runtime found in a C string, "" for a host process; id holds the id. */
static const char *runtime_of(const char *cgroup)
{
    memset(id, 'Z', sizeof id);
    const char *runtime = cgroup_container_id(cgroup, strlen(cgroup), id);
    return runtime ? runtime : "";
}

/* Checks one cgroup file's text: its runtime and id, or a host process. */
static void check_cgroup(const char *cgroup, const char *want_runtime, const char *want_id,
                         int line)
{
    check_str_equal(runtime_of(cgroup), want_runtime, __FILE__, line, cgroup);
    check_str_equal(id, want_id, __FILE__, line, "container id");
}

#define CONTAINER(cgroup, runtime, id) check_cgroup((cgroup), (runtime), (id), __LINE__)
#define HOST(cgroup)                   check_cgroup((cgroup), "", "", __LINE__)

static void test_container_forms(void)
{
    CONTAINER("12:memory:/docker/" ID_B "\n", "docker", ID_B);
    CONTAINER("0::/system.slice/docker-" ID_A ".scope\n", "docker", ID_A);
    CONTAINER("0::/nomad.slice/docker-" ID_A ".scope\n", "docker", ID_A);
    CONTAINER("0::/system.slice/containerd-" ID_A ".scope", "containerd", ID_A);
    CONTAINER("0::/machine.slice/libpod-" ID_D ".scope/container\n", "libpod", ID_D);
    CONTAINER("0::/nomad.slice/libpod-" ID_D ".scope/container\n", "libpod", ID_D);
    CONTAINER("11:pids:/libpod_parent/libpod-" ID_D "\n", "libpod", ID_D);
    CONTAINER("0::/nomad.slice/" ID_A ".scope\n", "nomad", ID_A);
    CONTAINER("0::/kubepods/containerd/docker-" ID_A "\n", "docker", ID_A);
    CONTAINER("0::/system.slice/docker-" ID_A ".scope", "docker", ID_A); /* no newline */
}

static void test_host_forms(void)
{
    HOST("0::/system.slice/libpod-conmon-" ID_D ".scope\n");
    HOST("12:memory:/process_api/" ID_A "\n");
    HOST("0::/user.slice/user-0.slice/session-1.scope\n");
    HOST("0::/\n");
    HOST("");
    HOST("\n\n\n");
    /* 63 and 65 hex digits: not an id */
    HOST("0::/system.slice/docker-"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         ".scope\n");
    HOST("0::/system.slice/docker-" ID_A "a.scope\n");
    HOST("0::/system.slice/docker-a" ID_A ".scope\n");
    HOST("0::/system.slice/docker-" ID_A "B.scope\n"); /* 65 hex, one upper-case */
    HOST("0::/system.slice/docker-"
         "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.scope\n");
    HOST("0::/system.slice/docker-"
         "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.scope\n");
    HOST("0::/system.slice/docker.service\n");        /* runtime named, no id */
    HOST("0::/system.slice/podman-" ID_A ".scope\n"); /* id, no known runtime */
}

static void test_first_line_wins(void)
{
    CONTAINER("12:memory:/process_api/" ID_B "\n"
              "11:pids:/libpod_parent/libpod-conmon-" ID_A "\n"
              "10:cpu:/user.slice\n"
              "9:blkio:/docker/" ID_D "\n"
              "8:devices:/libpod_parent/libpod-" ID_A "\n",
              "docker", ID_D);
    /* a longer run early in a line does not hide the id later in it */
    CONTAINER("0::/docker/" ID_A "ff/docker-" ID_B ".scope\n", "docker", ID_B);
    /* the runtime's name may come after the id */
    CONTAINER("0::/" ID_A "/nomad\n", "nomad", ID_A);

    static const char with_nul[] = "0::/x\0y\n1:cpu:/docker/" ID_A "\n";
    memset(id, 'Z', sizeof id);
    const char *runtime = cgroup_container_id(with_nul, sizeof with_nul - 1, id);
    CHECK_STR(runtime, "docker");
    CHECK_STR(id, ID_A);

    CHECK(cgroup_container_id(NULL, 0, id) == NULL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL))
        return;
    fputs(text, f);
    fclose(f);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static void test_read_cgroup(void)
{
    char root[] = "/tmp/gpuledger-procfs-XXXXXX";
    char path[512], buf[4096];
    if (!CHECK(mkdtemp(root) != NULL))
        return;

    snprintf(path, sizeof path, "%s/4242", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/4242/cgroup", root);
    write_file(path, "0::/system.slice/docker-" ID_A ".scope\n");

    snprintf(path, sizeof path, "%s/6060", root); /* a directory where the file should be */
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/6060/cgroup", root);
    mkdir(path, 0755);

    snprintf(path, sizeof path, "%s/7070", root); /* a dangling symlink */
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/7070/cgroup", root);
    CHECK(symlink("/nonexistent/gpuledger/cgroup", path) == 0);

    snprintf(path, sizeof path, "%s/8080", root); /* an empty file */
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/8080/cgroup", root);
    write_file(path, "");

    long want_len = (long)strlen("0::/system.slice/docker-" ID_A ".scope\n");
    CHECK_INT(procfs_read_cgroup(root, 4242, buf, sizeof buf), want_len);
    CHECK_STR(buf, "0::/system.slice/docker-" ID_A ".scope\n");
    CHECK_STR(runtime_of(buf), "docker");

    /* cut at cap-1 bytes, NUL added */
    memset(buf, 'Z', sizeof buf);
    CHECK_INT(procfs_read_cgroup(root, 4242, buf, 8), 7);
    CHECK_STR(buf, "0::/sys");
    CHECK_INT(procfs_read_cgroup(root, 4242, buf, 1), 0);
    CHECK_STR(buf, "");
    CHECK_INT(procfs_read_cgroup(root, 4242, buf, 0), -1);

    CHECK_INT(procfs_read_cgroup(root, 8080, buf, sizeof buf), 0);
    CHECK_INT(procfs_read_cgroup(root, 5151, buf, sizeof buf), -1); /* missing */
    CHECK_INT(procfs_read_cgroup(root, 6060, buf, sizeof buf), -1); /* unreadable */
    CHECK_INT(procfs_read_cgroup(root, 7070, buf, sizeof buf), -1); /* dangling */
    CHECK_INT(procfs_read_cgroup(root, 0, buf, sizeof buf), -1);
    CHECK_INT(procfs_read_cgroup(root, -4242, buf, sizeof buf), -1);
    CHECK_INT(procfs_read_cgroup("/nonexistent/gpuledger", 4242, buf, sizeof buf), -1);

    /* the real /proc: our own process is readable */
    CHECK(procfs_read_cgroup("/proc", (long)getpid(), buf, sizeof buf) > 0);

    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    CHECK(access(root, F_OK) < 0 && errno == ENOENT);
}

/* procfs_read_cgroup opens, reads and closes: nothing stays open. */
static void test_no_descriptor_left(void)
{
    char buf[256];
    int before = dup(0);
    close(before);
    for (int i = 0; i < 100; i++)
        procfs_read_cgroup("/proc", (long)getpid(), buf, sizeof buf);
    int after = dup(0);
    close(after);
    CHECK_INT(after, before);
}

int main(void)
{
    test_container_forms();
    test_host_forms();
    test_first_line_wins();
    test_read_cgroup();
    test_no_descriptor_left();
    return check_finish();
}
