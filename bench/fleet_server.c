/* The fleet benchmark's nodes: one process, one thread, epoll, answering
 * every GET on every address it listens on with the same bytes (a path
 * under /v1/health/ with a Consul answer listing the nodes, anything else
 * with a ledger) and
 * closing the connection. Loopback only: it binds the addresses it is given.
 *
 * usage: fleet_server PORT LEDGER_FILE CONSUL_FILE ADDRESS...
 * Prints "ready" on stdout once every address listens. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_LISTENERS 16384

/* A listening socket (listening = 1) or an accepted connection. */
struct connection {
    int fd;
    int listening;
    char request[2048];
    size_t got;
    const char *answer; /* NULL until the request head is complete */
    size_t answer_len, sent;
};

static int listener_count;

/* Reads a whole file into a fresh "HTTP/1.1 200" answer. */
static char *answer_from(const char *path, const char *content_type, size_t *len)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        exit(1);
    }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char head[256];
    int head_len = snprintf(head, sizeof head,
                            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %ld\r\n"
                            "Connection: close\r\n\r\n",
                            content_type, size);
    char *answer = malloc((size_t)head_len + (size_t)size);
    memcpy(answer, head, (size_t)head_len);
    if (fread(answer + head_len, 1, (size_t)size, file) != (size_t)size) {
        perror(path);
        exit(1);
    }
    fclose(file);
    *len = (size_t)head_len + (size_t)size;
    return answer;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: fleet_server PORT LEDGER_FILE CONSUL_FILE ADDRESS...\n");
        return 2;
    }
    int port = atoi(argv[1]);
    size_t ledger_len, consul_len;
    char *ledger = answer_from(argv[2], "application/json", &ledger_len);
    char *consul = answer_from(argv[3], "application/json", &consul_len);
    int epoll_fd = epoll_create1(0);
    for (int i = 4; i < argc && listener_count < MAX_LISTENERS; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        if (inet_pton(AF_INET, argv[i], &addr.sin_addr) != 1 ||
            (ntohl(addr.sin_addr.s_addr) >> 24) != 127) {
            fprintf(stderr, "%s: want a 127.x.y.z address\n", argv[i]);
            return 2;
        }
        if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 4096) != 0) {
            perror(argv[i]);
            return 1;
        }
        struct connection *listener = calloc(1, sizeof *listener);
        listener->fd = fd;
        listener->listening = 1;
        struct epoll_event event = {.events = EPOLLIN, .data.ptr = listener};
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
        listener_count++;
    }
    printf("ready\n");
    fflush(stdout);

    struct epoll_event events[512];
    for (;;) {
        int ready = epoll_wait(epoll_fd, events, 512, -1);
        for (int i = 0; i < ready; i++) {
            struct connection *c = events[i].data.ptr;
            if (c->listening) {
                int fd;
                while ((fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    struct connection *accepted = calloc(1, sizeof *accepted);
                    accepted->fd = fd;
                    struct epoll_event event = {.events = EPOLLIN, .data.ptr = accepted};
                    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
                }
                continue;
            }
            int done = 0;
            if (!c->answer) {
                ssize_t got = read(c->fd, c->request + c->got, sizeof c->request - 1 - c->got);
                if (got <= 0) {
                    done = got == 0 || errno != EAGAIN;
                } else {
                    c->got += (size_t)got;
                    c->request[c->got] = '\0';
                    if (strstr(c->request, "\r\n\r\n")) {
                        int is_consul = strncmp(c->request, "GET /v1/health/", 15) == 0;
                        c->answer = is_consul ? consul : ledger;
                        c->answer_len = is_consul ? consul_len : ledger_len;
                    } else if (c->got == sizeof c->request - 1) {
                        done = 1;
                    }
                }
            }
            while (!done && c->answer && c->sent < c->answer_len) {
                ssize_t put = write(c->fd, c->answer + c->sent, c->answer_len - c->sent);
                if (put < 0) {
                    if (errno == EAGAIN) {
                        struct epoll_event event = {.events = EPOLLOUT, .data.ptr = c};
                        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &event);
                    } else {
                        done = 1;
                    }
                    break;
                }
                c->sent += (size_t)put;
            }
            if (done || (c->answer && c->sent == c->answer_len)) {
                close(c->fd); /* closing also takes it out of the epoll set */
                free(c);
            }
        }
    }
}
