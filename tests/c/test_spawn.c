/* spawn_capture: capture, exit status, exec failures, timeouts that kill the
 * whole process group, the output cap, and no zombie or descriptor left;
 * spawn_capture_all: several at once under one deadline. */
#include "check.h"
#include "clock.h"
#include "process_checks.h"
#include "spawn_capture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static char errbuf[256];
static char tmpdir[] = "/tmp/gpuledger-spawn-XXXXXX";

static int run(char *const argv[], int timeout_ms, size_t max_bytes, struct spawn_result *result)
{
    errbuf[0] = '\0';
    return spawn_capture(argv, timeout_ms, 0, max_bytes, result, errbuf, sizeof errbuf);
}

static double seconds_now(void)
{
    return (double)monotonic_ns() / 1e9;
}

/* How many live (not zombie) processes are in process group pgid. */
static int live_members(long pgid)
{
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    int count = 0;
    if (!proc)
        return -1;
    while ((entry = readdir(proc))) {
        char path[300], stat_text[1024];
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(stat_text, 1, sizeof stat_text - 1, f);
        fclose(f);
        stat_text[n] = '\0';
        const char *after_name = strrchr(stat_text, ')'); /* "pid (comm) S ppid pgrp ..." */
        char state;
        long ppid, pgrp;
        if (after_name && sscanf(after_name + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 &&
            pgrp == pgid && state != 'Z' && state != 'X')
            count++;
    }
    closedir(proc);
    return count;
}

/* Waits up to two seconds for group pgid to have no live member (SIGKILL is
 * delivered at once, but the dying take a moment). */
static int group_gone(long pgid)
{
    for (int i = 0; i < 200; i++) {
        if (live_members(pgid) == 0)
            return 1;
        usleep(10000);
    }
    return 0;
}

static void test_capture(void)
{
    struct spawn_result r;
    CHECK_INT(run((char *[]){"/bin/echo", "hi", NULL}, 5000, MIB, &r), 0);
    CHECK_STR(r.out, "hi\n");
    CHECK_INT(r.out_len, 3);
    CHECK_STR(r.err, "");
    CHECK_INT(r.err_len, 0);
    CHECK_INT(r.exit_status, 0);
    CHECK_INT(r.term_signal, 0);
    spawn_result_free(&r);
    CHECK(r.out == NULL && r.err == NULL);

    CHECK_INT(run((char *[]){"echo", "found", "in", "PATH", NULL}, 5000, MIB, &r), 0);
    CHECK_STR(r.out, "found in PATH\n");
    spawn_result_free(&r);

    CHECK_INT(run((char *[]){"sh", "-c", "echo out; echo err >&2; echo more", NULL}, 5000, MIB, &r),
              0);
    CHECK_STR(r.out, "out\nmore\n");
    CHECK_STR(r.err, "err\n");
    spawn_result_free(&r);

    CHECK_INT(run((char *[]){"printf", "a\\000b", NULL}, 5000, MIB, &r), 0);
    CHECK(r.out_len == 3 && memcmp(r.out, "a\0b", 4) == 0);
    spawn_result_free(&r);

    CHECK_INT(run((char *[]){"readlink", "/proc/self/fd/0", NULL}, 5000, MIB, &r), 0);
    CHECK_STR(r.out, "/dev/null\n");
    spawn_result_free(&r);

    CHECK_INT(run((char *[]){"cat", NULL}, 5000, MIB, &r), 0); /* stdin is at EOF at once */
    CHECK_STR(r.out, "");
    spawn_result_free(&r);

    struct spawn_result zeroed = {0};
    spawn_result_free(&zeroed);
    CHECK(no_child_left());
}

/* The child sees PATH and LC_ALL=C, nothing of this process's environment. */
static void test_environment(void)
{
    struct spawn_result r;
    char want[4096];
    const char *path = getenv("PATH");
    setenv("NOMAD_TOKEN", "s3cret-token-value", 1);
    setenv("LANG", "de_DE.UTF-8", 1);
    snprintf(want, sizeof want, "PATH=%s\nLC_ALL=C\n", path ? path : "");
    CHECK_INT(run((char *[]){"env", NULL}, 5000, MIB, &r), 0);
    CHECK_STR(r.out, want);
    CHECK(strstr(r.out, "s3cret") == NULL);
    spawn_result_free(&r);

    unsetenv("PATH"); /* then a usual system PATH, still nothing else */
    CHECK_INT(run((char *[]){"/usr/bin/env", NULL}, 5000, MIB, &r), 0);
    CHECK_STR(r.out,
              "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nLC_ALL=C\n");
    spawn_result_free(&r);
    if (path)
        setenv("PATH", path, 1);
    unsetenv("NOMAD_TOKEN");
    unsetenv("LANG");
    CHECK(no_child_left());
}

static void test_exit_status(void)
{
    struct spawn_result r;
    CHECK_INT(run((char *[]){"sh", "-c", "echo partial; exit 3", NULL}, 5000, MIB, &r), 0);
    CHECK_INT(r.exit_status, 3);
    CHECK_INT(r.term_signal, 0);
    CHECK_STR(r.out, "partial\n");
    spawn_result_free(&r);

    CHECK_INT(run((char *[]){"sh", "-c", "kill -TERM $$", NULL}, 5000, MIB, &r), 0);
    CHECK_INT(r.exit_status, -1);
    CHECK_INT(r.term_signal, SIGTERM);
    spawn_result_free(&r);

    /* the child gets default dispositions and an empty mask, whatever ours are */
    struct sigaction ignore = {0}, saved_action;
    sigset_t term, saved_mask;
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGTERM, &ignore, &saved_action);
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &saved_mask);
    CHECK_INT(run((char *[]){"sh", "-c", "kill -TERM $$; exit 0", NULL}, 5000, MIB, &r), 0);
    CHECK_INT(r.term_signal, SIGTERM);
    spawn_result_free(&r);
    sigprocmask(SIG_SETMASK, &saved_mask, NULL);
    sigaction(SIGTERM, &saved_action, NULL);
    CHECK(no_child_left());
}

static void test_exec_failures(void)
{
    struct spawn_result r;
    char path[256];

    CHECK_INT(run((char *[]){"gpuledger-no-such-binary", NULL}, 5000, MIB, &r), -1);
    CHECK_STR(errbuf, "not found");
    CHECK(r.out == NULL && r.err == NULL);
    CHECK_INT(run((char *[]){"/nonexistent/nvidia-smi", NULL}, 5000, MIB, &r), -1);
    CHECK_STR(errbuf, "not found");

    snprintf(path, sizeof path, "%s/not-executable", tmpdir);
    FILE *f = fopen(path, "w");
    if (CHECK(f != NULL)) {
        fputs("#!/bin/sh\necho hi\n", f);
        fclose(f);
        chmod(path, 0644);
        CHECK_INT(run((char *[]){path, NULL}, 5000, MIB, &r), -1);
        CHECK_STR(errbuf, "permission denied");
    }

    snprintf(path, sizeof path, "%s/not-a-program", tmpdir);
    f = fopen(path, "w");
    if (CHECK(f != NULL)) {
        fputs("just text\n", f);
        fclose(f);
        chmod(path, 0755);
        CHECK_INT(run((char *[]){path, NULL}, 5000, MIB, &r), -1);
        CHECK_STR(errbuf, strerror(ENOEXEC));
    }

    CHECK_INT(run((char *[]){NULL}, 5000, MIB, &r), -1);
    CHECK_INT(run(NULL, 5000, MIB, &r), -1);
    CHECK(no_child_left());
}

static void test_timeouts(void)
{
    struct spawn_result r;
    char script[512], pidfile[300];

    double start = seconds_now();
    CHECK_INT(run((char *[]){"sleep", "30", NULL}, 300, MIB, &r), -1);
    CHECK_STR(errbuf, "timed out after 300ms");
    CHECK(seconds_now() - start < 2.0);
    CHECK(r.out == NULL && r.err == NULL);
    CHECK(no_child_left());

    /* the whole group goes: the shell, its background sleep and its foreground
     * one; the shell writes its pid and its process group (field 5 of stat) */
    snprintf(pidfile, sizeof pidfile, "%s/group.pid", tmpdir);
    snprintf(script, sizeof script,
             "echo $$ $(cut -d' ' -f5 /proc/$$/stat) > %s; sleep 30 & sleep 30", pidfile);
    start = seconds_now();
    CHECK_INT(run((char *[]){"sh", "-c", script, NULL}, 500, MIB, &r), -1);
    CHECK_STR(errbuf, "timed out after 500ms");
    CHECK(seconds_now() - start < 2.0);
    long shell_pid = 0, pgid = 0;
    FILE *f = fopen(pidfile, "r");
    if (CHECK(f != NULL)) {
        CHECK(fscanf(f, "%ld %ld", &shell_pid, &pgid) == 2);
        fclose(f);
    }
    CHECK_INT(pgid, shell_pid); /* the child leads a group of its own */
    CHECK(pgid != (long)getpgrp());
    if (pgid > 1 && pgid != (long)getpgrp())
        CHECK(group_gone(pgid));
    CHECK(no_child_left());

    /* a child that closes its output and stays */
    start = seconds_now();
    CHECK_INT(run((char *[]){"sh", "-c", "exec >&- 2>&-; sleep 30", NULL}, 300, MIB, &r), -1);
    CHECK_STR(errbuf, "timed out after 300ms");
    CHECK(seconds_now() - start < 2.0);
    CHECK(no_child_left());

    /* ... or closes it, and exits a little later: that is a normal end */
    CHECK_INT(run((char *[]){"sh", "-c", "echo bye; exec >&- 2>&-; sleep 0.2; exit 5", NULL}, 5000,
                  MIB, &r),
              0);
    CHECK_STR(r.out, "bye\n");
    CHECK_INT(r.exit_status, 5);
    spawn_result_free(&r);

    /* a leftover holding the pipe keeps the output open: that is a timeout too */
    CHECK_INT(run((char *[]){"sh", "-c", "sleep 30 & echo started", NULL}, 300, MIB, &r), -1);
    CHECK_STR(errbuf, "timed out after 300ms");

    CHECK_INT(run((char *[]){"sleep", "30", NULL}, 1000, MIB, &r), -1);
    CHECK_STR(errbuf, "timed out after 1s");
    CHECK_INT(run((char *[]){"sleep", "30", NULL}, 1250, MIB, &r), -1);
    CHECK_STR(errbuf, "timed out after 1.25s");
    CHECK(no_child_left());
}

/* One deadline shared by several children: together they take no longer
 * than it, the later ones get what is left, and once it has passed nothing
 * more is started. */
static void test_shared_deadline(void)
{
    struct spawn_result r;
    double start = seconds_now();
    long long deadline_ms = monotonic_ms() + 800;
    errbuf[0] = '\0';
    CHECK_INT(spawn_capture((char *[]){"echo", "quick", NULL}, 10000, deadline_ms, MIB, &r, errbuf,
                            sizeof errbuf),
              0);
    CHECK_STR(r.out, "quick\n");
    spawn_result_free(&r);
    CHECK_INT(spawn_capture((char *[]){"sleep", "30", NULL}, 10000, deadline_ms, MIB, &r, errbuf,
                            sizeof errbuf),
              -1);
    CHECK(strncmp(errbuf, "timed out after ", 16) == 0);
    CHECK(strstr(errbuf, "ms: its deadline passed") != NULL); /* under the 800 ms */
    CHECK_INT(spawn_capture((char *[]){"sleep", "30", NULL}, 10000, deadline_ms, MIB, &r, errbuf,
                            sizeof errbuf),
              -1);
    CHECK_STR(errbuf, "not started: its deadline had passed");
    CHECK(seconds_now() - start < 2.0); /* not 3 × 10 s */
    CHECK(no_child_left());

    /* a deadline without a timeout; a timeout shorter than the deadline */
    CHECK_INT(spawn_capture((char *[]){"sleep", "30", NULL}, 0, monotonic_ms() + 1000, MIB, &r,
                            errbuf, sizeof errbuf),
              -1);
    CHECK_STR(errbuf, "timed out after 1s: its deadline passed");
    CHECK_INT(spawn_capture((char *[]){"sleep", "30", NULL}, 300, monotonic_ms() + 5000, MIB, &r,
                            errbuf, sizeof errbuf),
              -1);
    CHECK_STR(errbuf, "timed out after 300ms");
    CHECK(no_child_left());
}

/* Several commands at once: each waits for the other to have started, so
 * they can only end if they run together; one deadline bounds them all; each
 * failure is its own. */
static void test_all_at_once(void)
{
    char wait_a[400], wait_b[400];
    snprintf(wait_a, sizeof wait_a, "touch %s/a; while [ ! -e %s/b ]; do sleep 0.01; done; echo a",
             tmpdir, tmpdir);
    snprintf(wait_b, sizeof wait_b,
             "touch %s/b; while [ ! -e %s/a ]; do sleep 0.01; done; echo b >&2; exit 3", tmpdir,
             tmpdir);
    int before = count_open_fds();
    struct spawn_job together[2] = {{.argv = (char *[]){"sh", "-c", wait_a, NULL}},
                                    {.argv = (char *[]){"sh", "-c", wait_b, NULL}}};
    spawn_capture_all(together, 2, 5000, 0, MIB);
    if (CHECK_INT(together[0].rc, 0)) {
        CHECK_STR(together[0].result.out, "a\n");
        CHECK_INT(together[0].result.exit_status, 0);
    }
    if (CHECK_INT(together[1].rc, 0)) {
        CHECK_STR(together[1].result.err, "b\n");
        CHECK_INT(together[1].result.exit_status, 3);
    }
    spawn_result_free(&together[0].result);
    spawn_result_free(&together[1].result);

    double start = seconds_now();
    struct spawn_job mixed[4] = {{.argv = (char *[]){"sleep", "30", NULL}},
                                 {.argv = (char *[]){"gpuledger-no-such-binary", NULL}},
                                 {.argv = (char *[]){"head", "-c", "5000", "/dev/zero", NULL}},
                                 {.argv = (char *[]){"sleep", "30", NULL}}};
    spawn_capture_all(mixed, 4, 10000, monotonic_ms() + 800, 4096);
    CHECK(seconds_now() - start < 2.0); /* not 2 × 800 ms in turn, nor 10 s */
    CHECK_INT(mixed[0].rc, -1);
    CHECK(strstr(mixed[0].cause, "ms: its deadline passed") != NULL);
    CHECK_INT(mixed[1].rc, -1);
    CHECK_STR(mixed[1].cause, "not found");
    CHECK_INT(mixed[2].rc, -1);
    CHECK_STR(mixed[2].cause, "output exceeds 4 KiB");
    CHECK_INT(mixed[3].rc, -1);
    CHECK(strstr(mixed[3].cause, "ms: its deadline passed") != NULL);

    struct spawn_job too_many[SPAWN_ALL_MAX + 1];
    char *const true_argv[] = {"true", NULL};
    for (int i = 0; i <= SPAWN_ALL_MAX; i++)
        too_many[i] = (struct spawn_job){.argv = true_argv};
    spawn_capture_all(too_many, SPAWN_ALL_MAX + 1, 5000, 0, MIB);
    for (int i = 0; i < SPAWN_ALL_MAX; i++) {
        CHECK_INT(too_many[i].rc, 0);
        spawn_result_free(&too_many[i].result);
    }
    CHECK_INT(too_many[SPAWN_ALL_MAX].rc, -1);
    CHECK_STR(too_many[SPAWN_ALL_MAX].cause, "not started: more than 16 commands at once");
    CHECK_INT(count_open_fds(), before);
    CHECK(no_child_left());
}

static void test_output_cap(void)
{
    struct spawn_result r;
    double start = seconds_now();
    CHECK_INT(run((char *[]){"head", "-c", "10000000", "/dev/zero", NULL}, 10000, MIB, &r), -1);
    CHECK_STR(errbuf, "output exceeds 1 MiB");
    CHECK(seconds_now() - start < 5.0);
    CHECK(r.out == NULL);
    CHECK(no_child_left());

    CHECK_INT(run((char *[]){"sh", "-c", "head -c 5000 /dev/zero >&2", NULL}, 5000, 4096, &r), -1);
    CHECK_STR(errbuf, "output exceeds 4 KiB");

    CHECK_INT(run((char *[]){"head", "-c", "1000", "/dev/zero", NULL}, 5000, 1000, &r), 0);
    CHECK_INT(r.out_len, 1000); /* exactly the cap is fine */
    spawn_result_free(&r);
    CHECK_INT(run((char *[]){"head", "-c", "1001", "/dev/zero", NULL}, 5000, 1000, &r), -1);
    CHECK_STR(errbuf, "output exceeds 1000 bytes");

    CHECK_INT(run((char *[]){"true", NULL}, 5000, 0, &r), 0);
    spawn_result_free(&r);
    CHECK_INT(run((char *[]){"echo", NULL}, 5000, 0, &r), -1);
    CHECK_STR(errbuf, "output exceeds 0 bytes");

    CHECK_INT(run((char *[]){"head", "-c", "5000000", "/dev/zero", NULL}, 10000, 8 * MIB, &r), 0);
    CHECK_INT(r.out_len, 5000000);
    CHECK(r.out[0] == '\0' && r.out[4999999] == '\0' && r.out[5000000] == '\0');
    spawn_result_free(&r);
    CHECK(no_child_left());
}

static void test_descriptors(void)
{
    struct spawn_result r;
    char script[128];

    /* a descriptor someone opened without O_CLOEXEC stays out of the child */
    int leaky = open("/dev/null", O_RDONLY);
    CHECK(leaky > 2);
    snprintf(script, sizeof script,
             "if [ -e /proc/$$/fd/%d ]; then echo open; else echo closed; fi", leaky);
    CHECK_INT(run((char *[]){"sh", "-c", script, NULL}, 5000, MIB, &r), 0);
    CHECK_STR(r.out, "closed\n");
    spawn_result_free(&r);
    close(leaky);

    int before = count_open_fds();
    for (int i = 0; i < 200; i++) {
        if (run((char *[]){"true", NULL}, 5000, MIB, &r) == 0)
            spawn_result_free(&r);
        else
            CHECK_STR(errbuf, "");
    }
    run((char *[]){"gpuledger-no-such-binary", NULL}, 5000, MIB, &r);
    run((char *[]){"sleep", "30", NULL}, 100, MIB, &r);
    run((char *[]){"head", "-c", "100000", "/dev/zero", NULL}, 5000, 1000, &r);
    CHECK_INT(count_open_fds(), before);
    CHECK(no_child_left());

    /* with 0, 1 and 2 closed, the pipes still reach the child's 1 and 2 */
    int saved[3];
    for (int fd = 0; fd < 3; fd++) {
        saved[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 10);
        close(fd);
    }
    int ok = run((char *[]){"sh", "-c", "echo out; echo err >&2", NULL}, 5000, MIB, &r);
    for (int fd = 0; fd < 3; fd++) {
        dup2(saved[fd], fd);
        close(saved[fd]);
    }
    if (CHECK_INT(ok, 0)) {
        CHECK_STR(r.out, "out\n");
        CHECK_STR(r.err, "err\n");
        spawn_result_free(&r);
    }
    CHECK_INT(count_open_fds(), before);
}

static int remove_tmpdir(void)
{
    char path[300];
    static const char *const names[] = {"not-executable", "not-a-program", "group.pid", "a", "b"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    return rmdir(tmpdir);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_capture();
    test_environment();
    test_exit_status();
    test_exec_failures();
    test_timeouts();
    test_shared_deadline();
    test_all_at_once();
    test_output_cap();
    test_descriptors();
    CHECK_INT(remove_tmpdir(), 0);
    return check_finish();
}
