/* Directory streams read from listings the sentry published (region.h).
 *
 * opendir and fdopendir of a directory token whose listing is published
 * return a stream of this library's own (struct fm_dir) that holds a copy of
 * the whole listing, taken at that moment in one generation: the records a
 * trapped getdents64 would have returned then, d_off cookies included. No
 * getdents64 traps, and no fstat either (glibc's opendir makes one, which
 * cannot be interposed). Anything else (a directory not identified, a
 * listing not published or changed while it was copied, an fdopendir of an
 * fd not at position 0, the region off) gets glibc's own stream, which traps
 * as it always did; but an opendir (with SENTRY_FM_DIR_STREAMS) gets a
 * stream of ours that reads by getdents64 as glibc's does, without glibc's
 * fstat (the open's O_DIRECTORY already proved a directory) and without the
 * last getdents64 that returns 0: the sentry marks the record that ends a
 * listing (region.h SENTRY_FM_DIR_END). A directory whose listing is not
 * published is listed with one trap instead of three. fdopendir
 * gets one too, from where the fd is, once its first getdents64 (made at
 * once, in place of glibc's fstat) proved a directory; an O_PATH or
 * write-only fd, or any error but ENOTDIR, is left to glibc's checks.
 *
 * So every function that takes a DIR* and is called through the PLT is here
 * too, and tells the two apart: glibc's struct __dirstream begins with its
 * int fd, never negative; ours with a negative tag. A glibc stream is passed
 * to glibc's function (found with dlsym(RTLD_NEXT)). glibc's own users
 * (scandir, nftw, glob) open and read their streams inside libc and only
 * ever see glibc's.
 *
 * Semantics, as glibc's on the sentry's getdents64: readdir walks the copy
 * (skipping d_ino 0, as glibc does); telldir is the d_off of the last record
 * returned (0 at the start); seekdir(pos) resumes at the first record whose
 * d_off is past pos (the trapped getdents64's lseek); rewinddir takes the
 * listing again at the next readdir: a listing published then, or, when
 * there is none, the trapped path from position 0 (the stream then reads by
 * getdents64 into its own buffer, as glibc's). The fd's own offset is not
 * moved while the copy is read; POSIX leaves it to the implementation while
 * a stream owns the fd. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fastmeta/preload_internal.h"

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "dirent64");
_Static_assert(offsetof(struct dirent, d_name) == 19, "dirent");

#define FM_DIR_TAG ((int32_t)0x8d1f5a11) /* negative: never glibc's fd */
#define FM_DIR_TAG2 0x46444d46u
#define FM_TRAP_BUF 32768u /* glibc's own buffer size */

struct fm_dir {
  int32_t tag; /* FM_DIR_TAG, where glibc's stream has its fd */
  uint32_t tag2;
  int fd;
  int lock;
  int trapped; /* 1: records come from getdents64, as glibc's */
  int stale;   /* rewinddir: the listing is taken again first */
  char* buf;   /* the records: size bytes, read from off on */
  size_t cap;
  size_t size;
  size_t off;
  long pos; /* telldir's answer */
};

static int fm_ours(const void* d) {
  const struct fm_dir* f = (const struct fm_dir*)d;
  return d != NULL && f->tag == FM_DIR_TAG && f->tag2 == FM_DIR_TAG2;
}

static void fm_lock(struct fm_dir* d) {
  while (__atomic_exchange_n(&d->lock, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
}

static void fm_unlock(struct fm_dir* d) { __atomic_store_n(&d->lock, 0, __ATOMIC_RELEASE); }

/* glibc's function name, found once. */
static void* fm_next_sym(const char* name, void** cache) {
  void* f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, name);
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  }
  return f;
}

/* fm_real_NAME(): glibc's NAME, for glibc's streams. */
#define FM_REAL(name, ret, args)                       \
  typedef ret(*fm_##name##_fn) args;                   \
  static fm_##name##_fn fm_real_##name(void) {         \
    static void* cache;                                \
    return (fm_##name##_fn)fm_next_sym(#name, &cache); \
  }
FM_REAL(opendir, DIR*, (const char*))
FM_REAL(fdopendir, DIR*, (int))
FM_REAL(closedir, int, (DIR*))
FM_REAL(readdir, struct dirent*, (DIR*))
FM_REAL(readdir64, struct dirent64*, (DIR*))
FM_REAL(readdir_r, int, (DIR*, struct dirent*, struct dirent**))
FM_REAL(readdir64_r, int, (DIR*, struct dirent64*, struct dirent64**))
FM_REAL(rewinddir, void, (DIR*))
FM_REAL(seekdir, void, (DIR*, long))
FM_REAL(telldir, long, (DIR*))
FM_REAL(dirfd, int, (DIR*))

/* Every record lies in buf, is 8-aligned, holds its name's NUL. */
static int fm_records_ok(const char* buf, size_t n) {
  for (size_t off = 0; off < n;) {
    if (n - off < 24) return 0;
    const struct dirent64* e = (const struct dirent64*)(buf + off);
    size_t len = e->d_reclen;
    if (len < 24 || len % 8 != 0 || len > n - off || len > sizeof(struct dirent64)) return 0;
    if (memchr(e->d_name, '\0', len - offsetof(struct dirent64, d_name)) == NULL) return 0;
    off += len;
  }
  return 1;
}

/* A copy of the published listing of the directory token fd (malloc'd,
 * *size bytes), or NULL: the trap. The token's slot, the listing's slot and
 * the header after the copy must all be of one generation (region.h). */
static char* fm_listing_of(int fd, size_t* size) {
  const char* base = fm_mapped();
  if (base == NULL || !fm_listings || fd < 0) return NULL;
  char key[1 + 256];
  uint64_t gen = 0;
  size_t n = fm_token_path(base, fd, key + 1, &gen);
  if (n == 0) return NULL;
  key[0] = SENTRY_FM_LISTING_PREFIX;
  struct sentry_fm_slot s;
  if (!fm_find(base, key, n + 1, &s) || !(s.flags & SENTRY_FM_LISTING) || s.generation != gen) {
    return NULL;
  }
  uint64_t off = s.list.offset, bytes = s.list.bytes;
  if (bytes == 0 || bytes > SENTRY_FM_MAX_LISTING || bytes % 8 != 0 || off > fm_list_bytes ||
      bytes > fm_list_bytes - off) {
    return NULL;
  }
  char* buf = malloc(bytes);
  if (buf == NULL) return NULL;
  memcpy(buf, base + fm_list_off + off, bytes);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (!fm_slot_current(base, &s) || !fm_records_ok(buf, bytes)) {
    free(buf);
    return NULL;
  }
  *size = bytes;
  return buf;
}

/* A stream of ours over fd's published listing, or NULL. */
static DIR* fm_fast_dir(int fd) {
  size_t size;
  int saved = errno;
  char* buf = fm_listing_of(fd, &size);
  struct fm_dir* d = buf ? calloc(1, sizeof(*d)) : NULL;
  errno = saved;
  if (d == NULL) {
    free(buf);
    return NULL;
  }
  d->tag = FM_DIR_TAG;
  d->tag2 = FM_DIR_TAG2;
  d->fd = fd;
  d->buf = buf;
  d->cap = d->size = size;
  return (DIR*)d;
}

/* From here on records come from getdents64 at the fd's position pos. */
static void fm_to_trap(struct fm_dir* d, long pos) {
  if (!d->trapped) {
    char* b = malloc(FM_TRAP_BUF);
    if (b != NULL) {
      free(d->buf);
      d->buf = b;
      d->cap = FM_TRAP_BUF;
    } /* else the copy's buffer serves (at least "." and "..") */
    d->trapped = 1;
  }
  int saved = errno;
  syscall(SYS_lseek, d->fd, pos, SEEK_SET);
  errno = saved;
  d->size = d->off = 0;
  d->pos = pos;
}

/* A stream of ours that reads fd (a directory just opened) by getdents64. */
static DIR* fm_trap_dir(int fd) {
  int saved = errno;
  struct fm_dir* d = calloc(1, sizeof(*d));
  char* buf = d ? malloc(FM_TRAP_BUF) : NULL;
  errno = saved;
  if (buf == NULL) {
    free(d);
    return NULL;
  }
  d->tag = FM_DIR_TAG;
  d->tag2 = FM_DIR_TAG2;
  d->fd = fd;
  d->buf = buf;
  d->cap = FM_TRAP_BUF;
  d->trapped = 1;
  return (DIR*)d;
}

/* fdopendir's stream of ours for an fd whose listing is not published, or
 * NULL with *glibc set (glibc's fdopendir decides) or errno set. */
static DIR* fm_trap_fdopendir(int fd, int* glibc) {
  *glibc = 1;
  int saved = errno;
  long fl = syscall(SYS_fcntl, fd, F_GETFL);
  errno = saved;
  if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY) return NULL;
  struct fm_dir* d = (struct fm_dir*)fm_trap_dir(fd);
  if (d == NULL) return NULL;
  long n = syscall(SYS_getdents64, fd, d->buf, d->cap);
  int e = errno;
  errno = saved;
  if (n < 0) {
    free(d->buf);
    free(d);
    if (e == ENOTDIR) {
      *glibc = 0;
      errno = ENOTDIR;
    }
    return NULL;
  }
  d->size = (size_t)n;
  return (DIR*)d;
}

/* After rewinddir: the listing published now, else the trap from 0. */
static void fm_retake(struct fm_dir* d) {
  d->stale = 0;
  size_t size;
  char* buf = fm_listing_of(d->fd, &size);
  if (buf == NULL) {
    if (d->cap < FM_TRAP_BUF) d->trapped = 0; /* a copy's buffer: replaced if it can be */
    fm_to_trap(d, 0);
    return;
  }
  free(d->buf);
  d->buf = buf;
  d->cap = d->size = size;
  d->off = 0;
  d->pos = 0;
  d->trapped = 0;
}

/* The next record, or NULL with *err 0 at the end or the errno. */
static struct dirent64* fm_next(struct fm_dir* d, int* err) {
  *err = 0;
  if (d->stale) fm_retake(d);
  for (;;) {
    if (d->off >= d->size) {
      /* Past the record that ended the listing: getdents64 would return 0. */
      if (!d->trapped || d->pos == SENTRY_FM_DIR_END) return NULL;
      int saved = errno;
      long n = syscall(SYS_getdents64, d->fd, d->buf, d->cap);
      int e = errno;
      errno = saved;
      /* A directory removed meanwhile ends its listing (glibc: POSIX's EOF). */
      if (n < 0 && e != ENOENT) *err = e;
      if (n <= 0) return NULL;
      d->size = (size_t)n;
      d->off = 0;
    }
    struct dirent64* e = (struct dirent64*)(d->buf + d->off);
    if (e->d_reclen == 0 || e->d_reclen > d->size - d->off) {
      d->off = d->size; /* not the kernel's records: the end */
      continue;
    }
    d->off += e->d_reclen;
    d->pos = (long)e->d_off;
    if (e->d_ino != 0) return e;
  }
}

FM_EXPORT DIR* opendir(const char* name) {
  if (name[0] == '\0' || fm_mapped() == NULL || !fm_listings) {
    return fm_real_opendir()(name);
  }
  /* glibc's own open (opendir.c), without the fstat that follows it. */
  long fd = syscall(SYS_openat, AT_FDCWD, name, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return NULL;
  DIR* d = fm_fast_dir((int)fd);
  if (d == NULL && fm_dir_streams) d = fm_trap_dir((int)fd);
  if (d != NULL) return d;
  d = fm_real_fdopendir()((int)fd);
  if (d == NULL) {
    int saved = errno;
    syscall(SYS_close, (int)fd);
    errno = saved;
  }
  return d;
}

FM_EXPORT DIR* fdopendir(int fd) {
  fm_fd_closing(fd); /* closedir will close it (fdrec.c) */
  if (fd >= 0 && fm_mapped() != NULL && fm_listings) {
    /* A stream starts where the fd is: only a fresh one takes the copy. */
    int saved = errno;
    long at = syscall(SYS_lseek, fd, 0L, SEEK_CUR);
    errno = saved;
    DIR* d = at == 0 ? fm_fast_dir(fd) : NULL;
    if (d != NULL) return d;
    if (fm_dir_streams) {
      int glibc;
      d = fm_trap_fdopendir(fd, &glibc);
      if (d != NULL || !glibc) return d;
    }
  }
  return fm_real_fdopendir()(fd);
}

FM_EXPORT int closedir(DIR* dirp) {
  if (!fm_ours(dirp)) return fm_real_closedir()(dirp);
  struct fm_dir* d = (struct fm_dir*)dirp;
  int fd = d->fd;
  d->tag = 0;
  free(d->buf);
  free(d);
  return (int)syscall(SYS_close, fd);
}

FM_EXPORT struct dirent64* readdir64(DIR* dirp) {
  if (!fm_ours(dirp)) return fm_real_readdir64()(dirp);
  struct fm_dir* d = (struct fm_dir*)dirp;
  int err;
  fm_lock(d);
  struct dirent64* e = fm_next(d, &err);
  fm_unlock(d);
  if (err != 0) errno = err;
  return e;
}

FM_EXPORT struct dirent* readdir(DIR* dirp) {
  if (!fm_ours(dirp)) return fm_real_readdir()(dirp);
  return (struct dirent*)readdir64(dirp);
}

/* glibc's readdir_r: the record copied to entry; the errno returned. */
static int fm_readdir_r(struct fm_dir* d, struct dirent64* entry, struct dirent64** result) {
  int err;
  fm_lock(d);
  struct dirent64* e = fm_next(d, &err);
  if (e != NULL) memcpy(entry, e, e->d_reclen);
  fm_unlock(d);
  *result = e != NULL ? entry : NULL;
  return err;
}

FM_EXPORT int readdir64_r(DIR* dirp, struct dirent64* entry, struct dirent64** result) {
  if (!fm_ours(dirp)) return fm_real_readdir64_r()(dirp, entry, result);
  return fm_readdir_r((struct fm_dir*)dirp, entry, result);
}

FM_EXPORT int readdir_r(DIR* dirp, struct dirent* entry, struct dirent** result) {
  if (!fm_ours(dirp)) return fm_real_readdir_r()(dirp, entry, result);
  return fm_readdir_r((struct fm_dir*)dirp, (struct dirent64*)entry, (struct dirent64**)result);
}

FM_EXPORT void rewinddir(DIR* dirp) {
  if (!fm_ours(dirp)) {
    fm_real_rewinddir()(dirp);
    return;
  }
  struct fm_dir* d = (struct fm_dir*)dirp;
  fm_lock(d);
  if (d->trapped) {
    /* As glibc's, at once: a dup of the fd (os.listdir(fd) lists through
     * one, then rewinds) shares the position. A copy never moved it. */
    int saved = errno;
    syscall(SYS_lseek, d->fd, 0L, SEEK_SET);
    errno = saved;
  }
  d->stale = 1;
  d->off = d->size = 0;
  d->pos = 0;
  fm_unlock(d);
}

FM_EXPORT long telldir(DIR* dirp) {
  if (!fm_ours(dirp)) return fm_real_telldir()(dirp);
  struct fm_dir* d = (struct fm_dir*)dirp;
  fm_lock(d);
  long pos = d->pos;
  fm_unlock(d);
  return pos;
}

FM_EXPORT void seekdir(DIR* dirp, long pos) {
  if (!fm_ours(dirp)) {
    fm_real_seekdir()(dirp, pos);
    return;
  }
  struct fm_dir* d = (struct fm_dir*)dirp;
  fm_lock(d);
  if (d->stale) fm_retake(d);
  if (d->trapped) {
    fm_to_trap(d, pos);
  } else {
    /* The trapped getdents64's lseek: the record at position pos next. */
    size_t off = 0;
    while (off < d->size) {
      const struct dirent64* e = (const struct dirent64*)(d->buf + off);
      if (e->d_off > pos) break;
      off += e->d_reclen;
    }
    d->off = off;
    d->pos = pos;
  }
  fm_unlock(d);
}

FM_EXPORT int dirfd(DIR* dirp) {
  if (!fm_ours(dirp)) return fm_real_dirfd()(dirp);
  return ((struct fm_dir*)dirp)->fd;
}
