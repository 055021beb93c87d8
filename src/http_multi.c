/* Many HTTP GETs at once in one thread (fleet reads every node's /ledger):
 * libcurl's multi interface driven by curl_multi_socket_action and epoll,
 * so the cost of a step does not grow with the number of requests still
 * running. At most as many run at once as the process has descriptors for
 * (fd_budget_transfers, counted once at the start): the others wait in the
 * queue, and the time the queue waits for a descriptor to come free does
 * not count against the run's deadline, so a request that waited still
 * has its own timeout from its start. Each request is set up exactly as http_get sets it up
 * (http_transfer_new), when it starts. Requests start in order, as many at
 * once as the start window allows: at most START_WINDOW of the running ones
 * may be younger than YOUNG_MS. A fleet of nodes that answer at once then
 * never holds more than a few dozen handles and buffers (memory stays flat
 * however large the fleet), while a node that is slow stops counting after
 * YOUNG_MS, so slow nodes cannot hold the others back for long: with every
 * node silent, the last of N starts after about N / START_WINDOW * YOUNG_MS.
 * A request added during the run (http_many_add) joins the queue behind the
 * others. See http_multi.h for the contract. */
#include "http_multi.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cause.h"
#include "clock.h"
#include "fd_budget.h"

#define EVENTS_PER_WAIT 256
#define START_WINDOW    128
#define YOUNG_MS        20

/* The state of one run, shared with curl's callbacks and with each. */
struct http_many {
    CURLM *multi;
    int epoll_fd;
    long long timer_at; /* monotonic_ms when curl wants a timeout call; < 0: none */
    const struct http_request **requests; /* by index; the caller's */
    size_t count;
    size_t capacity;                  /* of requests, transfers and started_at */
    struct http_transfer **transfers; /* by request index; NULL unless running */
    long long *started_at;            /* monotonic_ms, by request index */
    size_t next;                      /* the next request to start */
    size_t oldest_young;              /* requests before it are not young */
    size_t young;                     /* running requests from oldest_young on */
    size_t running;                   /* requests with a transfer */
    size_t most_running;              /* what the descriptors allow */
    long long full_since; /* monotonic_ms since the queue waits on most_running; < 0: not */
    long long full_ms;    /* the time it waited so, before full_since */
    http_each_fn each;
    void *context;
    int stop;           /* what the each call that stopped the run returned */
    long long heard_ns; /* spent in each calls: the caller's time, not the deadline's */
};

/* curl's socket callback: watch s for what curl waits on, or stop watching. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    (void)socketp;
    struct http_many *run = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(run->epoll_fd, EPOLL_CTL_DEL, s, NULL); /* a closed socket is gone already */
        return 0;
    }
    struct epoll_event event = {.data.fd = s};
    if (what & CURL_POLL_IN)
        event.events |= EPOLLIN;
    if (what & CURL_POLL_OUT)
        event.events |= EPOLLOUT;
    if (epoll_ctl(run->epoll_fd, EPOLL_CTL_MOD, s, &event) != 0 && errno == ENOENT)
        epoll_ctl(run->epoll_fd, EPOLL_CTL_ADD, s, &event);
    return 0;
}

/* curl's timer callback: when to call curl_multi_socket_action(TIMEOUT). */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct http_many *run = userp;
    run->timer_at = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
    return 0;
}

/* Tells each about request index, unless the run was stopped, and counts
 * the time each took in run->heard_ns. */
static void hear(struct http_many *run, size_t index, struct http_response *response,
                 const char *cause)
{
    if (run->stop)
        return;
    long long began = monotonic_ns();
    int said = run->each(run->context, run, index, response, cause);
    run->heard_ns += monotonic_ns() - began;
    if (said)
        run->stop = said;
}

/* Hears every transfer curl has finished. */
static void hear_finished(struct http_many *run)
{
    CURLMsg *message;
    int left;
    while (!run->stop && (message = curl_multi_info_read(run->multi, &left)) != NULL) {
        if (message->msg != CURLMSG_DONE)
            continue;
        CURL *easy = message->easy_handle;
        CURLcode code = message->data.result;
        char *slot = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &slot);
        size_t index = (size_t)(uintptr_t)slot;
        struct http_transfer *transfer = run->transfers[index];
        curl_multi_remove_handle(run->multi, easy);
        struct http_response response;
        char cause[512];
        int failed = http_transfer_finish(transfer, code, &response, cause, sizeof cause);
        http_transfer_free(transfer);
        run->transfers[index] = NULL;
        if (index >= run->oldest_young)
            run->young--;
        run->running--;
        hear(run, index, failed ? NULL : &response, failed ? cause : NULL);
        http_response_free(&response);
    }
}

/* Moves oldest_young past the requests that are no longer young at now. */
static void age(struct http_many *run, long long now)
{
    while (run->oldest_young < run->next && run->started_at[run->oldest_young] + YOUNG_MS <= now) {
        if (run->transfers[run->oldest_young])
            run->young--;
        run->oldest_young++;
    }
}

/* The time the queue has waited for a descriptor by now, in ms. */
static long long waited_full(const struct http_many *run, long long now)
{
    return run->full_ms + (run->full_since >= 0 ? now - run->full_since : 0);
}

/* Starts requests in order while the start window and the descriptors have
 * room; a request that cannot be set up is heard at once with its cause.
 * Notes when the queue begins and ends waiting on the descriptors. */
static void start_more(struct http_many *run)
{
    long long now = monotonic_ms();
    age(run, now);
    if (run->full_since >= 0 && run->running < run->most_running) {
        run->full_ms += now - run->full_since;
        run->full_since = -1;
    }
    while (run->next < run->count && run->young < START_WINDOW &&
           run->running < run->most_running && !run->stop) {
        size_t i = run->next++;
        run->started_at[i] = now;
        char cause[512];
        struct http_transfer *transfer = http_transfer_new(run->requests[i], cause, sizeof cause);
        if (!transfer) {
            hear(run, i, NULL, cause);
            continue;
        }
        CURL *easy = http_transfer_curl(transfer);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *)(uintptr_t)i);
        curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, 1L);  /* every node is another server */
        curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 4096L); /* a ledger is a few KiB */
        if (curl_multi_add_handle(run->multi, easy) != CURLM_OK) {
            http_transfer_free(transfer);
            hear(run, i, NULL, "curl_multi_add_handle failed");
            continue;
        }
        run->transfers[i] = transfer;
        run->young++;
        run->running++;
    }
    if (run->next < run->count && run->running >= run->most_running && run->full_since < 0)
        run->full_since = now;
}

/* Drives the transfers until every request was heard, the deadline
 * (monotonic_ms) passes, or each stops the run. The time spent in each
 * calls moves the deadline on: it bounds the wait for answers, and reading
 * the answers that came (a fleet's thousands of ledgers) is not waiting.
 * So does the time the queue waits for a descriptor: every transfer then
 * running ends by its own timeout, so that wait is bounded too. */
static void drive(struct http_many *run, long long deadline)
{
    int running = 0;
    struct epoll_event events[EVENTS_PER_WAIT];
    for (;;) {
        start_more(run);
        /* what the new ones need first, and the timers that expired */
        curl_multi_socket_action(run->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        hear_finished(run);
        if (run->stop || (running == 0 && run->next == run->count))
            return;
        long long now = monotonic_ms();
        long long until = deadline + run->heard_ns / 1000000 + waited_full(run, now);
        if (now >= until)
            return;
        long long wait = until - now;
        if (run->timer_at >= 0 && run->timer_at - now < wait)
            wait = run->timer_at > now ? run->timer_at - now : 0;
        /* with every descriptor taken, one comes free when a transfer
         * ends, which curl's events and timer tell */
        if (run->next < run->count && run->running < run->most_running) {
            if (run->young < START_WINDOW) {
                wait = 0; /* each added a request: start it now */
            } else {
                long long ages_at = run->started_at[run->oldest_young] + YOUNG_MS;
                if (ages_at - now < wait)
                    wait = ages_at > now ? ages_at - now : 0;
            }
        }
        int ready = epoll_wait(run->epoll_fd, events, EVENTS_PER_WAIT, (int)wait);
        if (ready < 0 && errno != EINTR)
            return;
        for (int i = 0; i < ready; i++) {
            int flags = 0;
            if (events[i].events & EPOLLIN)
                flags |= CURL_CSELECT_IN;
            if (events[i].events & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
            if (events[i].events & (EPOLLERR | EPOLLHUP))
                flags |= CURL_CSELECT_ERR;
            curl_multi_socket_action(run->multi, events[i].data.fd, flags, &running);
        }
        if (run->timer_at >= 0 && monotonic_ms() >= run->timer_at) {
            run->timer_at = -1;
            curl_multi_socket_action(run->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        hear_finished(run);
    }
}

/* Makes room for want requests in run's arrays (a new transfer slot is
 * NULL). Returns 0, or -1 when out of memory (run is unchanged but may have
 * more room). */
static int make_room(struct http_many *run, size_t want)
{
    if (want <= run->capacity)
        return 0;
    size_t capacity = run->capacity ? run->capacity : 8;
    while (capacity < want)
        capacity *= 2;
    const struct http_request **requests = realloc(run->requests, capacity * sizeof *requests);
    if (!requests)
        return -1;
    run->requests = requests;
    struct http_transfer **transfers = realloc(run->transfers, capacity * sizeof *transfers);
    if (!transfers)
        return -1;
    memset(transfers + run->capacity, 0, (capacity - run->capacity) * sizeof *transfers);
    run->transfers = transfers;
    long long *started_at = realloc(run->started_at, capacity * sizeof *started_at);
    if (!started_at)
        return -1;
    run->started_at = started_at;
    run->capacity = capacity;
    return 0;
}

/* Adds request to the run (contract in http_multi.h). */
int http_many_add(struct http_many *run, const struct http_request *request)
{
    if (make_room(run, run->count + 1) != 0)
        return -1;
    run->requests[run->count++] = request;
    return 0;
}

/* Runs the requests (contract in http_multi.h). Owns every transfer it
 * starts and frees each one when it is heard or abandoned. */
int http_get_many(const struct http_request *requests, size_t count, long deadline_ms,
                  http_each_fn each, void *context, char *cause, size_t cause_cap)
{
    if (deadline_ms <= 0)
        return cause_set(cause, cause_cap, "deadline must be > 0");
    long long deadline = monotonic_ms() + deadline_ms;
    struct http_many run = {.epoll_fd = -1,
                            .timer_at = -1,
                            .full_since = -1,
                            .most_running = fd_budget_transfers(),
                            .each = each,
                            .context = context};
    int room = make_room(&run, count);
    for (size_t i = 0; room == 0 && i < count; i++)
        run.requests[run.count++] = &requests[i];
    run.multi = curl_multi_init();
    run.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (room != 0 || !run.multi || run.epoll_fd < 0) {
        cause_set(cause, cause_cap, "%s", run.epoll_fd < 0 ? strerror(errno) : "out of memory");
        free(run.requests);
        free(run.transfers);
        free(run.started_at);
        if (run.multi)
            curl_multi_cleanup(run.multi);
        if (run.epoll_fd >= 0)
            close(run.epoll_fd);
        return -1;
    }
    curl_multi_setopt(run.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(run.multi, CURLMOPT_SOCKETDATA, &run);
    curl_multi_setopt(run.multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(run.multi, CURLMOPT_TIMERDATA, &run);

    drive(&run, deadline);

    /* what is left is heard late; a request each adds now is heard late too */
    char late[96];
    snprintf(late, sizeof late, "no answer within the deadline of %ld ms", deadline_ms);
    for (size_t i = 0; i < run.count; i++) {
        int unheard = run.transfers[i] != NULL || i >= run.next;
        if (run.transfers[i]) {
            curl_multi_remove_handle(run.multi, http_transfer_curl(run.transfers[i]));
            http_transfer_free(run.transfers[i]);
            run.transfers[i] = NULL;
        }
        if (unheard)
            hear(&run, i, NULL, late);
    }
    curl_multi_cleanup(run.multi);
    close(run.epoll_fd);
    free(run.requests);
    free(run.transfers);
    free(run.started_at);
    return run.stop;
}
