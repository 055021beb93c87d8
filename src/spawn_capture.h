#ifndef GPULEDGER_SPAWN_CAPTURE_H
#define GPULEDGER_SPAWN_CAPTURE_H
#include <stddef.h>
#include <sys/types.h>

/* What a finished child left behind. Buffers are NUL-terminated and owned by
 * the caller (spawn_result_free). */
struct spawn_result {
    char *out;
    size_t out_len;
    char *err;
    size_t err_len;
    int exit_status; /* exit code when it exited, else -1 */
    int term_signal; /* the signal that ended it, else 0 */
};

/* Runs argv (argv[0] looked up in PATH) without a shell, in a process group of
 * its own, with stdin from /dev/null, capturing stdout and stderr. The child's
 * environment is PATH and LC_ALL=C only, never the caller's. It may run until
 * timeout_ms after it starts (<= 0: no such limit) and until deadline_ms, an
 * instant on monotonic_ms()'s clock (clock.h) (<= 0: none), whichever comes first:
 * callers share one deadline among several children.
 * Returns 0 with *result filled when the child ran to its end (whatever its
 * exit status). Returns -1 with a one-line cause in cause and nothing to free
 * when it could not run ("not found", "permission denied", "not started: its
 * deadline had passed"), ran past its time ("timed out after 10s", or "timed
 * out after 2.5s: its deadline passed" when deadline_ms came first: the whole
 * group is killed and reaped), wrote more than max_bytes on stdout or
 * stderr ("output exceeds 4 MiB"; killed and reaped too), or was stopped
 * because SIGTERM or SIGINT is pending (SPAWN_STOPPED_MESSAGE, killed and
 * reaped at once; SPAWN_NOT_STARTED_MESSAGE when one was pending before it
 * started). Never leaves a zombie or an open descriptor. */
int spawn_capture(char *const argv[], int timeout_ms, long long deadline_ms, size_t max_bytes,
                  struct spawn_result *result, char *cause, size_t cause_cap);

/* The most commands spawn_capture_all runs at once. */
#define SPAWN_ALL_MAX 16

/* One command of spawn_capture_all: argv in; rc, result and cause out, as
 * spawn_capture leaves them for that command. */
struct spawn_job {
    char *const *argv;
    int rc;
    struct spawn_result result; /* filled when rc is 0 (spawn_result_free) */
    char cause[256];
};

/* Runs the n jobs at the same time, each as spawn_capture runs one alone with
 * these timeout_ms, deadline_ms and max_bytes: one deadline bounds them all,
 * and each job's failure is its own (one that times out, overflows or is not
 * found leaves the others running to their ends). Returns when every job
 * has ended, each child reaped (or abandoned as spawn_capture abandons one).
 * Each job runs in a thread of its own; one whose thread cannot be started
 * runs in the caller's thread once the others have started. At most
 * SPAWN_ALL_MAX jobs run: those past it fail, not started. */
void spawn_capture_all(struct spawn_job *jobs, size_t n, int timeout_ms, long long deadline_ms,
                       size_t max_bytes);

/* Why a child was killed, or not started, for a pending stop signal. */
#define SPAWN_STOPPED_MESSAGE     "stopped: gpuledger is stopping (SIGTERM or SIGINT)"
#define SPAWN_NOT_STARTED_MESSAGE "not started: gpuledger is stopping (SIGTERM or SIGINT)"

/* 1 when SIGTERM or SIGINT is pending: serve blocks them (to wait for them
 * between refreshes), so one that comes during a refresh waits; every child
 * started here is then killed at once, and none is started, so that the
 * refresh ends and serve stops. 0 otherwise (a process that does not block
 * them has no such signal pending: it dies of it). */
int spawn_stop_pending(void);

/* Frees what spawn_capture filled in; safe on a zeroed result. */
void spawn_result_free(struct spawn_result *result);

/* How spawn_collect ended. */
enum spawn_collect_end {
    SPAWN_COLLECTED,
    SPAWN_DEADLINE,
    SPAWN_OVERFLOW,
    SPAWN_STOPPED,
    SPAWN_FAILED
};

/* For a child started another way (isolate.c forks one): reads fd, the read
 * end of a pipe from pid, to its end (and closes it), then reaps pid, all by
 * deadline_ms (monotonic_ms's clock). Returns SPAWN_COLLECTED with *data
 * (owned by the caller, NUL-terminated), *len and *status (as waitpid fills
 * it). Otherwise nothing is left to free, pid's process group is killed and
 * pid reaped: SPAWN_DEADLINE, SPAWN_OVERFLOW (more than max_bytes),
 * SPAWN_STOPPED (a stop signal is pending: spawn_stop_pending), or
 * SPAWN_FAILED with *error_number (an errno value). */
enum spawn_collect_end spawn_collect(pid_t pid, int fd, long long deadline_ms, size_t max_bytes,
                                     char **data, size_t *len, int *status, int *error_number);

#endif
