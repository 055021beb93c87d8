/* HTTP basic authentication against bcrypt hashes through the C library's
 * crypt_r, compared in constant time. Contract in basic_auth.h. */
#include "basic_auth.h"

#include <crypt.h>
#include <stdlib.h>
#include <string.h>

/* 1 when a and b are equal, in a time that depends on their lengths only. */
static int same_text(const char *a, const char *b)
{
    size_t len_a = strlen(a), len_b = strlen(b);
    unsigned char differ = len_a != len_b;
    for (size_t i = 0; i < len_a; i++)
        differ |= (unsigned char)a[i] ^ (unsigned char)(len_b ? b[i % len_b] : 0);
    return differ == 0;
}

/* crypt_r(password, hash) compared with hash: 1 when they are the same. */
static int hash_matches(const char *password, const char *hash)
{
    struct crypt_data *data = calloc(1, sizeof *data); /* tens of KiB: not on a thread's stack */
    if (!data)
        return 0;
    const char *got = crypt_r(password, hash, data);
    int same = got && got[0] != '*' && same_text(got, hash);
    free(data);
    return same;
}

int basic_auth_check(const struct basic_auth_user *users, size_t n, const char *user,
                     const char *password)
{
    if (n == 0 || !user || !password)
        return 0;
    const char *hash = users[0].hash; /* hashed against even when no name matches */
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        int same = same_text(user, users[i].name);
        if (same && !found)
            hash = users[i].hash;
        found |= same;
    }
    int matches = hash_matches(password, hash);
    return found && matches;
}

int basic_auth_hash_usable(const char *hash)
{
    struct crypt_data *data = calloc(1, sizeof *data);
    if (!data)
        return 0;
    const char *got = crypt_r("", hash, data);
    int usable = got && got[0] != '*' && strncmp(got, hash, 7) == 0;
    free(data);
    return usable;
}
