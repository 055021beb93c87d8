/* atomic_file_write: the whole new content or the old one, never a mix;
 * parents created; the temp file gone on success and on failure. */
#include "atomic_file.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[64];
static char err[512];

/* root + "/" + rel, in a static buffer per call site. */
static const char *at_root(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", root, rel);
    return buf;
}

/* The whole file at path in a malloc'd NUL-terminated buffer, or NULL. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *bigger = realloc(buf, cap + 1);
            if (!bigger) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = bigger;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

/* Number of entries in dir other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void test_writes_and_replaces(void)
{
    char dir[256], path[512];
    at_root(dir, sizeof dir, "plain");
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/history.json", dir);
    CHECK_INT(atomic_file_write(path, "first\n", 6, err, sizeof err), 0);
    char *text = slurp(path, NULL);
    CHECK_STR(text, "first\n");
    free(text);
    CHECK_INT(atomic_file_write(path, "second, longer\n", 15, err, sizeof err), 0);
    text = slurp(path, NULL);
    CHECK_STR(text, "second, longer\n");
    free(text);
    CHECK_INT(atomic_file_write(path, "", 0, err, sizeof err), 0);
    text = slurp(path, NULL);
    CHECK_STR(text, "");
    free(text);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
    CHECK_INT(count_entries(dir), 1); /* no temp file left */
}

static void test_creates_parents(void)
{
    char path[256];
    at_root(path, sizeof path, "a/b/c/history.json");
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), 0);
    char *text = slurp(path, NULL);
    CHECK_STR(text, "x");
    free(text);
}

static void test_relative_path(void)
{
    char cwd[PATH_MAX], dir[256];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    at_root(dir, sizeof dir, "relative");
    mkdir(dir, 0755);
    CHECK(chdir(dir) == 0);
    CHECK_INT(atomic_file_write("h.json", "rel", 3, err, sizeof err), 0);
    char *text = slurp("h.json", NULL);
    CHECK_STR(text, "rel");
    free(text);
    CHECK_INT(count_entries("."), 1);
    CHECK(chdir(cwd) == 0);
}

static void test_failures_leave_nothing(void)
{
    char file[256], path[512], dir[256];
    /* the parent is a regular file */
    at_root(file, sizeof file, "not-a-dir");
    CHECK_INT(atomic_file_write(file, "x", 1, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/history.json", file);
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), -1);
    CHECK(strstr(err, path) != NULL);
    CHECK(strstr(err, "Not a directory") != NULL);

    /* the target is a directory: the rename fails and the temp goes */
    at_root(dir, sizeof dir, "target-dir");
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/history.json", dir);
    mkdir(path, 0755);
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), -1);
    CHECK(strstr(err, "rename") != NULL);
    CHECK_INT(count_entries(dir), 1);

    /* a path ending in / names no file */
    snprintf(path, sizeof path, "%s/", dir);
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), -1);
}

/* A reader in a child process reads the file over and over while the
 * parent rewrites it with all-'a' and all-'b' contents of different sizes:
 * every read must be one whole version. */
static void test_reader_never_sees_a_mix(void)
{
    char path[256];
    at_root(path, sizeof path, "race/history.json");
    size_t big = 256 * 1024;
    char *a = malloc(big), *b = malloc(big / 2);
    memset(a, 'a', big);
    memset(b, 'b', big / 2);
    CHECK_INT(atomic_file_write(path, a, big, err, sizeof err), 0);
    pid_t child = fork();
    if (child == 0) {
        int bad = 0;
        for (int i = 0; i < 400; i++) {
            size_t len = 0;
            char *text = slurp(path, &len);
            if (!text) {
                bad++;
                continue;
            }
            char want = len == big ? 'a' : 'b';
            if (!(len == big || len == big / 2))
                bad++;
            for (size_t j = 0; j < len && !bad; j++)
                if (text[j] != want)
                    bad++;
            free(text);
        }
        _exit(bad ? 1 : 0);
    }
    for (int i = 0; i < 200; i++) {
        if (i % 2)
            atomic_file_write(path, a, big, err, sizeof err);
        else
            atomic_file_write(path, b, big / 2, err, sizeof err);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(a);
    free(b);
}

int main(void)
{
    char template[] = "/tmp/gpuledger-atomic.XXXXXX";
    if (!mkdtemp(template)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(root, sizeof root, "%s", template);
    test_writes_and_replaces();
    test_creates_parents();
    test_relative_path();
    test_failures_leave_nothing();
    test_reader_never_sees_a_mix();
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", root);
    if (system(command) != 0)
        printf("could not remove %s\n", root);
    return check_finish();
}
