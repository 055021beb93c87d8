/* Running a command and capturing what it prints, with a deadline and a size
 * cap, without a shell, a zombie or a leaked descriptor. */
#include "spawn_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "byte_buffer.h"
#include "cause.h"
#include "clock.h"
#include "units.h"

/* The PATH a child gets when the agent has none. */
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum {
    READ_CHUNK = 64 * 1024,
    KILL_GRACE_MS = 2000, /* how long a killed child may take to die */
    MAX_ABANDONED = 16,
};

/* One output stream of the child: the read end of its pipe (-1 once at EOF)
 * and what came through it, limited to the caller's max_bytes. */
struct capture {
    int fd;
    struct byte_buffer bytes;
};

/* How reading the child's output, or waiting for it, ended. */
enum run_end { RUN_OK, RUN_TIMEOUT, RUN_OVERFLOW, RUN_FAILED, RUN_STOPPED };

/* Children that would not die within KILL_GRACE_MS of SIGKILL (stuck in the
 * kernel, as nvidia-smi can be on a GPU that fell off the bus): waiting for
 * them would hang the caller, so later calls reap them once they are gone. */
static pid_t abandoned[MAX_ABANDONED];
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;

/* Milliseconds left until deadline_ns, rounded up; 0 once it has passed; -1
 * (poll's "forever") when there is no deadline (deadline_ns < 0). */
static int ms_until(int64_t deadline_ns)
{
    if (deadline_ns < 0)
        return -1;
    int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0)
        return 0;
    return (int)((left_ns + 999999) / 1000000);
}

/* Sleeps about ms milliseconds. */
static void sleep_ms(int ms)
{
    struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&pause, NULL); /* an interrupted sleep only makes a caller look sooner */
}

/* "250ms", "10s", "1.5s": the way Go prints a duration under a minute. */
static void format_duration(char *buf, size_t len, int ms)
{
    if (ms < 1000) {
        snprintf(buf, len, "%dms", ms);
    } else if (ms % 1000 == 0) {
        snprintf(buf, len, "%ds", ms / 1000);
    } else {
        char fraction[4];
        snprintf(fraction, sizeof fraction, "%03d", ms % 1000);
        for (int i = 2; fraction[i] == '0'; i--)
            fraction[i] = '\0';
        snprintf(buf, len, "%d.%ss", ms / 1000, fraction);
    }
}

/* The signals that stop the agent: SIGTERM and SIGINT. */
static void stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
}

/* As spawn_capture.h says. */
int spawn_stop_pending(void)
{
    sigset_t pending;
    if (sigpending(&pending) != 0)
        return 0;
    return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
}

/* Reaps the abandoned children that have died since; forgets those that are
 * no longer ours to reap. */
static void reap_abandoned(void)
{
    pthread_mutex_lock(&abandoned_lock);
    for (int i = 0; i < MAX_ABANDONED; i++) {
        if (abandoned[i] <= 0)
            continue;
        pid_t reaped = waitpid(abandoned[i], NULL, WNOHANG);
        if (reaped == abandoned[i] || (reaped < 0 && errno == ECHILD))
            abandoned[i] = 0;
    }
    pthread_mutex_unlock(&abandoned_lock);
}

/* Kills the process group of pid (the child leads it) and reaps pid. Returns
 * 0, or -1 when pid outlived KILL_GRACE_MS and was left to reap_abandoned
 * (it is still waited for here, however long that takes, when that list is
 * full). */
static int kill_and_reap(pid_t pid)
{
    if (pid <= 0) /* never signal our own group, or everything */
        return 0;
    if (kill(-pid, SIGKILL) < 0)
        kill(pid, SIGKILL);
    int64_t give_up_ns = monotonic_ns() + (int64_t)KILL_GRACE_MS * 1000000;
    for (int delay_ms = 1;; delay_ms = delay_ms < 50 ? delay_ms * 2 : 50) {
        pid_t reaped = waitpid(pid, NULL, WNOHANG);
        if (reaped == pid || (reaped < 0 && errno != EINTR)) /* ECHILD: not ours */
            return 0;
        if (reaped == 0 && ms_until(give_up_ns) == 0)
            break;
        if (reaped == 0)
            sleep_ms(delay_ms);
    }
    pthread_mutex_lock(&abandoned_lock);
    for (int i = 0; i < MAX_ABANDONED; i++) {
        if (abandoned[i] <= 0) {
            abandoned[i] = pid;
            pthread_mutex_unlock(&abandoned_lock);
            return -1;
        }
    }
    pthread_mutex_unlock(&abandoned_lock);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    return 0;
}

/* Does one read from c's pipe, which poll said is ready. Never reads more than
 * one byte past the limit, so the buffer stays within max_bytes + 2. On EOF
 * the pipe is closed and c->fd set to -1. */
static enum run_end read_once(struct capture *c, int *error_number)
{
    size_t want;
    char *room = byte_buffer_read_room(&c->bytes, READ_CHUNK, &want);
    if (!room) {
        *error_number = ENOMEM;
        return RUN_FAILED;
    }
    ssize_t n = read(c->fd, room, want);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return RUN_OK;
    if (n < 0) {
        *error_number = errno;
        return RUN_FAILED;
    }
    if (n == 0) {
        close(c->fd);
        c->fd = -1;
        return RUN_OK;
    }
    byte_buffer_added(&c->bytes, (size_t)n);
    return c->bytes.len > c->bytes.max_bytes ? RUN_OVERFLOW : RUN_OK;
}

/* Reads both pipes until both are at EOF, the deadline passes, one of them
 * brings more than max_bytes, or a stop signal is pending (RUN_STOPPED: the
 * agent blocks SIGTERM and SIGINT to wait for them, so one that comes now
 * waits for this child; a signalfd, which only looks, wakes the poll and
 * leaves the signal to the agent's own wait). */
static enum run_end read_outputs(struct capture *out, struct capture *err, int64_t deadline_ns,
                                 int *error_number)
{
    struct capture *captures[2] = {out, err};
    sigset_t stop;
    stop_signals(&stop);
    int stop_fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK); /* -1: only the deadline */
    enum run_end end = RUN_OK;
    while (end == RUN_OK && (out->fd >= 0 || err->fd >= 0)) {
        int wait_ms = ms_until(deadline_ns);
        if (wait_ms == 0) {
            end = RUN_TIMEOUT;
            break;
        }
        if (spawn_stop_pending()) {
            end = RUN_STOPPED;
            break;
        }
        struct pollfd fds[3] = {
            {out->fd, POLLIN, 0}, {err->fd, POLLIN, 0}, {stop_fd, POLLIN, 0}}; /* -1 is skipped */
        if (poll(fds, 3, wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            *error_number = errno;
            end = RUN_FAILED;
            break;
        }
        for (int i = 0; i < 2 && end == RUN_OK; i++) {
            if (fds[i].fd >= 0 && fds[i].revents != 0)
                end = read_once(captures[i], error_number);
        }
    }
    if (stop_fd >= 0)
        close(stop_fd);
    return end;
}

/* Waits until pid exits (and reaps it, *status filled), the deadline passes
 * or a stop signal is pending.
 * Only needed when the child closed its output before exiting, so a short
 * backoff of sleeps is enough. RUN_FAILED means pid was not ours to reap. */
static enum run_end wait_child(pid_t pid, int64_t deadline_ns, int *status, int *error_number)
{
    for (int delay_ms = 1;; delay_ms = delay_ms < 50 ? delay_ms * 2 : 50) {
        pid_t reaped = waitpid(pid, status, WNOHANG);
        if (reaped == pid)
            return RUN_OK;
        if (reaped < 0 && errno == EINTR)
            continue;
        if (reaped < 0) {
            *error_number = errno;
            return RUN_FAILED;
        }
        int left_ms = ms_until(deadline_ns);
        if (left_ms == 0)
            return RUN_TIMEOUT;
        if (spawn_stop_pending())
            return RUN_STOPPED;
        sleep_ms(left_ms > 0 && left_ms < delay_ms ? left_ms : delay_ms);
    }
}

/* A pipe whose two ends are close-on-exec and above 2, so that setting up the
 * child's 0, 1 and 2 cannot clobber them even when the caller runs with one
 * of those closed. */
static int open_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        if (fds[i] > 2)
            continue;
        int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        int saved_errno = errno;
        close(fds[i]);
        fds[i] = moved;
        if (moved < 0) {
            if (i == 0)
                close(fds[1]);
            else
                close(fds[0]);
            errno = saved_errno;
            return -1;
        }
    }
    return 0;
}

/* Starts argv with stdin from /dev/null, stdout and stderr on out_fd and
 * err_fd, no other descriptor, default signal dispositions, an empty signal
 * mask, in a new process group, and an environment of its own: the agent's
 * PATH (or DEFAULT_PATH) and LC_ALL=C, nothing else — no variable of the
 * agent's (a token) reaches a child. Returns 0 or an errno value: glibc
 * reports the child's failure to exec (ENOENT, EACCES...) as posix_spawnp's
 * result. */
static int start_child(char *const argv[], int out_fd, int err_fd, pid_t *pid)
{
    const char *path = getenv("PATH");
    size_t path_size = strlen("PATH=") + strlen(path ? path : DEFAULT_PATH) + 1;
    char *path_line = malloc(path_size);
    if (!path_line)
        return ENOMEM;
    snprintf(path_line, path_size, "PATH=%s", path ? path : DEFAULT_PATH);
    char *child_environment[] = {path_line, "LC_ALL=C", NULL};

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t no_signals, all_signals;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) {
        free(path_line);
        return rc;
    }
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        free(path_line);
        return rc;
    }
    sigemptyset(&no_signals);
    sigfillset(&all_signals);
    rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    /* Descriptors other code opened without O_CLOEXEC stay out of the child. */
    if (rc == 0)
        rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF);
    if (rc == 0)
        rc = posix_spawnattr_setpgroup(&attr, 0);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&attr, &no_signals);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(&attr, &all_signals);
    if (rc == 0)
        rc = posix_spawnp(pid, argv[0], &actions, &attr, argv, child_environment);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    free(path_line);
    return rc;
}

/* Creates the two pipes and starts argv on their write ends, which are closed
 * here either way. Returns 0 with *pid, *out_fd and *err_fd (the read ends)
 * filled, or an errno value with nothing left open. */
static int start_with_pipes(char *const argv[], pid_t *pid, int *out_fd, int *err_fd)
{
    int out_pipe[2], err_pipe[2];
    if (open_pipe(out_pipe) < 0)
        return errno;
    if (open_pipe(err_pipe) < 0) {
        int saved_errno = errno;
        close(out_pipe[0]);
        close(out_pipe[1]);
        return saved_errno;
    }
    int rc = start_child(argv, out_pipe[1], err_pipe[1], pid);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        return rc;
    }
    *out_fd = out_pipe[0];
    *err_fd = err_pipe[0];
    return 0;
}

/* The cause of a failed start: "not found", "permission denied" or strerror. */
static const char *start_error(int error_number)
{
    if (error_number == ENOENT)
        return "not found";
    if (error_number == EACCES)
        return "permission denied";
    return strerror(error_number);
}

/* How long a child was given until a deadline it did not set itself: to
 * the millisecond under 100 ms, to 10 ms above (the caller's clock, read in
 * whole milliseconds a moment earlier, differs from ours by up to one:
 * 999.4 ms reads "1s"). */
static int given_ms(int64_t start_ns, int64_t deadline_ns)
{
    int ms = (int)((deadline_ns - start_ns + 500000) / 1000000);
    return ms < 100 ? ms : (ms + 5) / 10 * 10;
}

/* Writes why a started child gave no result into cause: for a timeout,
 * the time it was given (timed_ms), and ": its deadline passed" when that
 * was a deadline set by the caller (at_deadline). */
static void describe_end(enum run_end end, int timed_ms, int at_deadline, size_t max_bytes,
                         int error_number, pid_t stuck_pid, char *cause, size_t cause_cap)
{
    char amount[48], stuck[64] = "";
    if (stuck_pid > 0)
        snprintf(stuck, sizeof stuck, " (pid %ld did not die on SIGKILL)", (long)stuck_pid);
    if (end == RUN_TIMEOUT) {
        format_duration(amount, sizeof amount, timed_ms);
        cause_set(cause, cause_cap, "timed out after %s%s%s", amount,
                  at_deadline ? ": its deadline passed" : "", stuck);
    } else if (end == RUN_STOPPED) {
        cause_set(cause, cause_cap, "%s%s", SPAWN_STOPPED_MESSAGE, stuck);
    } else if (end == RUN_OVERFLOW) {
        format_size(amount, sizeof amount, max_bytes);
        cause_set(cause, cause_cap, "output exceeds %s%s", amount, stuck);
    } else {
        cause_set(cause, cause_cap, "%s%s", strerror(error_number), stuck);
    }
}

/* As spawn_capture.h says. A child that closes its output but runs on, or
 * leaves a process holding it, counts as running until the deadline. Safe
 * to call from several threads. */
int spawn_capture(char *const argv[], int timeout_ms, long long deadline_ms, size_t max_bytes,
                  struct spawn_result *result, char *cause, size_t cause_cap)
{
    struct capture out = {-1, {0}}, err = {-1, {0}};
    byte_buffer_init(&out.bytes, max_bytes);
    byte_buffer_init(&err.bytes, max_bytes);
    pid_t pid = 0;

    memset(result, 0, sizeof *result);
    if (!argv || !argv[0] || !argv[0][0])
        return cause_set(cause, cause_cap, "no command to run");
    int64_t start_ns = monotonic_ns();
    int64_t deadline_ns = timeout_ms > 0 ? start_ns + (int64_t)timeout_ms * 1000000 : -1;
    int at_deadline = 0;
    if (deadline_ms > 0) {
        int64_t given_deadline_ns = (int64_t)deadline_ms * 1000000;
        if (given_deadline_ns <= start_ns)
            return cause_set(cause, cause_cap, "not started: its deadline had passed");
        if (deadline_ns < 0 || given_deadline_ns < deadline_ns) {
            deadline_ns = given_deadline_ns;
            at_deadline = 1;
        }
    }
    int timed_ms = at_deadline ? given_ms(start_ns, deadline_ns) : timeout_ms;
    if (spawn_stop_pending())
        return cause_set(cause, cause_cap, "%s", SPAWN_NOT_STARTED_MESSAGE);
    reap_abandoned();
    /* allocated before the child starts, so that taking them cannot fail */
    int error_number = !byte_buffer_reserve(&out.bytes, 0) || !byte_buffer_reserve(&err.bytes, 0)
                           ? ENOMEM
                           : start_with_pipes(argv, &pid, &out.fd, &err.fd);
    if (error_number != 0) {
        byte_buffer_free(&out.bytes);
        byte_buffer_free(&err.bytes);
        return cause_set(cause, cause_cap, "%s", start_error(error_number));
    }

    int status = 0, reaped = 0;
    enum run_end end = read_outputs(&out, &err, deadline_ns, &error_number);
    if (end == RUN_OK) {
        end = wait_child(pid, deadline_ns, &status, &error_number);
        reaped = end == RUN_OK || end == RUN_FAILED; /* reaped, or not ours to reap */
    }
    if (out.fd >= 0)
        close(out.fd);
    if (err.fd >= 0)
        close(err.fd);
    pid_t stuck_pid = !reaped && kill_and_reap(pid) < 0 ? pid : 0;

    if (end != RUN_OK) {
        byte_buffer_free(&out.bytes);
        byte_buffer_free(&err.bytes);
        describe_end(end, timed_ms, at_deadline, max_bytes, error_number, stuck_pid, cause,
                     cause_cap);
        return -1;
    }
    result->out = byte_buffer_take(&out.bytes, &result->out_len);
    result->err = byte_buffer_take(&err.bytes, &result->err_len);
    result->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

/* What a thread of spawn_capture_all runs: one job, and the limits they share. */
struct job_thread {
    struct spawn_job *job;
    int timeout_ms;
    long long deadline_ms;
    size_t max_bytes;
    pthread_t thread;
    int started;
};

/* Runs one job of spawn_capture_all (a pthread start routine). */
static void *run_job(void *arg)
{
    struct job_thread *t = arg;
    t->job->rc = spawn_capture(t->job->argv, t->timeout_ms, t->deadline_ms, t->max_bytes,
                               &t->job->result, t->job->cause, sizeof t->job->cause);
    return NULL;
}

/* As spawn_capture.h says. */
void spawn_capture_all(struct spawn_job *jobs, size_t n, int timeout_ms, long long deadline_ms,
                       size_t max_bytes)
{
    struct job_thread threads[SPAWN_ALL_MAX];
    for (size_t i = SPAWN_ALL_MAX; i < n; i++) {
        memset(&jobs[i].result, 0, sizeof jobs[i].result);
        jobs[i].rc = cause_set(jobs[i].cause, sizeof jobs[i].cause,
                               "not started: more than %d commands at once", SPAWN_ALL_MAX);
    }
    if (n > SPAWN_ALL_MAX)
        n = SPAWN_ALL_MAX;
    for (size_t i = 0; i < n; i++) {
        threads[i] = (struct job_thread){&jobs[i], timeout_ms, deadline_ms, max_bytes, 0, 0};
        threads[i].started = pthread_create(&threads[i].thread, NULL, run_job, &threads[i]) == 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!threads[i].started)
            run_job(&threads[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (threads[i].started)
            pthread_join(threads[i].thread, NULL);
    }
}

/* As spawn_capture.h says. */
enum spawn_collect_end spawn_collect(pid_t pid, int fd, long long deadline_ms, size_t max_bytes,
                                     char **data, size_t *len, int *status, int *error_number)
{
    struct capture out = {fd, {0}}, none = {-1, {0}};
    byte_buffer_init(&out.bytes, max_bytes);
    int64_t deadline_ns = (int64_t)deadline_ms * 1000000;
    *data = NULL;
    *len = 0;
    *error_number = 0;
    enum run_end end = RUN_FAILED;
    if (!byte_buffer_reserve(&out.bytes, 0)) /* so that taking it cannot fail */
        *error_number = ENOMEM;
    else
        end = read_outputs(&out, &none, deadline_ns, error_number);
    if (out.fd >= 0)
        close(out.fd);
    int reaped = 0;
    if (end == RUN_OK) {
        end = wait_child(pid, deadline_ns, status, error_number);
        reaped = end == RUN_OK || end == RUN_FAILED;
    }
    if (!reaped)
        kill_and_reap(pid);
    if (end != RUN_OK) {
        byte_buffer_free(&out.bytes);
        return end == RUN_TIMEOUT    ? SPAWN_DEADLINE
               : end == RUN_OVERFLOW ? SPAWN_OVERFLOW
               : end == RUN_STOPPED  ? SPAWN_STOPPED
                                     : SPAWN_FAILED;
    }
    *data = byte_buffer_take(&out.bytes, len);
    return SPAWN_COLLECTED;
}

/* Frees both buffers and zeroes *result. */
void spawn_result_free(struct spawn_result *result)
{
    free(result->out);
    free(result->err);
    memset(result, 0, sizeof *result);
}
