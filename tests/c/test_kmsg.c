/* kmsg_read: a plain file read to its end, a pipe read until EAGAIN while its
 * writer stays open (the way the kernel's buffer ends), the size cap, only
 * the records after a sequence number, an unopenable path, and this
 * machine's own /dev/kmsg when it can be read (again after its last
 * record: nothing older comes back). */
#include "check.h"
#include "kmsg.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static const char RECORDS[] =
    "4,48213,7868570912,-;NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n"
    "3,48214,7868571001,-;NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.\n";

static void test_plain_file(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/kmsg", dir);
    FILE *f = fopen(path, "w");
    fputs(RECORDS, f);
    fclose(f);
    char *text, why[256];
    size_t len;
    long long last;
    if (CHECK(kmsg_read(path, 1 << 20, -1, &text, &len, &last, why, sizeof why) == 0)) {
        CHECK_STR(text, RECORDS);
        CHECK_INT(len, strlen(RECORDS));
        CHECK_INT(last, 48214);
        free(text);
    }
    CHECK(kmsg_read(path, 10, -1, &text, &len, &last, why, sizeof why) == -1);
    CHECK(strstr(why, "more than 10 bytes") != NULL);
}

/* Records numbered up to after_seq are left out with their continuation
 * lines; the highest number is said either way. */
static void test_after_seq(void)
{
    static const char WITH_CONTINUATION[] = "6,7,100,-;usb 1-1: new device\n"
                                            " SUBSYSTEM=usb\n"
                                            "4,8,200,-;NVRM: Xid (PCI:0000:3b:00): 13, x\n"
                                            " DEVICE=+pci:0000:3b:00.0\n";
    char path[128];
    snprintf(path, sizeof path, "%s/kmsg-seq", dir);
    FILE *f = fopen(path, "w");
    fputs(WITH_CONTINUATION, f);
    fclose(f);
    char *text, why[256];
    size_t len;
    long long last;
    if (CHECK(kmsg_read(path, 1 << 20, 7, &text, &len, &last, why, sizeof why) == 0)) {
        CHECK_STR(text, "4,8,200,-;NVRM: Xid (PCI:0000:3b:00): 13, x\n DEVICE=+pci:0000:3b:00.0\n");
        CHECK_INT(last, 8);
        free(text);
    }
    if (CHECK(kmsg_read(path, 1 << 20, 8, &text, &len, &last, why, sizeof why) == 0)) {
        CHECK_STR(text, "");
        CHECK_INT(len, 0);
        CHECK_INT(last, 8);
        free(text);
    }
}

static void test_pipe_ends_at_eagain(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/fifo", dir);
    if (!CHECK(mkfifo(path, 0600) == 0))
        return;
    char *text, why[256];
    size_t len;
    long long last;
    /* An empty fifo with no writer: end of file at once. */
    if (CHECK(kmsg_read(path, 1 << 20, -1, &text, &len, &last, why, sizeof why) == 0)) {
        CHECK_INT(len, 0);
        CHECK_STR(text, "");
        free(text);
    }
    /* A writer that stays open: the read must stop at EAGAIN, not wait. */
    FILE *reader_keepalive = fopen(path, "r+"); /* opens without blocking on Linux */
    if (!CHECK(reader_keepalive != NULL))
        return;
    fputs(RECORDS, reader_keepalive);
    fflush(reader_keepalive);
    if (CHECK(kmsg_read(path, 1 << 20, -1, &text, &len, &last, why, sizeof why) == 0)) {
        CHECK_STR(text, RECORDS);
        free(text);
    }
    fclose(reader_keepalive);
}

static void test_unopenable(void)
{
    char path[128], *text, why[256];
    size_t len;
    long long last;
    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK(kmsg_read(path, 1024, -1, &text, &len, &last, why, sizeof why) == -1);
    CHECK(strstr(why, "/missing: No such file or directory") != NULL);
}

/* The real buffer: it must come back without blocking, every record in the
 * dev-kmsg form. Said and skipped where this machine refuses it. */
static void test_real_kmsg(void)
{
    char *text, why[256];
    size_t len;
    long long last;
    if (kmsg_read("/dev/kmsg", 64 << 20, -1, &text, &len, &last, why, sizeof why) != 0) {
        printf("skipped the real /dev/kmsg: %s\n", why);
        return;
    }
    regex_t record;
    regcomp(&record, "^[0-9]+,[0-9]+,[0-9]+,[-c][^;]*;", REG_EXTENDED | REG_NOSUB);
    int records = 0, malformed = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == ' ')
            continue; /* a continuation line ( SUBSYSTEM=…) */
        records++;
        if (regexec(&record, line, 0, NULL, 0) != 0)
            malformed++;
    }
    regfree(&record);
    free(text);
    CHECK(records > 0);
    CHECK_INT(malformed, 0);
    CHECK(last >= 0);
    /* After its last record: none of those comes back (new ones may). */
    long long after = last;
    if (CHECK(kmsg_read("/dev/kmsg", 64 << 20, after, &text, &len, &last, why, sizeof why) == 0)) {
        CHECK(last >= after);
        CHECK(len == 0 || last > after);
        free(text);
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/gpuledger-kmsg.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_plain_file();
    test_after_seq();
    test_pipe_ends_at_eagain();
    test_unopenable();
    test_real_kmsg();
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0)
        printf("could not remove %s\n", dir);
    return check_finish();
}
