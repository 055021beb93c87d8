#ifndef GPULEDGER_BASIC_AUTH_H
#define GPULEDGER_BASIC_AUTH_H
#include <stddef.h>

/* HTTP basic authentication against bcrypt hashes, as Prometheus
 * exporters take them (a web configuration's basic_auth_users). */

struct basic_auth_user {
    const char *name;
    const char *hash; /* "$2y$10$…": bcrypt, checked by the C library's crypt */
};

/* 1 when user and password match one of the n users, else 0. The C
 * library's crypt_r does the bcrypt (libxcrypt, musl); the names and the
 * hashes are compared in constant time, and a password is hashed even for
 * an unknown name, so that the time taken tells neither a name nor a
 * password apart. Safe to call from several threads. */
int basic_auth_check(const struct basic_auth_user *users, size_t n, const char *user,
                     const char *password);

/* 1 when the C library's crypt can check `hash` (it hashes a password with
 * it), else 0: a hash the library does not know is refused when the
 * configuration is read, not at each request. */
int basic_auth_hash_usable(const char *hash);

#endif
