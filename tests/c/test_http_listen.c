/* http_split_listen: the shapes of --listen serve listens on, tested on
 * the cases the command line's check is tested on too (testdata/listen.txt,
 * its path the first argument), and http_listen's message for one it
 * refuses. */
#include "check.h"
#include "http_server.h"

#include <string.h>

/* Whether http_split_listen takes listen, with http_listen's room. */
static int splits(const char *listen)
{
    char host[HTTP_LISTEN_HOST_CAP], port[HTTP_LISTEN_PORT_CAP];
    return http_split_listen(listen, host, sizeof host, port, sizeof port) == 0;
}

/* Every case of the file at path: "ok VALUE" splits, "bad VALUE" (or
 * "bad", the empty value) does not, and http_listen says why. */
static void test_cases(const char *path)
{
    FILE *file = fopen(path, "r");
    if (!CHECK(file != NULL))
        return;
    char line[512];
    int cases = 0;
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        int ok = strncmp(line, "ok ", 3) == 0;
        const char *value = ok ? line + 3 : strncmp(line, "bad ", 4) == 0 ? line + 4 : "";
        cases++;
        if (!check_record(splits(value) == ok, __FILE__, __LINE__, line))
            continue;
        if (!ok) {
            char cause[600], want[600];
            int port = -1;
            snprintf(want, sizeof want, "listen %s: want :PORT, HOST:PORT or [IPV6]:PORT", value);
            CHECK_INT(http_listen(value, &port, cause, sizeof cause), -1);
            check_str_equal(cause, want, __FILE__, __LINE__, "http_listen's cause");
        }
    }
    fclose(file);
    CHECK(cases > 30);
}

/* A host of 255 bytes fits, one of 256 does not, bracketed or not. */
static void test_host_length(void)
{
    char listen[300];
    for (int brackets = 0; brackets <= 1; brackets++) {
        for (size_t length = 255; length <= 256; length++) {
            char *at = listen;
            if (brackets)
                *at++ = '[';
            memset(at, 'h', length);
            at += length;
            strcpy(at, brackets ? "]:80" : ":80");
            check_record(splits(listen) == (length == 255), __FILE__, __LINE__, "host length");
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_http_listen testdata/listen.txt\n");
        return 2;
    }
    test_cases(argv[1]);
    test_host_length();
    return check_finish();
}
