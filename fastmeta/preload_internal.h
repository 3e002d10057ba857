/* What the preload library's files share (preload.c: the region and its
 * lookups; dir.c: directory streams). Hidden: nothing here is exported. */
#ifndef SENTRY_FASTMETA_PRELOAD_INTERNAL_H_
#define SENTRY_FASTMETA_PRELOAD_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "fastmeta/region.h"

#define FM_EXPORT __attribute__((visibility("default")))

/* The region's mapping, mapped at the first call; NULL: every call traps. */
const char* fm_mapped(void);

/* A copy of the slot whose key is key[0..len), or 0: a miss. The copy's
 * generation was the header's when it was read. */
int fm_find(const char* base, const char* key, size_t len, struct sentry_fm_slot* out);

/* Whether the slot (a copy) is still of its kind's generation (region.h
 * SENTRY_FM_UPPER): what a copy of a listing's records checks after it. */
int fm_slot_current(const char* base, const struct sentry_fm_slot* s);

/* The absolute path of the directory token fd, copied to out (256 bytes),
 * and its length; 0 when fd is not a published token. gen, if set, gets the
 * generation the token's slot was read in. */
size_t fm_token_path(const char* base, int fd, char* out, uint64_t* gen);

/* Library-internal, in a copy's flags (with SENTRY_FM_ABSENT, which every
 * caller takes for an error): the walk met a name that is not a directory
 * where one must be (resolve.c), ENOTDIR, not ENOENT. */
#define FM_NOTDIR 0x80000000u
#define FM_ERRNO(slot) (((slot)->flags & FM_NOTDIR) ? ENOTDIR : ENOENT)

/* A path's longest accepted length (PATH_MAX, the NUL included). */
#define FM_PATH_MAX 4096

/* Whether an absolute normalised path (not found itself) is ENOENT by what
 * was published about one of its directories (preload.c); gen as there. */
int fm_absent_above(const char* base, const char* path, size_t len, uint64_t gen);

/* The calling thread's published working directory (region.h
 * SENTRY_FM_CWD), copied to out (256 bytes), and its length; 0: none. */
size_t fm_cwd_path(const char* base, char* out, uint64_t* gen);

/* The walk of an absolute path of len bytes through the region's symlinks,
 * "." and ".." (resolve.c): 1 with *out the slot that answers it (lstat's,
 * or stat's with follow; ABSENT: ENOENT) and, if resolved (256 bytes) is
 * set, its normal path there; 2 (only with resolved): the root; 0: the trap
 * answers. snap: the header's generation and upper_generation read before
 * whatever gave the path (NULL: read here). */
int fm_resolve(const char* base, const char* path, size_t len, int follow,
               struct sentry_fm_slot* out, char* resolved, const uint64_t* snap);

/* Set by fm_mapped: listing slots are published, in the area at
 * fm_list_off of fm_list_bytes (checked to lie in the mapping). */
extern int fm_listings;
extern uint64_t fm_list_off;
extern uint64_t fm_list_bytes;
/* Set by fm_mapped: opendir of a directory whose listing is not published
 * gets the library's own stream too, reading by getdents64 (dir.c). */
extern int fm_dir_streams;
/* Set by fm_mapped: absent names below what is published are answered. */
extern int fm_negatives;

/* The slot answering (dirfd, path) as fstatat resolves it (preload.c). */
int fm_lookup_at(int dirfd, const char* path, int empty_ok, int follow, struct sentry_fm_slot* out);

/* Whether buf may take n bytes: 0 yes, else the errno (-1: ask the trap). */
int fm_probe(void* buf, size_t n);

/* Set by fm_mapped: fd records are on (fdrec.c, SENTRY_FM_FD_RECORDS). */
extern int fm_fdrecs;

/* fdrec.c: 1 with *ret set when fd's record answered its fstat. */
struct stat;
int fm_fd_fstat(int fd, struct stat* buf, int* ret);
/* fdrec.c: fd's record forgotten (a call that may close fd follows). */
void fm_fd_closing(int fd);

#endif /* SENTRY_FASTMETA_PRELOAD_INTERNAL_H_ */
