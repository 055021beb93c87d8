/* http_get against the fakes in tests/fakes (Python): plain HTTP, unix
 * socket, timeouts, size caps, HTTP error statuses, HTTPS with every TLS
 * option, and the promise that a header value (a token) never reaches an
 * error message.
 *
 * Usage: test_http_client [FAKES_DIR]   (default: ../fakes next to this file)
 * Exits 77 (ctest: skipped) when python3 or openssl is missing. */
#include "check.h"
#include "clock.h"
#include "http_client.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEN         "tok-SECRET-7f3a9c41-do-not-print"
#define NODE_ID       "f7476465-4d6e-c0de-26d0-e383c49be941"
#define UNKNOWN_TOKEN "9c1e2a47-unknown-token-echoed-back"

static char fakes_dir[4096];
static char tmp_dir[] = "/tmp/gpuledger-http-test-XXXXXX";
static char certs[4200];

static pid_t children[32];
static int child_count;

/* ---- helpers ------------------------------------------------------------ */

/* Strings the tests keep (paths, URLs), freed at exit. */
static char *kept[512];
static int kept_count;

static const char *keep(char *text)
{
    if (!text || kept_count == (int)(sizeof kept / sizeof kept[0])) {
        fprintf(stderr, "out of memory or of kept strings\n");
        exit(1);
    }
    kept[kept_count++] = text;
    return text;
}

static const char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    return keep(text);
}

static const char *tmp_path(const char *name)
{
    return format("%s/%s", tmp_dir, name);
}

static const char *cert_path(const char *name)
{
    return format("%s/%s", certs, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *file = fopen(path, "w");
    if (!file) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fputs(text, file);
    fclose(file);
}

/* The whole file as a malloc'd string, or NULL. */
static char *read_text(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len - 1, file)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *grown = realloc(text, cap * 2);
            if (!grown) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            cap *= 2;
        }
    }
    fclose(file);
    if (text)
        text[len] = '\0';
    return text;
}

static double now_ms(void)
{
    return (double)monotonic_ns() / 1e6;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Runs argv to its end with stdout/stderr going to log (or inherited when
 * NULL); returns its exit status, 127 when it could not start. */
static int run(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void stop_child(pid_t pid)
{
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void stop_all_children(void)
{
    for (int i = 0; i < child_count; i++)
        if (children[i] > 0)
            stop_child(children[i]);
    child_count = 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    stop_all_children();
    if (tmp_dir[strlen(tmp_dir) - 1] != 'X')
        nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < kept_count; i++)
        free(kept[i]);
    kept_count = 0;
}

/* Starts a fake (argv[0] is the script's name in fakes_dir, run with python3)
 * and waits until ready_file exists. Returns the number in ready_file (a
 * port), or exits the test when the fake does not come up. */
static int start_fake(const char *script, const char *ready_file, const char *const args[])
{
    char script_path[4200];
    snprintf(script_path, sizeof script_path, "%s/%s", fakes_dir, script);
    const char *argv[40] = {"python3", script_path, "--max-seconds", "120"};
    int argc = 4;
    for (int i = 0; args[i] && argc < 38; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    unlink(ready_file);

    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        /* the fakes' own complaints (expected TLS failures) go to a file */
        int fd = open(tmp_path("fakes.stderr"), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        execvp("python3", (char *const *)argv);
        _exit(127);
    }
    children[child_count++] = pid;
    for (int i = 0; i < 500; i++) {
        char *text = read_text(ready_file);
        if (text) {
            int port = atoi(text);
            free(text);
            return port;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            children[child_count - 1] = 0;
            break;
        }
        sleep_ms(20);
    }
    fprintf(stderr, "fake %s did not start; its stderr:\n", script);
    char *log = read_text(tmp_path("fakes.stderr"));
    fprintf(stderr, "%s\n", log ? log : "(none)");
    free(log);
    exit(1);
}

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static int unused_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        perror("unused_port");
        exit(1);
    }
    close(fd);
    return ntohs(addr.sin_port);
}

static const char *token_headers[] = {"X-Nomad-Token: " TOKEN, "Accept: application/json", NULL};

/* A request with the token header and a 5 s timeout, 8 MiB cap. */
static struct http_request base_request(const char *url)
{
    struct http_request request = {
        .url = url, .headers = token_headers, .timeout_ms = 5000, .max_bytes = 8u * 1024 * 1024};
    return request;
}

/* Every error message is checked for the token. */
static int get(const struct http_request *request, struct http_response *response, char *errbuf,
               size_t errlen)
{
    int rc = http_get(request, response, errbuf, errlen);
    if (rc != 0) {
        CHECK(strstr(errbuf, TOKEN) == NULL);
        CHECK(strstr(errbuf, "SECRET") == NULL);
        CHECK(strchr(errbuf, '\n') == NULL);
        CHECK(response->body == NULL && response->content_type == NULL);
    }
    return rc;
}

static int contains_ci(const char *text, const char *word)
{
    return text && strcasestr(text, word) != NULL;
}

static int is_tls_message(const char *text)
{
    return contains_ci(text, "tls") || contains_ci(text, "certificate");
}

/* Expects a -1 whose message contains want (case-insensitive); prints it. */
static void expect_failure(const char *what, const struct http_request *request, const char *want)
{
    struct http_response response;
    char errbuf[512];
    int rc = get(request, &response, errbuf, sizeof errbuf);
    printf("  %-38s -> %s\n", what, rc == 0 ? "(succeeded)" : errbuf);
    if (!CHECK(rc == -1)) {
        http_response_free(&response);
        return;
    }
    if (!check_record(contains_ci(errbuf, want), __FILE__, __LINE__, what))
        printf("  wanted \"%s\" in \"%s\"\n", want, errbuf);
}

static void expect_tls_failure(const char *what, const struct http_request *request)
{
    struct http_response response;
    char errbuf[512];
    int rc = get(request, &response, errbuf, sizeof errbuf);
    printf("  %-38s -> %s\n", what, rc == 0 ? "(succeeded)" : errbuf);
    if (!CHECK(rc == -1)) {
        http_response_free(&response);
        return;
    }
    if (!check_record(is_tls_message(errbuf), __FILE__, __LINE__, what))
        printf("  wanted TLS or certificate in \"%s\"\n", errbuf);
}

static void expect_status(const char *what, const struct http_request *request, long status,
                          const char *body_part)
{
    struct http_response response;
    char errbuf[512];
    int rc = get(request, &response, errbuf, sizeof errbuf);
    if (!check_record(rc == 0, __FILE__, __LINE__, what)) {
        printf("  %s: %s\n", what, errbuf);
        return;
    }
    CHECK_INT(response.status, status);
    if (body_part &&
        !check_record(strstr(response.body, body_part) != NULL, __FILE__, __LINE__, what))
        printf("  wanted \"%s\" in the body\n", body_part);
    http_response_free(&response);
}

/* Number of lines in a request log (0 when it does not exist). */
static int log_lines(const char *path)
{
    char *text = read_text(path);
    int lines = 0;
    for (const char *p = text; p && *p; p++)
        lines += *p == '\n';
    free(text);
    return lines;
}

/* ---- the fakes' configuration ------------------------------------------- */

static const char nomad_config[] =
    "{\"node_id\": \"" NODE_ID "\", \"expected_token\": \"" TOKEN "\",\n"
    " \"tokens\": {\"" TOKEN "\": {\"agent:read\": true, \"node:read\": true,"
    " \"read_job\": [\"default\"]}, \"weak-token\": {}},\n"
    " \"allocations\": [{\"ID\": \"a1\", \"Namespace\": \"default\", \"ModifyIndex\": 7,"
    " \"AllocatedResources\": null}],\n"
    " \"faults\": {\"service\": {\"status\": 500, \"body\": \"No cluster leader\"}}}\n";

static const char echo_config[] =
    "{\"node_id\": \"" NODE_ID "\", \"tokens\": {},\n"
    " \"unknown_token_body\": \"ACL token {token} not found; again: {token}.\"}\n";

static const char hang_config[] =
    "{\"node_id\": \"" NODE_ID "\", \"acl\": false,\n"
    " \"faults\": {\"agent_self\": {\"hang_seconds\": 60},\n"
    "            \"allocations\": {\"hang_mid_body\": true, \"hang_seconds\": 60},\n"
    "            \"service\": {\"status\": 307, \"body\": \"\","
    " \"headers\": {\"Location\": \"/v1/agent/self\"}}}}\n";

static const char engine_fixture[] =
    "{\"containers\": [{\"Id\": "
    "\"aa86eacfb3b3ed4cd362c1e88fc89a53908ad05fb3a4103bca3f9b28292d14bf\",\n"
    " \"Name\": \"/worker-2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33\", \"State\": {\"Status\": "
    "\"running\", \"Pid\": 48213},\n"
    " \"Config\": {\"Image\": \"busybox\", \"Env\": [\"NVIDIA_VISIBLE_DEVICES=GPU-1\"],"
    " \"Labels\": {}}}]}\n";

/* ---- the tests ---------------------------------------------------------- */

static void test_plain_http(void)
{
    printf("plain HTTP\n");
    const char *log = tmp_path("nomad.log");
    int port = start_fake("fake_nomad.py", tmp_path("nomad.port"),
                          (const char *[]){tmp_path("nomad.json"), "--port-file",
                                           tmp_path("nomad.port"), "--log", log, NULL});

    struct http_request request = base_request(format("http://127.0.0.1:%d/v1/agent/self", port));
    struct http_response response;
    char errbuf[512];
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.status, 200);
        CHECK_STR(response.content_type, "application/json");
        CHECK(strstr(response.body, "\"node_id\":\"" NODE_ID "\"") != NULL);
        CHECK_INT(response.body_len, strlen(response.body));
        http_response_free(&response);
    } else {
        printf("  %s\n", errbuf);
    }
    /* the token went in X-Nomad-Token, and nowhere else */
    char *log_text = read_text(log);
    CHECK(log_text && strstr(log_text, "\"x_nomad_token_is_expected\": true"));
    CHECK(log_text && strstr(log_text, "\"expected_token_in_target\": false"));
    CHECK(log_text && strstr(log_text, "\"authorization_present\": false"));
    CHECK(log_text && !strstr(log_text, TOKEN));
    free(log_text);

    request.url = format("http://localhost:%d/v1/node/%s/allocations", port, NODE_ID);
    expect_status("allocations", &request, 200, "\"AllocatedResources\":null");
    request.url = format("http://127.0.0.1:%d/v1/node/unknown/allocations", port);
    expect_status("unknown node", &request, 200, "[]");

    /* HTTP errors are answers, not failures */
    static const char *weak_headers[] = {"X-Nomad-Token: weak-token", NULL};
    request.headers = weak_headers;
    request.url = format("http://127.0.0.1:%d/v1/agent/self", port);
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.status, 403);
        CHECK_STR(response.body, "Permission denied");
        CHECK_STR(response.content_type, "text/plain; charset=utf-8");
        http_response_free(&response);
    }
    request.headers = token_headers;
    request.url = format("http://127.0.0.1:%d/v1/service/gpuledger?namespace=default", port);
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.status, 500);
        CHECK_STR(response.body, "No cluster leader");
        http_response_free(&response);
    }
    request.url = format("http://127.0.0.1:%d/v1/nothing", port);
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.status, 404);
        CHECK(response.body != NULL && response.body[0] == '\0');
        CHECK_INT(response.body_len, 0);
        http_response_free(&response);
    }

    /* a cap smaller than the answer, in KiB and in bytes */
    request.url = format("http://127.0.0.1:%d/v1/agent/self", port);
    request.max_bytes = 100;
    expect_failure("100 byte cap on agent/self", &request, "answer exceeds 100 bytes");
    request.max_bytes = 8u * 1024 * 1024;

    /* a half client pair is refused before any request */
    int before = log_lines(log);
    request.client_cert = cert_path("client.pem");
    expect_failure("half client pair", &request, "client_cert and client_key go together");
    request.client_cert = NULL;
    request.client_key = cert_path("client.key");
    expect_failure("half client pair (key)", &request, "client_cert and client_key go together");
    request.client_key = NULL;
    CHECK_INT(log_lines(log), before);

    /* a header value with a line break is refused, naming only the header */
    static const char *broken_headers[] = {"X-Nomad-Token: " TOKEN "\r\nX-Evil: 1", NULL};
    request.headers = broken_headers;
    expect_failure("header with a line break", &request, "X-Nomad-Token");
    request.headers = token_headers;
    CHECK_INT(log_lines(log), before);

    request.url = format("ftp://127.0.0.1:%d/x", port);
    expect_failure("ftp URL", &request, "ftp");
    request.url = "not a url";
    expect_failure("not a URL", &request, "");
    request.url = format("http://127.0.0.1:%d/v1/agent/self", port);
    request.timeout_ms = 0;
    expect_failure("zero timeout", &request, "timeout");
}

/* A server that echoes the token in its answer: the secret never comes
 * back, in the body or anywhere else. */
static void test_echoed_token(void)
{
    printf("a token echoed in the answer\n");
    int port = start_fake(
        "fake_nomad.py", tmp_path("echo.port"),
        (const char *[]){tmp_path("echo.json"), "--port-file", tmp_path("echo.port"), NULL});
    static const char *unknown_headers[] = {"X-Nomad-Token: " UNKNOWN_TOKEN, NULL};
    struct http_request request = base_request(format("http://127.0.0.1:%d/v1/agent/self", port));
    request.headers = unknown_headers;
    request.secret = UNKNOWN_TOKEN;
    struct http_response response;
    char errbuf[512];
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.status, 403);
        CHECK_STR(response.body, "ACL token <redacted> not found; again: <redacted>.");
        CHECK_INT(response.body_len, strlen(response.body));
        http_response_free(&response);
    }
    request.secret = NULL; /* what the server says, as a check of the check */
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK(strstr(response.body, UNKNOWN_TOKEN) != NULL);
        http_response_free(&response);
    }
}

static void test_refused_and_timeouts(void)
{
    printf("refused, timeouts, redirects\n");
    struct http_request request =
        base_request(format("http://127.0.0.1:%d/v1/agent/self", unused_port()));
    expect_failure("refused port", &request, "onnect");
    expect_failure("refused port", &request, "Connection refused");

    /* a header value is masked even where libcurl's own text would hold it */
    static const char *echo_headers[] = {"X-Nomad-Token: 127.0.0.1", NULL};
    request.headers = echo_headers;
    struct http_response response;
    char errbuf[512];
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == -1)) {
        printf("  %-38s -> %s\n", "header value in curl's text", errbuf);
        CHECK(strstr(errbuf, "127.0.0.1") == NULL);
        CHECK(strstr(errbuf, "<redacted>") != NULL);
    }
    request.headers = token_headers;

    int port = start_fake(
        "fake_nomad.py", tmp_path("hang.port"),
        (const char *[]){tmp_path("hang.json"), "--port-file", tmp_path("hang.port"), NULL});
    request.timeout_ms = 1000;
    request.url = format("http://127.0.0.1:%d/v1/agent/self", port);
    double start = now_ms();
    expect_failure("server that never answers", &request, "timeout");
    double took = now_ms() - start;
    CHECK(took >= 900 && took < 2000);

    request.url = format("http://127.0.0.1:%d/v1/node/%s/allocations", port, NODE_ID);
    start = now_ms();
    expect_failure("server that stops mid-answer", &request, "timeout");
    took = now_ms() - start;
    CHECK(took >= 900 && took < 2000);

    /* a redirect is an answer, never followed */
    request.timeout_ms = 5000;
    request.url = format("http://127.0.0.1:%d/v1/service/x", port);
    expect_status("redirect not followed", &request, 307, NULL);
}

static void test_unix_socket(void)
{
    printf("unix socket (fake engine)\n");
    const char *socket_path = tmp_path("docker.sock");
    start_fake("fake_engine.py", tmp_path("engine.ready"),
               (const char *[]){"--socket", socket_path, "--mode", "ok", "--fixture",
                                tmp_path("engine.json"), "--ready-file", tmp_path("engine.ready"),
                                NULL});
    struct http_request request = base_request("http://localhost/containers/json");
    request.unix_socket = socket_path;
    struct http_response response;
    char errbuf[512];
    if (CHECK(get(&request, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.status, 200);
        CHECK(strstr(response.body, "\"Id\":\"aa86eacfb3b3") != NULL);
        CHECK_STR(response.content_type, "application/json");
        http_response_free(&response);
    } else {
        printf("  %s\n", errbuf);
    }
    request.url = "http://localhost/v1.43/containers/abc/json";
    expect_status("inspect unknown container", &request, 404, "No such container: abc");

    request.unix_socket = tmp_path("missing.sock");
    request.url = "http://localhost/containers/json";
    expect_failure("missing socket", &request, "missing.sock");
    expect_failure("missing socket", &request, "onnect");

    /* modes a real dockerd cannot be made to give */
    struct {
        const char *mode, *extra, *what, *want;
        size_t max_bytes;
    } cases[] = {
        {"huge", NULL, "20 MiB answer, 8 MiB cap", "answer exceeds 8 MiB", 8u << 20},
        {"huge", "--chunked", "20 MiB chunked answer, 8 MiB cap", "answer exceeds 8 MiB", 8u << 20},
        {"huge", "--chunked", "20 MiB chunked answer, 20 KiB cap", "answer exceeds 20 KiB",
         20u << 10},
        {"hang-mid-answer", NULL, "engine stops mid-answer", "timeout", 8u << 20},
        {"refuse", NULL, "engine closes at once", "", 8u << 20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char sock_name[64], ready_name[64];
        snprintf(sock_name, sizeof sock_name, "engine%zu.sock", i);
        snprintf(ready_name, sizeof ready_name, "engine%zu.ready", i);
        const char *sock = tmp_path(sock_name);
        start_fake("fake_engine.py", tmp_path(ready_name),
                   (const char *[]){"--socket", sock, "--mode", cases[i].mode, "--ready-file",
                                    tmp_path(ready_name), cases[i].extra, NULL});
        struct http_request bad = base_request("http://localhost/containers/json");
        bad.unix_socket = sock;
        bad.timeout_ms = 1000;
        bad.max_bytes = cases[i].max_bytes;
        double start = now_ms();
        expect_failure(cases[i].what, &bad, cases[i].want);
        CHECK(now_ms() - start < 2000);
    }

    /* exactly max_bytes is fine, one more is not */
    const char *sock = tmp_path("exact.sock");
    start_fake("fake_engine.py", tmp_path("exact.ready"),
               (const char *[]){"--socket", sock, "--mode", "huge", "--huge-bytes", "4096",
                                "--ready-file", tmp_path("exact.ready"), NULL});
    struct http_request exact = base_request("http://localhost/containers/json");
    exact.unix_socket = sock;
    exact.max_bytes = 4096;
    if (CHECK(get(&exact, &response, errbuf, sizeof errbuf) == 0)) {
        CHECK_INT(response.body_len, 4096);
        http_response_free(&response);
    } else {
        printf("  %s\n", errbuf);
    }
    exact.max_bytes = 4095;
    expect_failure("4096 byte answer, 4095 byte cap", &exact, "answer exceeds 4095 bytes");
}

/* Starts fake_nomad over HTTPS with cert/key (and client_ca) and returns its port. */
static int start_tls_nomad(const char *name, const char *cert, const char *key,
                           const char *client_ca, const char *host)
{
    char port_name[64];
    snprintf(port_name, sizeof port_name, "%s.port", name);
    const char *port_file = tmp_path(port_name);
    const char *args[16] = {tmp_path("nomad.json"), "--port-file", port_file,     "--tls-cert",
                            cert_path(cert),        "--tls-key",   cert_path(key)};
    int argc = 7;
    if (client_ca) {
        args[argc++] = "--client-ca";
        args[argc++] = cert_path(client_ca);
    }
    if (host) {
        args[argc++] = "--host";
        args[argc++] = host;
    }
    args[argc] = NULL;
    return start_fake("fake_nomad.py", port_file, args);
}

static void test_tls(void)
{
    printf("HTTPS\n");
    int port = start_tls_nomad("tls", "server.pem", "server.key", NULL, NULL);
    struct http_request request = base_request(format("https://127.0.0.1:%d/v1/agent/self", port));
    request.ca_file = cert_path("ca.pem");
    expect_status("right CA file", &request, 200, NODE_ID);
    request.url = format("https://localhost:%d/v1/agent/self", port);
    expect_status("right CA file, localhost", &request, 200, NODE_ID);

    /* ca_path: a directory with the CA as ca.pem and an unrelated notes.txt */
    const char *ca_dir = tmp_path("ca-dir");
    mkdir(ca_dir, 0755);
    char *ca_text = read_text(cert_path("ca.pem"));
    char file_path[4400];
    snprintf(file_path, sizeof file_path, "%s/ca.pem", ca_dir);
    write_file(file_path, ca_text ? ca_text : "");
    free(ca_text);
    snprintf(file_path, sizeof file_path, "%s/notes.txt", ca_dir);
    write_file(file_path, "not a certificate\n");
    snprintf(file_path, sizeof file_path, "%s/subdir.pem", ca_dir);
    mkdir(file_path, 0755); /* a directory with a CA-like name is skipped */
    request.ca_file = NULL;
    request.ca_path = ca_dir;
    expect_status("ca_path", &request, 200, NODE_ID);
    /* the wrong CA as file plus the right one in the directory: both are trusted */
    request.ca_file = cert_path("wrong-ca.pem");
    expect_status("ca_file (wrong) + ca_path (right)", &request, 200, NODE_ID);
    request.ca_path = NULL;

    expect_tls_failure("wrong CA", &request);
    request.ca_file = NULL;
    expect_tls_failure("system roots only", &request);

    /* CA options that cannot be used: reported before any request */
    request.ca_path = tmp_path("no-such-dir");
    expect_failure("ca_path missing", &request, "no-such-dir: No such file or directory");
    const char *empty_dir = tmp_path("empty-ca-dir");
    mkdir(empty_dir, 0755);
    snprintf(file_path, sizeof file_path, "%s/notes.txt", empty_dir);
    write_file(file_path, "nothing\n");
    request.ca_path = empty_dir;
    expect_failure("ca_path without certs", &request, "no .pem or .crt file");
    snprintf(file_path, sizeof file_path, "%s/junk.pem", empty_dir);
    write_file(file_path, "nothing\n");
    expect_failure("ca_path with a junk .pem", &request, "no PEM certificate in it");
    request.ca_path = NULL;
    request.ca_file = tmp_path("no-such-ca.pem");
    expect_failure("ca_file missing", &request, "no-such-ca.pem: No such file or directory");
    request.ca_file = file_path;
    expect_failure("ca_file without a cert", &request, "no PEM certificate in it");
    request.ca_file = cert_path("ca.pem");
    request.client_cert = tmp_path("no-such-client.pem");
    request.client_key = cert_path("client.key");
    expect_failure("client_cert missing", &request, "client_cert ");
    request.client_cert = request.client_key = NULL;

    /* expired server certificate */
    port = start_tls_nomad("expired", "expired.pem", "expired.key", NULL, NULL);
    request.url = format("https://127.0.0.1:%d/v1/agent/self", port);
    expect_tls_failure("expired certificate", &request);
    expect_failure("expired certificate", &request, "expired");

    /* a server certificate for server.global.nomad only */
    port = start_tls_nomad("nomad-name", "nomad.pem", "nomad.key", NULL, NULL);
    request.url = format("https://127.0.0.1:%d/v1/agent/self", port);
    expect_tls_failure("name mismatch", &request);
    request.tls_server_name = "server.global.nomad";
    expect_status("tls_server_name", &request, 200, NODE_ID);
    request.url = format("https://localhost:%d/v1/agent/self", port);
    expect_status("tls_server_name, localhost", &request, 200, NODE_ID);
    request.tls_server_name = "client.global.nomad";
    expect_tls_failure("wrong tls_server_name", &request);
    request.tls_server_name = "bad name/";
    expect_failure("tls_server_name not a name", &request, "not a host name");
    request.tls_server_name = NULL;

    /* the same over IPv6, where the connect-to host needs brackets */
    port = start_tls_nomad("nomad-v6", "nomad.pem", "nomad.key", NULL, "::1");
    request.url = format("https://[::1]:%d/v1/agent/self", port);
    expect_tls_failure("name mismatch, IPv6", &request);
    request.tls_server_name = "server.global.nomad";
    expect_status("tls_server_name, IPv6", &request, 200, NODE_ID);
    request.tls_server_name = NULL;

    /* a server that wants a client certificate */
    port = start_tls_nomad("mtls", "server.pem", "server.key", "ca.pem", NULL);
    request.url = format("https://127.0.0.1:%d/v1/agent/self", port);
    expect_tls_failure("client cert required, none given", &request);
    request.client_cert = cert_path("client.pem");
    request.client_key = cert_path("client.key");
    expect_status("client cert given", &request, 200, NODE_ID);
    request.client_cert = cert_path("wrong-server.pem");
    request.client_key = cert_path("wrong-server.key");
    expect_tls_failure("client cert from another CA", &request);
    request.client_cert = cert_path("client.pem");
    request.client_key = cert_path("server.key");
    expect_tls_failure("client cert with the wrong key", &request);
    request.client_cert = request.client_key = NULL;

    /* plain HTTP to a TLS port, and TLS to a plain port */
    request.url = format("http://127.0.0.1:%d/v1/agent/self", port);
    request.timeout_ms = 2000;
    expect_failure("http to a TLS port", &request, "");
}

static void test_tls_to_plain(void)
{
    int port = start_fake(
        "fake_nomad.py", tmp_path("plain2.port"),
        (const char *[]){tmp_path("nomad.json"), "--port-file", tmp_path("plain2.port"), NULL});
    struct http_request request = base_request(format("https://127.0.0.1:%d/v1/agent/self", port));
    request.ca_file = cert_path("ca.pem");
    expect_tls_failure("https to a plain port", &request);
}

/* True when prog runs (exit 0) with args. */
static int have(char *const argv[])
{
    return run(argv, "/dev/null") == 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1) {
        snprintf(fakes_dir, sizeof fakes_dir, "%s", argv[1]);
    } else {
        /* this file is tests/c/test_http_client.c; the fakes are in tests/fakes */
        snprintf(fakes_dir, sizeof fakes_dir, "%s", __FILE__);
        char *slash = strrchr(fakes_dir, '/');
        if (slash)
            snprintf(slash, sizeof fakes_dir - (size_t)(slash - fakes_dir), "/../fakes");
        else
            snprintf(fakes_dir, sizeof fakes_dir, "../fakes");
    }

    if (!have((char *[]){"python3", "-c", "import ssl, http.server", NULL})) {
        printf("SKIP: python3 (with ssl) not found; the fakes need it\n");
        return 77;
    }
    if (!have((char *[]){"openssl", "version", NULL})) {
        printf("SKIP: openssl not found; make_certs.sh needs it\n");
        return 77;
    }
    /* the fakes are on loopback: no proxy from the environment may intervene */
    const char *proxies[] = {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
                             "ALL_PROXY",  "no_proxy",    "NO_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
        unsetenv(proxies[i]);

    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    atexit(cleanup);
    snprintf(certs, sizeof certs, "%s/certs", tmp_dir);
    char script[4200];
    snprintf(script, sizeof script, "%s/make_certs.sh", fakes_dir);
    if (run((char *[]){"sh", script, certs, NULL}, tmp_path("make_certs.log")) != 0) {
        char *log = read_text(tmp_path("make_certs.log"));
        printf("make_certs.sh failed:\n%s\n", log ? log : "");
        free(log);
        return 1;
    }
    write_file(tmp_path("nomad.json"), nomad_config);
    write_file(tmp_path("hang.json"), hang_config);
    write_file(tmp_path("echo.json"), echo_config);
    write_file(tmp_path("engine.json"), engine_fixture);

    http_client_init();
    test_plain_http();
    test_echoed_token();
    test_refused_and_timeouts();
    test_unix_socket();
    test_tls();
    test_tls_to_plain();
    stop_all_children();
    return check_finish();
}
