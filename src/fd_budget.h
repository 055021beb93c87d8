#ifndef GPULEDGER_FD_BUDGET_H
#define GPULEDGER_FD_BUDGET_H
#include <stddef.h>

/* The descriptors this process may open (RLIMIT_NOFILE's soft limit),
 * shared out between the HTTP server's connections and the HTTP client's
 * transfers, which fleet serve runs at once: FD_BUDGET_HEADROOM stay for
 * files, pipes, epoll and the libraries' own; a server takes at most half
 * of the rest; the transfers get what is then left. */
#define FD_BUDGET_HEADROOM 64

/* Descriptors one transfer may hold at once: its socket, and a second one
 * while libcurl races another address (happy eyeballs) or resolves a name
 * in a thread (a socket pair that is closed before the connection opens). */
#define FD_BUDGET_PER_TRANSFER 2

/* Reserves descriptors for a server's connections: at most wanted, at most
 * half of the limit less FD_BUDGET_HEADROOM (at least 16), wanted when
 * there is no limit. Returns how many it reserved, the server's connection
 * limit, to give back with fd_budget_release_server. Not thread-safe: call
 * it from the thread that starts and stops the server. */
unsigned fd_budget_reserve_server(unsigned wanted);

/* Gives back connections reserved by fd_budget_reserve_server. */
void fd_budget_release_server(unsigned connections);

/* How many transfers may run at once now: the descriptors left under the
 * limit once those open now (counted in /proc/self/fd), FD_BUDGET_HEADROOM
 * and a running server's reservation are set aside, FD_BUDGET_PER_TRANSFER
 * each; at least 1; SIZE_MAX when there is no limit. */
size_t fd_budget_transfers(void);

#endif
