/* atomic_file_write: the whole new content or the old one, never a mix;
 * parents created; the temp file gone on success and on failure; mode 0600;
 * a directory others can write, a file of another user, a symbolic link, a
 * FIFO or a directory refused (atomic_file_check); a corrupt file kept aside
 * (atomic_file_keep_aside). */
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
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600); /* for this user alone */
    CHECK_INT(count_entries(dir), 1);                           /* no temp file left */
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

    /* the target is a directory: refused before any temp file is made */
    at_root(dir, sizeof dir, "target-dir");
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/history.json", dir);
    mkdir(path, 0755);
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), -1);
    CHECK(strstr(err, "refused: it is a directory, not a file") != NULL);
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

/* A history others could have written is refused, read or written. */
static void test_refuses_what_others_could_write(void)
{
    char dir[256], path[512];
    at_root(dir, sizeof dir, "shared");
    mkdir(dir, 0700);
    CHECK_INT(chmod(dir, 01777), 0); /* like /tmp */
    snprintf(path, sizeof path, "%s/history.json", dir);
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), -1);
    CHECK(strstr(err, "refused: the directory") &&
          strstr(err, "is writable by other users (mode 1777)"));
    CHECK(strncmp(err, path, strlen(path)) == 0);
    CHECK_INT(count_entries(dir), 0); /* nothing written */
    CHECK_INT(atomic_file_check(path, err, sizeof err), -1);
    CHECK_INT(chmod(dir, 0770), 0); /* group-writable too */
    CHECK_INT(atomic_file_check(path, err, sizeof err), -1);
    CHECK(strstr(err, "(mode 0770)") != NULL);

    CHECK_INT(chmod(dir, 0755), 0);
    CHECK_INT(atomic_file_check(path, err, sizeof err), 0); /* missing: fine */
    CHECK_INT(atomic_file_write(path, "x", 1, err, sizeof err), 0);
    CHECK_INT(atomic_file_check(path, err, sizeof err), 0);
    if (geteuid() == 0) { /* only root can give a file away */
        CHECK_INT(chown(path, 65534, 65534), 0);
        CHECK_INT(atomic_file_check(path, err, sizeof err), -1);
        CHECK(strstr(err, "refused: it belongs to uid 65534, not to this user (uid 0)") != NULL);
        CHECK_INT(atomic_file_write(path, "y", 1, err, sizeof err), -1);
        char *text = slurp(path, NULL);
        CHECK_STR(text, "x"); /* not replaced */
        free(text);
        CHECK_INT(chown(path, 0, 0), 0);
        CHECK_INT(chown(dir, 65534, 65534), 0);
        CHECK_INT(atomic_file_check(path, err, sizeof err), -1);
        CHECK(strstr(err, "belongs to uid 65534, not to this user (uid 0) or root") != NULL);
        CHECK_INT(chown(dir, 0, 0), 0);
    } else {
        printf("skip: files of another user (needs root to chown)\n");
    }

    /* directories created on the way are this user's alone, whatever the umask */
    mode_t old_umask = umask(0);
    at_root(path, sizeof path, "made/by/us/history.json");
    CHECK_INT(atomic_file_write(path, "z", 1, err, sizeof err), 0);
    umask(old_umask);
    struct stat st;
    at_root(dir, sizeof dir, "made/by/us");
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
}

/* A symbolic link as the history is refused, read or written: a save would
 * replace the link with a file and leave the history it points to behind.
 * So is a FIFO (a read would block on it). */
static void test_refuses_what_is_no_file(void)
{
    char dir[256], target[512], link[512];
    at_root(dir, sizeof dir, "linked");
    mkdir(dir, 0700);
    snprintf(target, sizeof target, "%s/kept.json", dir);
    snprintf(link, sizeof link, "%s/history.json", dir);
    CHECK_INT(atomic_file_write(target, "kept", 4, err, sizeof err), 0);
    CHECK_INT(symlink("kept.json", link), 0);
    CHECK_INT(atomic_file_check(link, err, sizeof err), -1);
    CHECK(strstr(err, "refused: it is a symbolic link, not a file") != NULL);
    CHECK_INT(atomic_file_write(link, "new", 3, err, sizeof err), -1);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode)); /* still the link */
    char *text = slurp(target, NULL);
    CHECK_STR(text, "kept");
    free(text);
    CHECK_INT(count_entries(dir), 2); /* no temp file left */

    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
    CHECK_INT(mkfifo(fifo, 0600), 0);
    CHECK_INT(atomic_file_check(fifo, err, sizeof err), -1);
    CHECK(strstr(err, "refused: it is a FIFO, not a file") != NULL);
    CHECK_INT(atomic_file_write(fifo, "new", 3, err, sizeof err), -1);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK_INT(count_entries(dir), 3);
}

/* A corrupt file is renamed aside, never over another. */
static void test_keep_aside(void)
{
    char dir[256], path[512], aside[600], second[600];
    at_root(dir, sizeof dir, "aside");
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/history.json", dir);
    CHECK_INT(atomic_file_write(path, "{not json", 9, err, sizeof err), 0);
    CHECK_INT(atomic_file_keep_aside(path, aside, sizeof aside, err, sizeof err), 0);
    CHECK(strncmp(aside, path, strlen(path)) == 0);
    CHECK(strstr(aside, ".corrupt-") != NULL && aside[strlen(aside) - 1] == 'Z');
    CHECK(access(path, F_OK) != 0);
    char *text = slurp(aside, NULL);
    CHECK_STR(text, "{not json");
    free(text);
    /* the same second again: a second name, the first kept */
    CHECK_INT(atomic_file_write(path, "{also bad", 9, err, sizeof err), 0);
    CHECK_INT(atomic_file_keep_aside(path, second, sizeof second, err, sizeof err), 0);
    if (strcmp(second, aside) != 0 && strncmp(second, aside, strlen(aside)) == 0)
        CHECK_STR(second + strlen(aside), "-2");
    text = slurp(aside, NULL);
    CHECK_STR(text, "{not json");
    free(text);
    CHECK_INT(count_entries(dir), 2);
    /* nothing there */
    CHECK_INT(atomic_file_keep_aside(path, aside, sizeof aside, err, sizeof err), -1);
    CHECK(strstr(err, "keep aside: No such file or directory") != NULL);
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
    test_refuses_what_others_could_write();
    test_refuses_what_is_no_file();
    test_keep_aside();
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
