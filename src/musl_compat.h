#ifndef GPULEDGER_MUSL_COMPAT_H
#define GPULEDGER_MUSL_COMPAT_H
/* Linux calls the sources make that Debian 12's musl (1.2.3, which links the
 * static release binary) has no wrapper for, made from syscall(2) as glibc
 * makes them. Included ahead of every source of the static build only
 * (GPULEDGER_STATIC in CMakeLists.txt). */
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* renameat2(2): rename with flags (RENAME_NOREPLACE). Returns 0, or -1 and
 * errno. */
static inline int renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path,
                            unsigned int flags)
{
    return (int)syscall(SYS_renameat2, old_dir, old_path, new_dir, new_path, flags);
}

/* close_range(2): closes the descriptors first..last. Returns 0, or -1 and
 * errno (ENOSYS before Linux 5.9). */
static inline int close_range(unsigned int first, unsigned int last, int flags)
{
    return (int)syscall(SYS_close_range, first, last, flags);
}

#endif
