/* Running a Lua function in a child process, so that nothing it does — a
 * loop in Lua or in a C function, an allocation without bound, a message
 * handler that loops — can hold the caller: the child is forked with limits
 * on its address space and CPU time, and killed once its CPU time or a
 * wall-clock deadline passes. Contract in isolate.h. */
#include "isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>

#include "atomic_file.h"
#include "clock.h"
#include "spawn_capture.h"
#include "units.h"

#define DEFAULT_MEMORY_BYTES ((lua_Integer)256 << 20)
#define DEFAULT_MAX_BYTES    ((lua_Integer)64 << 20)
#define RESULT_FD            3 /* where the child writes its answer */

/* The child's answer on the pipe: one of these bytes, then the text. */
#define ANSWER_RESULT 'R' /* the string the function returned */
#define ANSWER_ERROR  'E' /* the message of the error it raised */

/* The size of this process's address space now, in bytes (0 when unknown). */
static rlim_t address_space_now(void)
{
    FILE *statm = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!statm)
        return 0;
    if (fscanf(statm, "%lu", &pages) != 1)
        pages = 0;
    fclose(statm);
    return (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
}

/* Sets the child's limits: memory_bytes more address space than it has now
 * (an allocation past it fails, which Lua reports as "not enough memory"),
 * SIGPROF once it has run cpu_ms of CPU time (user and system, when cpu_ms
 * > 0: the timer is the child's own, as fork starts none), and SIGXCPU a
 * second or two past the longer deadline, should neither come first. */
static void limit_child(lua_Integer deadline_ms, lua_Integer cpu_ms, lua_Integer memory_bytes)
{
    rlim_t now = address_space_now();
    if (now > 0) {
        struct rlimit space = {now + (rlim_t)memory_bytes, now + (rlim_t)memory_bytes};
        setrlimit(RLIMIT_AS, &space);
    }
    if (cpu_ms > 0) {
        signal(SIGPROF, SIG_DFL); /* it ends the child */
        struct itimerval cpu_timer = {{0, 0}, {cpu_ms / 1000, (cpu_ms % 1000) * 1000}};
        setitimer(ITIMER_PROF, &cpu_timer, NULL);
    }
    lua_Integer longer_ms = cpu_ms > deadline_ms ? cpu_ms : deadline_ms;
    rlim_t cpu_seconds = (rlim_t)(longer_ms / 1000) + 2;
    struct rlimit cpu = {cpu_seconds, cpu_seconds + 1};
    setrlimit(RLIMIT_CPU, &cpu);
}

/* The child: runs the function at index 1 and writes its answer to
 * RESULT_FD, then _exits, never returning to the caller's code. Touches only
 * the Lua state and the pipe: the parent may have threads (libmicrohttpd's),
 * of which only this one was copied. */
static void run_child(lua_State *L, int result_fd, pid_t parent, lua_Integer deadline_ms,
                      lua_Integer cpu_ms, lua_Integer memory_bytes)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the child never outlives the agent */
    if (getppid() != parent)
        _exit(1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* serve blocks SIGTERM & co for sigtimedwait */
    if (result_fd != RESULT_FD && dup2(result_fd, RESULT_FD) < 0)
        _exit(1);
    close_range(RESULT_FD + 1, ~0U, 0); /* the parent's sockets and files */
    limit_child(deadline_ms, cpu_ms, memory_bytes);

    lua_pushvalue(L, 1);
    int status = lua_pcall(L, 0, 1, 0);
    char kind = status == LUA_OK && lua_type(L, -1) == LUA_TSTRING ? ANSWER_RESULT : ANSWER_ERROR;
    if (status == LUA_OK && kind == ANSWER_ERROR)
        lua_pushfstring(L, "the function returned a %s, not a string", luaL_typename(L, -1));
    else if (status != LUA_OK && lua_type(L, -1) != LUA_TSTRING)
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, -1));
    size_t len;
    const char *text = lua_tolstring(L, -1, &len);
    if (write_all(RESULT_FD, &kind, 1) != 0 || write_all(RESULT_FD, text, len) != 0)
        _exit(1); /* the parent is gone */
    _exit(0);
}

/* Pushes nil, message and kind; returns 3. */
static int push_failure(lua_State *L, const char *kind, const char *message)
{
    lua_pushnil(L);
    lua_pushstring(L, message);
    lua_pushstring(L, kind);
    return 3;
}

/* Reads an optional integer field of the options at index 2: fallback when
 * there are no options or the field is absent; raises unless it is a
 * positive integer when present. */
static lua_Integer positive_option(lua_State *L, const char *field, lua_Integer fallback)
{
    if (lua_isnoneornil(L, 2))
        return fallback;
    if (lua_getfield(L, 2, field) == LUA_TNIL) {
        lua_pop(L, 1);
        return fallback;
    }
    lua_Integer value = luaL_checkinteger(L, -1);
    lua_pop(L, 1);
    luaL_argcheck(L, value > 0, 2, lua_pushfstring(L, "%s must be more than 0", field));
    return value;
}

/* As isolate.h says. */
int core_run_isolated(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    if (!lua_isnoneornil(L, 2))
        luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer deadline_ms = positive_option(L, "deadline_ms", 0);
    luaL_argcheck(L, deadline_ms > 0, 2, "want opts.deadline_ms");
    lua_Integer cpu_ms = positive_option(L, "cpu_ms", 0);
    lua_Integer memory_bytes = positive_option(L, "memory_bytes", DEFAULT_MEMORY_BYTES);
    lua_Integer max_bytes = positive_option(L, "max_bytes", DEFAULT_MAX_BYTES);
    lua_settop(L, 1); /* [fn]: what the child sees */

    if (spawn_stop_pending())
        return push_failure(L, "stopped", SPAWN_NOT_STARTED_MESSAGE);
    long long deadline = monotonic_ms() + (long long)deadline_ms;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return push_failure(L, "failed", lua_pushfstring(L, "pipe: %s", strerror(errno)));
    fflush(NULL); /* nothing buffered is written twice */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        run_child(L, fds[1], parent, deadline_ms, cpu_ms, memory_bytes);
    int fork_errno = errno;
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return push_failure(L, "failed", lua_pushfstring(L, "fork: %s", strerror(fork_errno)));
    }

    char *answer;
    size_t len;
    int status = 0, error_number;
    enum spawn_collect_end end = spawn_collect(pid, fds[0], deadline, (size_t)max_bytes, &answer,
                                               &len, &status, &error_number);
    char why[96];
    if (end == SPAWN_DEADLINE) {
        snprintf(why, sizeof why, "deadline of %lld ms passed", (long long)deadline_ms);
        return push_failure(L, "deadline", why);
    }
    if (end == SPAWN_STOPPED)
        return push_failure(L, "stopped", SPAWN_STOPPED_MESSAGE);
    if (end == SPAWN_OVERFLOW) {
        char size[32];
        format_size(size, sizeof size, (size_t)max_bytes);
        snprintf(why, sizeof why, "its answer exceeds %s", size);
        return push_failure(L, "failed", why);
    }
    if (end == SPAWN_FAILED)
        return push_failure(L, "failed", strerror(error_number));
    if (cpu_ms > 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGPROF) {
        free(answer);
        snprintf(why, sizeof why, "deadline of %lld ms of CPU time passed", (long long)cpu_ms);
        return push_failure(L, "deadline", why);
    }
    if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0) || len == 0) {
        free(answer);
        if (WIFSIGNALED(status))
            snprintf(why, sizeof why, "killed by signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(why, sizeof why, "exited %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return push_failure(L, WIFSIGNALED(status) ? "killed" : "exited", why);
    }
    int returned = answer[0] == ANSWER_RESULT;
    if (!returned)
        lua_pushnil(L);
    lua_pushlstring(L, answer + 1, len - 1);
    free(answer);
    if (returned)
        return 1;
    lua_pushliteral(L, "error");
    return 3;
}
