#ifndef GPULEDGER_ISOLATE_H
#define GPULEDGER_ISOLATE_H
#include <lua.h>

/* core.run_isolated(fn, {deadline_ms=, cpu_ms=, memory_bytes=, max_bytes=})
 *   → text
 *   | nil, message, kind
 *
 * Calls fn() in a child process (fork) and returns the string it returns.
 * The child is a copy of the caller at the moment of the call: fn sees the
 * caller's Lua state as it is, and nothing fn changes (globals, tables, the
 * history, a cache) comes back — only its string does. So run there exactly
 * the code that may misbehave (the judge and the renderers, which run site
 * rules), give it everything as upvalues, and have it return its result
 * encoded (JSON); keep every change of state in the caller.
 *
 * Limits: the child is killed (SIGKILL to its process group) and reaped once
 * deadline_ms (required, wall clock) has passed since the call, or as soon
 * as SIGTERM or SIGINT is pending, whatever it is doing — a loop in Lua, a
 * C function that never returns (string.rep("", math.maxinteger)), a
 * message handler that loops — and, with cpu_ms, ends (SIGPROF) once it has
 * run cpu_ms of CPU time, user and system: the time it computed, which a
 * busy machine does not eat into as it does into wall-clock time; its
 * address space may grow by memory_bytes (default 256 MiB; an allocation
 * past it fails, and Lua raises "not enough memory" inside fn); its CPU
 * time ends a second or two past the longer of the two deadlines
 * (SIGXCPU); an answer longer than max_bytes (default 64 MiB) is refused.
 * The child dies with the caller
 * (PR_SET_PDEATHSIG), holds none of its descriptors but stdin, stdout and
 * stderr (libmicrohttpd's sockets stay the caller's alone), runs with no
 * signal blocked, and writes nothing through stdio buffers of the caller's
 * (they are flushed before the fork, and the child ends with _exit). Safe
 * in a process with other threads: the child touches only the Lua state
 * and its pipe. Under AddressSanitizer the address-space limit also counts
 * the sanitizer's own reservations (it is set relative to the size at the
 * fork, so it still bounds growth).
 *
 * Failures, with kind:
 *   "error"    fn raised: message is its error message (a non-string error
 *              object or a non-string result is described instead);
 *   "deadline" "deadline of 500 ms passed" (wall clock), "deadline of 300 ms
 *              of CPU time passed" (cpu_ms);
 *   "killed"   "killed by signal 24 (CPU time limit exceeded)";
 *   "exited"   "exited 1" (the child ended without an answer);
 *   "stopped"  SIGTERM or SIGINT is pending (serve is stopping): the child
 *              was killed at once, or not started (spawn_stop_pending);
 *   "failed"   "fork: Resource temporarily unavailable", "pipe: …", or
 *              "its answer exceeds 64 MiB".
 * Raises (luaL_argcheck) when called wrongly: fn not a function, no
 * deadline_ms, a limit that is not a positive integer. Never leaves a
 * zombie or an open descriptor behind. */
int core_run_isolated(lua_State *L);

#endif
