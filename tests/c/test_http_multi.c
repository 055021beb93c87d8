/* http_get_many against loopback servers this test forks itself: answers
 * come back one per request in any arrival order, a silent, a dripping and
 * a refusing server cost no more than their own timeout and never delay the
 * fast ones, the byte cap holds, the overall deadline cuts what is left (and
 * does not count the caller's own time), and a hundred requests at once all
 * come back. */
#include "check.h"
#include "clock.h"
#include "http_multi.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum behaviour { ANSWER, SILENT, DRIP, HUGE };

static pid_t servers[8];
static int server_count;

static double now_ms(void)
{
    return (double)monotonic_ns() / 1e6;
}

/* Writes all of text to fd; gives up quietly when the client is gone. */
static void write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t put = write(fd, text, len);
        if (put <= 0)
            return;
        text += put;
        len -= (size_t)put;
    }
}

/* Reads the request head (up to the blank line) or until the client leaves. */
static void read_request(int fd)
{
    char buf[4096];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        ssize_t got = read(fd, buf + len, sizeof buf - 1 - len);
        if (got <= 0)
            return;
        len += (size_t)got;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            return;
    }
}

/* One connection, answered as the behaviour says. */
static void answer(int fd, enum behaviour behaviour)
{
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "Content-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}";
    read_request(fd);
    switch (behaviour) {
    case ANSWER:
        write_all(fd, ok, sizeof ok - 1);
        break;
    case SILENT:
        sleep(30);
        break;
    case DRIP: {
        static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n";
        write_all(fd, head, sizeof head - 1);
        for (int i = 0; i < 30; i++) {
            write_all(fd, "x", 1);
            sleep(1);
        }
        break;
    }
    case HUGE: {
        static const char head[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
        write_all(fd, head, sizeof head - 1);
        char chunk[16384];
        memset(chunk, 'y', sizeof chunk);
        for (int i = 0; i < 64; i++)
            write_all(fd, chunk, sizeof chunk);
        break;
    }
    }
    close(fd);
}

/* Forks a server on 127.0.0.1 with the behaviour; returns its port. Each
 * connection gets its own child, so a silent one does not block the next. */
static int start_server(enum behaviour behaviour)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 256) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        perror("server");
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);            /* one group with its connection children, killed at the end */
        signal(SIGCHLD, SIG_IGN); /* connection children reap themselves */
        for (;;) {
            int conn = accept(fd, NULL, NULL);
            if (conn < 0)
                continue;
            if (fork() == 0) {
                answer(conn, behaviour);
                _exit(0);
            }
            close(conn);
        }
    }
    close(fd);
    servers[server_count++] = pid;
    return ntohs(addr.sin_port);
}

/* A port nothing listens on (bound, then closed). */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    bind(fd, (struct sockaddr *)&addr, sizeof addr);
    getsockname(fd, (struct sockaddr *)&addr, &len);
    close(fd);
    return ntohs(addr.sin_port);
}

/* What each heard, per request. */
struct heard {
    int times;
    long status;
    char body[64];
    char cause[512];
    double at_ms; /* since the run started */
};

struct log {
    struct heard *heard;
    double started;
    int stop_after; /* stop the run after this many outcomes (0: never) */
    int outcomes;
};

static int record(void *context, struct http_many *run, size_t index,
                  struct http_response *response, const char *cause)
{
    (void)run;
    struct log *log = context;
    struct heard *h = &log->heard[index];
    h->times++;
    h->at_ms = now_ms() - log->started;
    if (response) {
        h->status = response->status;
        snprintf(h->body, sizeof h->body, "%s", response->body);
    } else {
        snprintf(h->cause, sizeof h->cause, "%s", cause);
    }
    log->outcomes++;
    return log->stop_after && log->outcomes >= log->stop_after ? 7 : 0;
}

static char urls[128][64];

static struct http_request request_to(int slot, int port, long timeout_ms)
{
    snprintf(urls[slot], sizeof urls[slot], "http://127.0.0.1:%d/ledger", port);
    return (struct http_request){.url = urls[slot], .timeout_ms = timeout_ms, .max_bytes = 1 << 20};
}

static void test_mixed(int answer_port, int silent_port, int drip_port, int huge_port)
{
    struct http_request requests[7] = {
        request_to(0, silent_port, 600), request_to(1, answer_port, 600),
        request_to(2, drip_port, 800),   request_to(3, huge_port, 2000),
        request_to(4, dead_port(), 600), request_to(5, answer_port, 600),
        {.url = "", .timeout_ms = 100},
    };
    requests[3].max_bytes = 64 * 1024;
    struct heard heard[7] = {0};
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    int rc = http_get_many(requests, 7, 5000, record, &log, cause, sizeof cause);
    double took = now_ms() - log.started;
    CHECK_INT(rc, 0);
    for (int i = 0; i < 7; i++)
        CHECK_INT(heard[i].times, 1);
    CHECK_INT(heard[1].status, 200);
    CHECK_STR(heard[1].body, "{\"ok\":true}");
    CHECK_INT(heard[5].status, 200);
    CHECK(heard[1].at_ms < 400 && heard[5].at_ms < 400); /* not held up by the slow ones */
    CHECK(strstr(heard[0].cause, "Timeout was reached") != NULL);
    CHECK(heard[0].at_ms >= 550 && heard[0].at_ms < 1500);
    CHECK(strstr(heard[2].cause, "Timeout was reached") != NULL);
    CHECK(heard[2].at_ms >= 750 && heard[2].at_ms < 1700);
    CHECK_STR(heard[3].cause, "answer exceeds 64 KiB");
    CHECK(strstr(heard[4].cause, "Connection refused") != NULL);
    CHECK_STR(heard[6].cause, "no URL");
    CHECK(took < 2000); /* the longest own timeout (800 ms) and a margin */
    printf("mixed run: %.0f ms (silent %.0f, drip %.0f)\n", took, heard[0].at_ms, heard[2].at_ms);
}

static void test_deadline(int silent_port, int answer_port)
{
    struct http_request requests[2] = {request_to(0, silent_port, 10000),
                                       request_to(1, answer_port, 10000)};
    struct heard heard[2] = {0};
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    CHECK_INT(http_get_many(requests, 2, 400, record, &log, cause, sizeof cause), 0);
    double took = now_ms() - log.started;
    CHECK_INT(heard[1].status, 200);
    CHECK_STR(heard[0].cause, "no answer within the deadline of 400 ms");
    CHECK_INT(heard[0].times, 1);
    CHECK(took >= 390 && took < 1200);
}

static void test_many(int answer_port)
{
    struct http_request requests[100];
    for (int i = 0; i < 100; i++)
        requests[i] = request_to(i, answer_port, 5000);
    struct heard heard[100] = {0};
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    CHECK_INT(http_get_many(requests, 100, 10000, record, &log, cause, sizeof cause), 0);
    int good = 0;
    for (int i = 0; i < 100; i++)
        good += heard[i].times == 1 && heard[i].status == 200;
    CHECK_INT(good, 100);
}

/* More silent nodes than the start window holds do not hold back a node
 * that answers: it is heard long before the silent ones time out. */
static void test_silent_crowd(int silent_port, int answer_port)
{
    enum { CROWD = 300 };
    static struct http_request requests[CROWD + 1];
    static struct heard heard[CROWD + 1];
    static char crowd_urls[CROWD + 1][64];
    for (int i = 0; i <= CROWD; i++) {
        snprintf(crowd_urls[i], sizeof crowd_urls[i], "http://127.0.0.1:%d/ledger",
                 i < CROWD ? silent_port : answer_port);
        requests[i] =
            (struct http_request){.url = crowd_urls[i], .timeout_ms = 1500, .max_bytes = 1 << 20};
    }
    memset(heard, 0, sizeof heard);
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    CHECK_INT(http_get_many(requests, CROWD + 1, 5000, record, &log, cause, sizeof cause), 0);
    CHECK_INT(heard[CROWD].status, 200);
    CHECK(heard[CROWD].at_ms < 700);
    int timed_out = 0;
    for (int i = 0; i < CROWD; i++)
        timed_out += heard[i].times == 1 && strstr(heard[i].cause, "Timeout was reached") != NULL;
    CHECK_INT(timed_out, CROWD);
    CHECK(now_ms() - log.started < 3000);
    printf("the node behind %d silent ones: heard after %.0f ms\n", CROWD, heard[CROWD].at_ms);
}

static void test_stop(int answer_port, int silent_port)
{
    struct http_request requests[3] = {request_to(0, answer_port, 5000),
                                       request_to(1, silent_port, 5000),
                                       request_to(2, silent_port, 5000)};
    struct heard heard[3] = {0};
    struct log log = {.heard = heard, .started = now_ms(), .stop_after = 1};
    char cause[256];
    CHECK_INT(http_get_many(requests, 3, 10000, record, &log, cause, sizeof cause), 7);
    CHECK_INT(heard[0].times, 1);
    CHECK_INT(heard[1].times + heard[2].times, 0); /* abandoned unheard */
    CHECK(now_ms() - log.started < 1000);
    CHECK_INT(http_get_many(requests, 3, 0, record, &log, cause, sizeof cause), -1);
    CHECK_STR(cause, "deadline must be > 0");
}

/* The next calls of a conversation, added from each: after the first
 * answer (index 0) a second request, after that one (index 2) a third; the
 * silent one (index 1) is heard at the deadline, and the request added then
 * is heard too, late. */
static struct http_request conversation[3];
static const int next_call_of[3] = {[0] = 0, [2] = 1, [1] = 2}; /* heard index → what it adds */

static int converse(void *context, struct http_many *run, size_t index,
                    struct http_response *response, const char *cause)
{
    record(context, run, index, response, cause);
    if (index < 3)
        CHECK_INT(http_many_add(run, &conversation[next_call_of[index]]), 0);
    return 0;
}

static void test_added(int answer_port, int silent_port)
{
    struct http_request requests[2] = {request_to(0, answer_port, 5000),
                                       request_to(1, silent_port, 10000)};
    conversation[0] = request_to(2, answer_port, 5000);
    conversation[1] = request_to(3, answer_port, 5000);
    conversation[2] = request_to(4, answer_port, 5000);
    struct heard heard[5] = {0};
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    CHECK_INT(http_get_many(requests, 2, 600, converse, &log, cause, sizeof cause), 0);
    double took = now_ms() - log.started;
    for (int i = 0; i < 5; i++)
        CHECK_INT(heard[i].times, 1);
    CHECK_INT(heard[2].status, 200);
    CHECK_INT(heard[3].status, 200);
    CHECK(heard[3].at_ms < 400); /* started at once, not at the next timer */
    CHECK_STR(heard[1].cause, "no answer within the deadline of 600 ms");
    CHECK_STR(heard[4].cause, "no answer within the deadline of 600 ms");
    CHECK(took >= 590 && took < 1400);
}

/* The time spent in each is the caller's, not the wait's: after an each
 * that takes longer than the whole deadline, the request it adds is still
 * asked and answered. */
static struct http_request after_slow_each;

static int slow_each(void *context, struct http_many *run, size_t index,
                     struct http_response *response, const char *cause)
{
    record(context, run, index, response, cause);
    if (index == 0) {
        struct timespec pause = {.tv_sec = 1, .tv_nsec = 100 * 1000000L};
        nanosleep(&pause, NULL);
        CHECK_INT(http_many_add(run, &after_slow_each), 0);
    }
    return 0;
}

static void test_slow_each(int answer_port)
{
    struct http_request requests[1] = {request_to(0, answer_port, 5000)};
    after_slow_each = request_to(1, answer_port, 5000);
    struct heard heard[2] = {0};
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    CHECK_INT(http_get_many(requests, 1, 1000, slow_each, &log, cause, sizeof cause), 0);
    CHECK_INT(heard[0].status, 200);
    CHECK_INT(heard[1].times, 1);
    CHECK_INT(heard[1].status, 200);
    CHECK_STR(heard[1].cause, "");
}

/* Many requests added while others run: the run's arrays grow under the
 * running transfers and the added ones queue behind the start window;
 * every one is heard once. */
enum { CROWD_ADDED = 300 };
static struct http_request crowd_added[CROWD_ADDED];

static int add_crowd(void *context, struct http_many *run, size_t index,
                     struct http_response *response, const char *cause)
{
    record(context, run, index, response, cause);
    if (index == 0)
        for (int i = 0; i < CROWD_ADDED; i++)
            CHECK_INT(http_many_add(run, &crowd_added[i]), 0);
    return 0;
}

static void test_added_crowd(int answer_port, int silent_port)
{
    static char crowd_urls[CROWD_ADDED][64];
    for (int i = 0; i < CROWD_ADDED; i++) {
        snprintf(crowd_urls[i], sizeof crowd_urls[i], "http://127.0.0.1:%d/ledger", answer_port);
        crowd_added[i] =
            (struct http_request){.url = crowd_urls[i], .timeout_ms = 5000, .max_bytes = 1 << 20};
    }
    struct http_request requests[2] = {request_to(0, answer_port, 5000),
                                       request_to(1, silent_port, 300)};
    static struct heard heard[CROWD_ADDED + 2];
    memset(heard, 0, sizeof heard);
    struct log log = {.heard = heard, .started = now_ms()};
    char cause[256];
    CHECK_INT(http_get_many(requests, 2, 10000, add_crowd, &log, cause, sizeof cause), 0);
    int good = 0;
    for (int i = 2; i < CROWD_ADDED + 2; i++)
        good += heard[i].times == 1 && heard[i].status == 200;
    CHECK_INT(good, CROWD_ADDED);
    CHECK_INT(heard[1].times, 1);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    http_client_init();
    int answer_port = start_server(ANSWER);
    int silent_port = start_server(SILENT);
    int drip_port = start_server(DRIP);
    int huge_port = start_server(HUGE);
    test_mixed(answer_port, silent_port, drip_port, huge_port);
    test_deadline(silent_port, answer_port);
    test_many(answer_port);
    test_silent_crowd(silent_port, answer_port);
    test_stop(answer_port, silent_port);
    test_added(answer_port, silent_port);
    test_added_crowd(answer_port, silent_port);
    test_slow_each(answer_port);
    for (int i = 0; i < server_count; i++) {
        kill(-servers[i], SIGKILL);
        kill(servers[i], SIGKILL);
        waitpid(servers[i], NULL, 0);
    }
    return check_finish();
}
