/* The C tests' assertions: no framework. A failed check prints where and what
 * and the test goes on; check_finish() prints "N passed, N failed" as the last
 * line and gives main's exit status. */
#ifndef GPULEDGER_TEST_CHECK_H
#define GPULEDGER_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_passed_count, check_failed_count;

static inline int check_record(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        check_passed_count++;
    } else {
        check_failed_count++;
        printf("FAIL %s:%d: %s\n", file, line, what);
    }
    return ok;
}

static inline int check_str_equal(const char *got, const char *want, const char *file, int line,
                                  const char *what)
{
    int ok = got && want && strcmp(got, want) == 0;
    if (!ok)
        printf("  got  \"%s\"\n  want \"%s\"\n", got ? got : "(null)", want ? want : "(null)");
    return check_record(ok, file, line, what);
}

static inline int check_long_equal(long got, long want, const char *file, int line,
                                   const char *what)
{
    if (got != want)
        printf("  got  %ld\n  want %ld\n", got, want);
    return check_record(got == want, file, line, what);
}

/* Each returns whether the check held, for tests that must stop early. */
#define CHECK(cond)          check_record(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_STR(got, want) check_str_equal((got), (want), __FILE__, __LINE__, #got " == " #want)
#define CHECK_INT(got, want)                                                                       \
    check_long_equal((long)(got), (long)(want), __FILE__, __LINE__, #got " == " #want)

static inline int check_finish(void)
{
    printf("%d passed, %d failed\n", check_passed_count, check_failed_count);
    return check_failed_count > 0 ? 1 : 0;
}

#endif
