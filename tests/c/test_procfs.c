/* cgroup_container_id on every container cgroup form of docs/sources.md#proc;
 * cgroup_owner on every form of a Nomad task, systemd service and login
 * session, and on look-alikes a user can make in their own slice;
 * status_real_uid; the passwd lookup; and
 * procfs_read_file on a fixture proc tree and the real /proc. */
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

/* The cgroup parents a site configured, as --cgroup-parent gives them. */
static const char *const parents[] = {"/gpu.slice/jobs.slice", "/custom-docker", NULL};

/* The runtime found in a C string, "" for a host process; id holds the id. */
static const char *runtime_of(const char *cgroup)
{
    memset(id, 'Z', sizeof id);
    const char *runtime = cgroup_container_id(cgroup, strlen(cgroup), parents, id);
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
    CONTAINER("0::/custom-docker/" ID_A "\n", "docker", ID_A);           /* a configured parent */
}

/* Only root creates a cgroup under the system's own roots; a user names the
 * cgroups of their own slice and of their systemd manager as they like. */
static void test_untrusted_paths(void)
{
    HOST("0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" ID_A ".scope\n");
    HOST("0::/user.slice/user-1000.slice/user@1000.service/app.slice/libpod-" ID_D
         ".scope/container\n");
    HOST("1:name=systemd:/user.slice/user-1000.slice/user@1000.service/docker/" ID_A "\n");
    HOST("0::/user.slice/user-1000.slice/session-3.scope/system.slice/docker-" ID_A ".scope\n");
    HOST("0::/docker-" ID_A ".scope\n");               /* the root itself is not a slice */
    HOST("0::/dockerx/" ID_A "\n");                    /* a look-alike of /docker */
    HOST("0::/system.slicex/docker-" ID_A ".scope\n"); /* of /system.slice */
    HOST("0::/gpu.slice/docker-" ID_A ".scope\n");     /* above a configured parent */
    HOST("0::/" ID_A "/nomad\n");                      /* the id as a root */
    CHECK(cgroup_path_trusted("/system.slice", 13, NULL));
    CHECK(cgroup_path_trusted("/gpu.slice/jobs.slice/x", 23, parents));
    CHECK(!cgroup_path_trusted("/gpu.slice/jobs.slice/x", 23, NULL));
    CHECK(!cgroup_path_trusted("/gpu.slice/jobs.slicex", 22, parents));
    CHECK(!cgroup_path_trusted("/user.slice", 11, parents));
    CHECK(!cgroup_path_trusted("/", 1, parents));
    CHECK(!cgroup_path_trusted("", 0, parents));
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
    CONTAINER("0::/system.slice/" ID_A "/nomad\n", "nomad", ID_A);
    /* an untrusted line before a trusted one does not hide it */
    CONTAINER("1:name=systemd:/user.slice/user-1000.slice/user@1000.service/docker-" ID_B ".scope\n"
              "0::/system.slice/docker-" ID_A ".scope\n",
              "docker", ID_A);

    static const char with_nul[] = "0::/x\0y\n1:cpu:/docker/" ID_A "\n";
    memset(id, 'Z', sizeof id);
    const char *runtime = cgroup_container_id(with_nul, sizeof with_nul - 1, parents, id);
    CHECK_STR(runtime, "docker");
    CHECK_STR(id, ID_A);

    CHECK(cgroup_container_id(NULL, 0, parents, id) == NULL);
}

#define ALLOC "2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33"

/* Checks who cgroup_owner says owns a process: its kind and the owner's
 * name (container id, "alloc task", unit, or session uid as text). */
static void check_owner(const char *cgroup, enum cgroup_owner_kind want_kind, const char *want_name,
                        int line)
{
    struct cgroup_owner owner;
    memset(&owner, 'Z', sizeof owner);
    cgroup_owner(cgroup, strlen(cgroup), parents, &owner);
    char name[CONTAINER_ID_LEN + CGROUP_NAME_CAP + 8] = "";
    switch (owner.kind) {
    case OWNER_CONTAINER:
        snprintf(name, sizeof name, "%s", owner.container_id);
        break;
    case OWNER_NOMAD_TASK:
        snprintf(name, sizeof name, "%s %s", owner.alloc_id, owner.task);
        break;
    case OWNER_SERVICE:
        snprintf(name, sizeof name, "%s", owner.unit);
        break;
    case OWNER_SESSION:
        snprintf(name, sizeof name, "%ld", owner.session_uid);
        break;
    case OWNER_PROCESS:
        break;
    }
    check_long_equal(owner.kind, want_kind, __FILE__, line, cgroup);
    check_str_equal(name, want_name, __FILE__, line, cgroup);
    if (owner.kind != OWNER_SESSION)
        check_long_equal(owner.session_uid, -1, __FILE__, line, "session_uid");
}

#define OWNER(cgroup, kind, name) check_owner((cgroup), (kind), (name), __LINE__)

/* Checks the container cgroup cgroup_owner gives a process. */
static void check_container_cgroup(const char *cgroup, const char *want, int line)
{
    struct cgroup_owner owner;
    memset(&owner, 'Z', sizeof owner);
    cgroup_owner(cgroup, strlen(cgroup), parents, &owner);
    check_str_equal(owner.container_cgroup, want, __FILE__, line, cgroup);
}

#define CONTAINER_CGROUP(cgroup, want) check_container_cgroup((cgroup), (want), __LINE__)

/* The cgroup a container claim is checked by: the line up to the component
 * naming the container, below it the same; a look-alike in a service's own
 * subtree differs from the engine's; none for a host process. */
static void test_container_cgroup(void)
{
    CONTAINER_CGROUP("0::/system.slice/docker-" ID_A ".scope\n",
                     "0::/system.slice/docker-" ID_A ".scope");
    CONTAINER_CGROUP("0::/machine.slice/libpod-" ID_D ".scope/container\n",
                     "0::/machine.slice/libpod-" ID_D ".scope");
    CONTAINER_CGROUP("0::/system.slice/docker-" ID_A ".scope/init.scope (deleted)\n",
                     "0::/system.slice/docker-" ID_A ".scope");
    CONTAINER_CGROUP("12:memory:/docker/" ID_B "\n", "12:memory:/docker/" ID_B);
    CONTAINER_CGROUP("0::/system.slice/ci.service/docker-" ID_A ".scope\n",
                     "0::/system.slice/ci.service/docker-" ID_A ".scope");
    CONTAINER_CGROUP("0::/system.slice/cron.service\n", "");
}

static void test_nomad_task_forms(void)
{
    /* cgroup v2: Nomad 1.3-1.6, then 1.7+ share and reserve partitions */
    OWNER("0::/nomad.slice/" ALLOC ".worker.scope\n", OWNER_NOMAD_TASK, ALLOC " worker");
    OWNER("0::/nomad.slice/share.slice/" ALLOC ".worker.scope\n", OWNER_NOMAD_TASK,
          ALLOC " worker");
    OWNER("0::/nomad.slice/reserve.slice/" ALLOC ".worker.scope\n", OWNER_NOMAD_TASK,
          ALLOC " worker");
    /* a custom cgroup_parent (Nomad 1.3-1.6), task names with dots, a zombie */
    OWNER("0::/gpu.slice/jobs.slice/" ALLOC ".train.step-2.scope\n", OWNER_NOMAD_TASK,
          ALLOC " train.step-2");
    OWNER("0::/nomad.slice/share.slice/" ALLOC ".worker.scope (deleted)\n", OWNER_NOMAD_TASK,
          ALLOC " worker");
    /* a hybrid host: the v2 line's task is found whatever comes before it */
    OWNER("9:name=systemd:/\n4:memory:/process_api/25b99a252cbf28031a2eb54dd747eba5\n"
          "0::/nomad.slice/share.slice/" ALLOC ".worker.scope\n",
          OWNER_NOMAD_TASK, ALLOC " worker");

    /* cgroup v1, Nomad 1.7+: exec and java; the shared cpuset names no task */
    OWNER("11:memory:/nomad/" ALLOC ".worker\n"
          "9:freezer:/nomad/" ALLOC ".worker\n"
          "4:cpu,cpuacct:/nomad/" ALLOC ".worker\n"
          "6:cpuset:/nomad/share\n",
          OWNER_NOMAD_TASK, ALLOC " worker");
    OWNER("6:cpuset:/nomad/share\n11:memory:/nomad/" ALLOC ".worker\n", OWNER_NOMAD_TASK,
          ALLOC " worker");
    OWNER("6:cpuset:/nomad/reserve/" ALLOC ".worker\n", OWNER_NOMAD_TASK, ALLOC " worker");
    /* raw_exec on v1: other hierarchies keep the agent's service */
    OWNER("12:pids:/system.slice/nomad.service\n"
          "9:freezer:/nomad/" ALLOC ".render\n"
          "1:name=systemd:/system.slice/nomad.service\n"
          "0::/system.slice/nomad.service\n",
          OWNER_NOMAD_TASK, ALLOC " render");
    /* Nomad 1.3-1.6 on v1: a reserved cpuset names alloc and task (with a
     * dash); otherwise a random UUID names neither */
    OWNER("9:freezer:/nomad/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"
          "6:cpuset:/nomad/reserved/" ALLOC "-worker\n",
          OWNER_NOMAD_TASK, ALLOC " worker");
    OWNER("9:freezer:/nomad/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n6:cpuset:/nomad/shared\n",
          OWNER_NOMAD_TASK, " ");

    /* a container under nomad.slice stays a container */
    OWNER("0::/nomad.slice/docker-" ID_A ".scope\n", OWNER_CONTAINER, ID_A);
    OWNER("0::/nomad.slice/" ID_A ".scope\n", OWNER_CONTAINER, ID_A);

    /* look-alikes that are not Nomad tasks */
    OWNER("0::/nomad.slice/" ALLOC ".scope\n", OWNER_PROCESS, "");        /* no task */
    OWNER("0::/nomad.slice/" ALLOC ".worker\n", OWNER_PROCESS, "");       /* v2 without .scope */
    OWNER("0::/nomad.slice/" ALLOC "-worker.scope\n", OWNER_PROCESS, ""); /* dash */
    OWNER("0::/nomad.slice/2B7F3C8E-5D21-4A0E-9C4B-0E6F9A1D7C33.worker.scope\n", OWNER_PROCESS, "");
    OWNER("0::/nomad.slice/2b7f3c8e5d214a0e9c4b0e6f9a1d7c33.worker.scope\n", OWNER_PROCESS, "");
    OWNER("11:memory:/other/" ALLOC ".worker\n", OWNER_PROCESS, ""); /* v1 outside /nomad */
    OWNER("6:cpuset:/nomad/share\n", OWNER_PROCESS, "");
    OWNER("9:freezer:/nomad/" ALLOC "/x\n", OWNER_PROCESS, "");
    /* a task scope anywhere but right under Nomad's slices or a configured parent */
    OWNER("0::/system.slice/" ALLOC ".worker.scope\n", OWNER_PROCESS, "");
    OWNER("0::/nomad.slice/share.slice/x/" ALLOC ".worker.scope\n", OWNER_PROCESS, "");
    OWNER("0::/gpu.slice/" ALLOC ".worker.scope\n", OWNER_PROCESS, "");
    OWNER("0::/" ALLOC ".worker.scope\n", OWNER_PROCESS, "");
    OWNER("0::/system.slice/tenant.service/" ALLOC ".worker.scope\n", OWNER_SERVICE,
          "tenant.service");

    /* a user's own scopes named like a Nomad task or a Nomad container are
     * that user's session */
    OWNER("0::/user.slice/user-1000.slice/user@1000.service/app.slice/" ALLOC ".worker.scope\n",
          OWNER_SESSION, "1000");
    OWNER("0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" ID_A ".scope\n",
          OWNER_SESSION, "1000");
    OWNER("0::/user.slice/user-1000.slice/user@1000.service/nomad.slice/share.slice/" ALLOC
          ".worker.scope\n",
          OWNER_SESSION, "1000");
    OWNER("9:freezer:/user.slice/user-1000.slice/nomad/" ALLOC ".worker\n"
          "0::/user.slice/user-1000.slice/session-3.scope\n",
          OWNER_SESSION, "1000");
}

static void test_host_owner_forms(void)
{
    OWNER("0::/system.slice/ollama.service\n", OWNER_SERVICE, "ollama.service");
    OWNER("0::/system.slice/ollama.service/runner\n", OWNER_SERVICE, "ollama.service");
    OWNER("0::/system.slice/system-getty.slice/getty@tty1.service\n", OWNER_SERVICE,
          "getty@tty1.service");
    OWNER("1:name=systemd:/system.slice/ollama.service\n0::/\n", OWNER_SERVICE, "ollama.service");
    OWNER("0::/system.slice/ollama.service (deleted)\n", OWNER_SERVICE, "ollama.service");
    OWNER("0::/system.slice/run-r3b1c.scope\n", OWNER_PROCESS, "");
    OWNER("0::/system.slice/.service\n", OWNER_SERVICE, ".service");

    OWNER("0::/user.slice/user-1000.slice/session-3.scope\n", OWNER_SESSION, "1000");
    OWNER("0::/user.slice/user-0.slice/session-1.scope\n", OWNER_SESSION, "0");
    OWNER("0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n",
          OWNER_SESSION, "1000");
    OWNER("0::/user.slice/user-1000.slice\n", OWNER_SESSION, "1000");
    OWNER("0::/user.slice/user-abc.slice/session-3.scope\n", OWNER_PROCESS, "");
    OWNER("0::/user.slice/user-1000.slicex/session-3.scope\n", OWNER_PROCESS, "");
    OWNER("0::/user.slice/user- 1000.slice/session-3.scope\n", OWNER_PROCESS, "");
    OWNER("0::/user.slice/user-99999999999999999999.slice/session-3.scope\n", OWNER_PROCESS, "");

    OWNER("0::/\n", OWNER_PROCESS, "");
    OWNER("0::/init.scope\n", OWNER_PROCESS, "");
    OWNER("12:memory:/process_api/" ID_A "\n", OWNER_PROCESS, "");
    OWNER("", OWNER_PROCESS, "");
    OWNER("garbage without colons\n", OWNER_PROCESS, "");

    /* a unit name longer than its field is not taken, never cut */
    char long_unit[CGROUP_NAME_CAP + 64] = "0::/system.slice/";
    memset(long_unit + strlen(long_unit), 'u', CGROUP_NAME_CAP);
    strcat(long_unit, ".service\n");
    OWNER(long_unit, OWNER_PROCESS, "");

    struct cgroup_owner owner;
    cgroup_owner(NULL, 0, parents, &owner);
    CHECK_INT(owner.kind, OWNER_PROCESS);
}

static void test_status_uid(void)
{
    static const char status[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
                                 "Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
    CHECK_INT(status_real_uid(status, strlen(status)), 1000);
    CHECK_INT(status_real_uid("Uid:\t0\t0\t0\t0\n", 14), 0);
    CHECK_INT(status_real_uid("Uid:\t4294967294\t0\t0\t0", 22), 4294967294L);
    CHECK_INT(status_real_uid("Name:\tx\nGid:\t5\n", 15), -1);
    CHECK_INT(status_real_uid("XUid:\t5\n", 8), -1);
    CHECK_INT(status_real_uid("Uid:\t\n", 6), -1);
    CHECK_INT(status_real_uid("Uid:\t99999999999999999999\n", 26), -1);
    CHECK_INT(status_real_uid("", 0), -1);
    /* the length bounds the search */
    CHECK_INT(status_real_uid("Name:\tx\nUid:\t5\n", 8), -1);

    char buf[4096];
    long len = procfs_read_file("/proc", (long)getpid(), "status", buf, sizeof buf);
    CHECK(len > 0);
    CHECK_INT(status_real_uid(buf, (size_t)len), (long)getuid());
}

static void check_passwd_path(const char *proc_root, const char *want, int line)
{
    char path[64];
    check_long_equal(passwd_path_beside(proc_root, path, sizeof path), 0, __FILE__, line,
                     proc_root);
    check_str_equal(path, want, __FILE__, line, proc_root);
}

static void test_passwd(void)
{
    check_passwd_path("/proc", "/etc/passwd", __LINE__);
    check_passwd_path("/proc/", "/etc/passwd", __LINE__);
    check_passwd_path("testdata/proc", "testdata/etc/passwd", __LINE__);
    check_passwd_path("/srv/fixture//proc//", "/srv/fixture//etc/passwd", __LINE__);
    check_passwd_path("proc", "etc/passwd", __LINE__);
    char small[8];
    CHECK_INT(passwd_path_beside("/a/very/long/proc", small, sizeof small), -1);

    char dir[] = "/tmp/gpuledger-passwd-XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL))
        return;
    char path[512], name[USER_NAME_CAP];
    snprintf(path, sizeof path, "%s/passwd", dir);
    char long_line[USER_NAME_CAP + 32];
    memset(long_line, 'n', USER_NAME_CAP);
    snprintf(long_line + USER_NAME_CAP, sizeof long_line - USER_NAME_CAP, ":x:4242:0::/:/bin/sh\n");
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL))
        return;
    fputs("root:x:0:0:root:/root:/bin/bash\n"
          "# a comment\n"
          "broken line without fields\n"
          "nouid:x::1::/:/bin/sh\n"
          "signed:x:-5:1::/:/bin/sh\n"
          "prefix:x:10000:1::/:/bin/sh\n"
          "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n"
          "alice2:x:1000:1000::/home/alice2:/bin/bash\n",
          f);
    fputs(long_line, f);
    fputs("bob:*:1001:1001::/home/bob:/usr/sbin/nologin", f); /* no final newline */
    fclose(f);

    CHECK_INT(passwd_user_name(path, 0, name), 1);
    CHECK_STR(name, "root");
    CHECK_INT(passwd_user_name(path, 1000, name), 1); /* the first wins */
    CHECK_STR(name, "alice");
    CHECK_INT(passwd_user_name(path, 1001, name), 1);
    CHECK_STR(name, "bob");
    CHECK_INT(passwd_user_name(path, 10, name), 0); /* 10000 is not 10 */
    CHECK_STR(name, "");
    CHECK_INT(passwd_user_name(path, 4242, name), 0); /* a name too long is not cut */
    CHECK_INT(passwd_user_name(path, 5, name), 0);
    CHECK_INT(passwd_user_name("/nonexistent/gpuledger/passwd", 0, name), 0);
    CHECK_STR(name, "");
    remove(path);
    rmdir(dir);
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
    CHECK_INT(procfs_read_file(root, 4242, "cgroup", buf, sizeof buf), want_len);
    CHECK_STR(buf, "0::/system.slice/docker-" ID_A ".scope\n");
    CHECK_STR(runtime_of(buf), "docker");

    /* cut at cap-1 bytes, NUL added */
    memset(buf, 'Z', sizeof buf);
    CHECK_INT(procfs_read_file(root, 4242, "cgroup", buf, 8), 7);
    CHECK_STR(buf, "0::/sys");
    CHECK_INT(procfs_read_file(root, 4242, "cgroup", buf, 1), 0);
    CHECK_STR(buf, "");
    CHECK_INT(procfs_read_file(root, 4242, "cgroup", buf, 0), -1);

    CHECK_INT(procfs_read_file(root, 8080, "cgroup", buf, sizeof buf), 0);
    CHECK_INT(procfs_read_file(root, 5151, "cgroup", buf, sizeof buf), -1); /* missing */
    CHECK_INT(procfs_read_file(root, 6060, "cgroup", buf, sizeof buf), -1); /* unreadable */
    CHECK_INT(procfs_read_file(root, 7070, "cgroup", buf, sizeof buf), -1); /* dangling */
    CHECK_INT(procfs_read_file(root, 0, "cgroup", buf, sizeof buf), -1);
    CHECK_INT(procfs_read_file(root, -4242, "cgroup", buf, sizeof buf), -1);
    CHECK_INT(procfs_read_file("/nonexistent/gpuledger", 4242, "cgroup", buf, sizeof buf), -1);

    /* the real /proc: our own process is readable */
    CHECK(procfs_read_file("/proc", (long)getpid(), "cgroup", buf, sizeof buf) > 0);

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
        procfs_read_file("/proc", (long)getpid(), "cgroup", buf, sizeof buf);
    int after = dup(0);
    close(after);
    CHECK_INT(after, before);
}

int main(void)
{
    test_container_forms();
    test_untrusted_paths();
    test_host_forms();
    test_first_line_wins();
    test_nomad_task_forms();
    test_container_cgroup();
    test_host_owner_forms();
    test_status_uid();
    test_passwd();
    test_read_cgroup();
    test_no_descriptor_left();
    return check_finish();
}
