/* Many HTTP GETs at once in one thread (fleet reads every node's /ledger):
 * libcurl's multi interface driven by curl_multi_socket_action and epoll,
 * so the cost of a step does not grow with the number of requests still
 * running. Each request is set up exactly as http_get sets it up
 * (http_transfer_new). See http_multi.h for the contract. */
#include "http_multi.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define EVENTS_PER_WAIT 256

/* The state of one run, shared with curl's callbacks. */
struct multi_run {
    CURLM *multi;
    int epoll_fd;
    double timer_at;                  /* monotonic ms when curl wants a timeout call; < 0: none */
    struct http_transfer **transfers; /* by request index; NULL once heard */
    http_each_fn each;
    void *context;
    int stop; /* what the each call that stopped the run returned */
};

static double monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* curl's socket callback: watch s for what curl waits on, or stop watching. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    (void)socketp;
    struct multi_run *run = userp;
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
    struct multi_run *run = userp;
    run->timer_at = timeout_ms < 0 ? -1.0 : monotonic_ms() + (double)timeout_ms;
    return 0;
}

/* Tells each about request index, unless the run was stopped. */
static void hear(struct multi_run *run, size_t index, struct http_response *response,
                 const char *cause)
{
    if (run->stop)
        return;
    int said = run->each(run->context, index, response, cause);
    if (said)
        run->stop = said;
}

/* Hears every transfer curl has finished. */
static void hear_finished(struct multi_run *run)
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
        hear(run, index, failed ? NULL : &response, failed ? cause : NULL);
        http_response_free(&response);
    }
}

/* Sets up every request and adds it to the multi handle; a request that
 * cannot be set up is heard at once with its cause. */
static void start_all(struct multi_run *run, const struct http_request *requests, size_t count)
{
    for (size_t i = 0; i < count && !run->stop; i++) {
        char cause[512];
        struct http_transfer *transfer = http_transfer_new(&requests[i], cause, sizeof cause);
        if (!transfer) {
            hear(run, i, NULL, cause);
            continue;
        }
        CURL *easy = http_transfer_curl(transfer);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *)(uintptr_t)i);
        curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, 1L); /* every node is another server */
        if (curl_multi_add_handle(run->multi, easy) != CURLM_OK) {
            http_transfer_free(transfer);
            hear(run, i, NULL, "curl_multi_add_handle failed");
            continue;
        }
        run->transfers[i] = transfer;
    }
}

/* Drives the transfers until none is left, the deadline (monotonic ms)
 * passes, or each stops the run. */
static void drive(struct multi_run *run, double deadline)
{
    int running = 0;
    curl_multi_socket_action(run->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    hear_finished(run);
    struct epoll_event events[EVENTS_PER_WAIT];
    while (running > 0 && !run->stop) {
        double now = monotonic_ms();
        if (now >= deadline)
            return;
        double wait = deadline - now;
        if (run->timer_at >= 0 && run->timer_at - now < wait)
            wait = run->timer_at > now ? run->timer_at - now : 0;
        int ready = epoll_wait(run->epoll_fd, events, EVENTS_PER_WAIT, (int)(wait + 0.999));
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
            run->timer_at = -1.0;
            curl_multi_socket_action(run->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        hear_finished(run);
    }
}

/* Runs the requests (contract in http_multi.h). Owns every transfer it
 * starts and frees each one when it is heard or abandoned. */
int http_get_many(const struct http_request *requests, size_t count, long deadline_ms,
                  http_each_fn each, void *context, char *errbuf, size_t errlen)
{
    if (deadline_ms <= 0) {
        snprintf(errbuf, errlen, "deadline must be > 0");
        return -1;
    }
    double deadline = monotonic_ms() + (double)deadline_ms;
    struct multi_run run = {.epoll_fd = -1, .timer_at = -1.0, .each = each, .context = context};
    run.transfers = calloc(count ? count : 1, sizeof *run.transfers);
    run.multi = curl_multi_init();
    run.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (!run.transfers || !run.multi || run.epoll_fd < 0) {
        snprintf(errbuf, errlen, "%s", run.epoll_fd < 0 ? strerror(errno) : "out of memory");
        free(run.transfers);
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

    start_all(&run, requests, count);
    drive(&run, deadline);

    char late[96];
    snprintf(late, sizeof late, "no answer within the deadline of %ld ms", deadline_ms);
    for (size_t i = 0; i < count; i++) {
        if (!run.transfers[i])
            continue;
        curl_multi_remove_handle(run.multi, http_transfer_curl(run.transfers[i]));
        http_transfer_free(run.transfers[i]);
        run.transfers[i] = NULL;
        hear(&run, i, NULL, late);
    }
    curl_multi_cleanup(run.multi);
    close(run.epoll_fd);
    free(run.transfers);
    return run.stop;
}
