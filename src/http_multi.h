#ifndef GPULEDGER_HTTP_MULTI_H
#define GPULEDGER_HTTP_MULTI_H
#include <stddef.h>

#include "http_client.h"

/* One run of http_get_many, as its each hears it (http_many_add). */
struct http_many;

/* Hears one request's outcome as soon as it is known: index into the
 * requests (those added with http_many_add follow the first ones); response
 * on an HTTP answer (whatever its status; owned by http_get_many, freed when
 * this returns), or NULL and a one-line cause as http_get gives it. run is
 * the run in progress, to add requests to. Returns 0 to go on; anything
 * else stops the run. */
typedef int (*http_each_fn)(void *context, struct http_many *run, size_t index,
                            struct http_response *response, const char *cause);

/* Runs every GET of requests together, in this thread, with libcurl's multi
 * interface; each keeps its own timeout (from when its transfer starts) and
 * byte cap, and the whole run ends by deadline_ms (> 0) from the start, not
 * counting the time spent in each calls nor the time requests waited for a
 * descriptor: a request still running (or never started) then fails with
 * "no answer within the deadline of N ms".
 * Requests start in order, a window of them at a time; one that has run
 * for a few tens of milliseconds leaves the window, so nodes that are slow
 * never hold back the others by more than that (http_multi.c). At most
 * fd_budget_transfers() run at once; the others wait their turn, so a run
 * of more requests than the process has descriptors for never fails one
 * for lack of a descriptor, and takes at most about its share of waves of
 * the longest timeout. each hears every request
 * exactly once, in the order the outcomes come. Returns 0; the non-zero value
 * an each call returned (the others are then abandoned unheard); or -1 with
 * a cause in cause when the machinery itself could not start. */
int http_get_many(const struct http_request *requests, size_t count, long deadline_ms,
                  http_each_fn each, void *context, char *cause, size_t cause_cap);

/* Adds request to the run in progress, from inside its each (a request that
 * follows from an answer: a second call of a conversation). It gets the next
 * index (the number of requests so far), starts behind the ones before it,
 * keeps its own timeout, ends by the run's deadline and is heard like them.
 * The run keeps the pointer: request must stay valid until http_get_many
 * returns. Returns 0, or -1 when out of memory (nothing was added). */
int http_many_add(struct http_many *run, const struct http_request *request);

#endif
