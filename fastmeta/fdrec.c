/* fd records: the fstat of a system file this process opened, answered
 * without a trap (region.h, preload.c).
 *
 * The library interposes open, open64, openat, openat64 and glibc's
 * fortify entries (__open_2...). When a read-only open (no O_CREAT, O_TRUNC,
 * O_PATH, O_DIRECTORY, O_TMPFILE) succeeded and its path resolves in the
 * region (as stat resolves it) to a published LOWER regular file, the fd's
 * number gets a record: that stat and the description's flags (F_GETFL).
 * The slot must be of the lower generation read BEFORE the open: no
 * invalidation came between, so the open and the slot saw the same lower
 * layer (a lower path names one file for good until an invalidation; a
 * copy-up, a rename or a whiteout over it is one). An UPPER slot is
 * recorded only for a regular file (SENTRY_FM_UPPER_FILES: published while
 * no writer of it exists, region.h), of the upper generation read before
 * the open, and answers while that generation stands: every change to the
 * upper layer, and every writable open of an upper file, bumps it first.
 * (Nothing of /proc, /dev or a -v mount is ever published.)
 *
 * fstat, fstat64 and fstatat(fd, "", AT_EMPTY_PATH) answer from a valid
 * record when a native fcntl(fd, F_GETFL) still returns the recorded
 * flags (a cheap guard against a number reused behind the library's back:
 * a pipe, a socket, a directory differ), and the record's generation
 * (lower, or upper for an upper file's) is still the header's (what the
 * trapped fstat answers for an fd whose path was copied up since is the
 * sentry's to say). Anything else traps, as before.
 *
 * A record is forgotten before any libc entry that closes or replaces its
 * number is made (close, close_range, closefrom, dup2, dup3, fdopen, whose
 * FILE may close it, fdopendir, syscall() with SYS_close, SYS_dup2,
 * SYS_dup3 or SYS_close_range), so a concurrent fstat never answers for a
 * closed number, and again after (a record made meanwhile by an open that
 * got the number the close then took is dropped). Any open through these
 * entries also forgets its number when it records nothing. exec drops the
 * memory; fork copies the records with the fd table.
 *
 * What remains: a program that closes a recorded number behind libc (an
 * inline syscall, libc's own syscall() reached by dlsym on libc itself)
 * and gets the same number again from something these entries do not see
 * (an inline open, fopen, socket) with the very same F_GETFL flags: its
 * fstat then answers the old file's stat (an answer of the region that any
 * process could read anyway: nothing new reaches the guest). A vfork child
 * that opens or closes through libc writes the parent's records (POSIX
 * allows it nothing but _exit and exec). Numbers 0, 1 and 2 are never
 * recorded: stdio's stdin, stdout and stderr wrap them without an fdopen,
 * and fclose or freopen of them closes the number inside libc. The entries
 * here call glibc's open and close (cancellation points, as before); the
 * others make the raw syscall.
 *
 * Records live in a table of FM_FD_MAX entries mapped at the first record
 * (not BSS: every process would carry it). Each entry is a seqlock whose
 * writers never wait: a recorder takes it (seq odd) by compare-and-swap or
 * gives up; a forget adds 2 to seq whatever it finds, which makes a
 * recorder in the middle drop its record when it tries to release. A global
 * epoch, bumped by every forget and record, tells a recorder whether any
 * other one came since before its open: then it drops its own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fastmeta/preload_internal.h"

#define FM_FD_MAX 1024

struct fm_fdrec {
  uint32_t seq;         /* even: stable; odd: a recorder writes */
  uint32_t valid;       /* 1: st and flags answer for the number */
  int32_t flags;        /* F_GETFL when recorded */
  uint32_t upper;       /* 1: generation is an upper one (an upper file's record) */
  uint64_t generation;  /* the slot's generation, of its kind */
  uint64_t fresh_epoch; /* a FRESH record's: fm_fresh_epoch before its open; else 0 */
  struct stat st;
};

static struct fm_fdrec* fm_recs; /* FM_FD_MAX entries, or NULL: none yet */
static uint64_t fm_epoch;
/* Bumped (from 1) before every ftruncate and fallocate through the
 * library, and at every fork: a FRESH record (region.h) answers only while
 * it is the epoch its open read. Those are the calls that change an empty
 * file's times and leave it empty; a write grows it, which fm_fd_fstat
 * asks the kernel. */
static uint64_t fm_fresh_epoch = 1;

/* The raw syscall, with glibc's errno convention: what every entry here
 * makes (preload.c's own calls to syscall() reach it too). */
static long fm_raw(long n, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}

static struct fm_fdrec* fm_entry(int fd) {
  if (fd < 0 || fd >= FM_FD_MAX) return NULL;
  struct fm_fdrec* t = __atomic_load_n(&fm_recs, __ATOMIC_ACQUIRE);
  return t ? &t[fd] : NULL;
}

/* Forgets fd's record, whatever state it is in (never waits). */
static void fm_fd_forget(int fd) {
  struct fm_fdrec* r = fm_entry(fd);
  if (r != NULL) {
    __atomic_fetch_add(&r->seq, 2, __ATOMIC_SEQ_CST);
    __atomic_store_n(&r->valid, 0, __ATOMIC_SEQ_CST);
  }
  __atomic_fetch_add(&fm_epoch, 1, __ATOMIC_SEQ_CST);
}

static void fm_fd_forget_range(unsigned lo, unsigned hi) {
  if (lo >= FM_FD_MAX) {
    __atomic_fetch_add(&fm_epoch, 1, __ATOMIC_SEQ_CST);
    return;
  }
  if (hi >= FM_FD_MAX) hi = FM_FD_MAX - 1;
  for (unsigned fd = lo; fd <= hi; fd++) fm_fd_forget((int)fd);
}

static struct fm_fdrec* fm_table(void) {
  struct fm_fdrec* t = __atomic_load_n(&fm_recs, __ATOMIC_ACQUIRE);
  if (t != NULL) return t;
  int saved = errno;
  void* m = (void*)fm_raw(SYS_mmap, 0, FM_FD_MAX * sizeof(struct fm_fdrec), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved;
  if (m == MAP_FAILED) return NULL;
  struct fm_fdrec* expected = NULL;
  if (!__atomic_compare_exchange_n(&fm_recs, &expected, (struct fm_fdrec*)m, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    fm_raw(SYS_munmap, (long)m, FM_FD_MAX * sizeof(struct fm_fdrec), 0, 0, 0, 0);
    return expected;
  }
  return (struct fm_fdrec*)m;
}

/* Records st (flags fl, generation gen, an upper one if upper) for fd,
 * unless any forget or record came since epoch0 (read before the open) or
 * another recorder holds the entry: then the entry is left forgotten. */
static void fm_fd_record(int fd, const struct stat* st, int fl, uint64_t gen, int upper,
                         uint64_t fresh_epoch, uint64_t epoch0) {
  struct fm_fdrec* t = fm_table();
  if (t == NULL) return;
  struct fm_fdrec* r = &t[fd];
  uint32_t e = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
  if ((e & 1) ||
      !__atomic_compare_exchange_n(&r->seq, &e, e + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    fm_fd_forget(fd);
    return;
  }
  int keep = __atomic_fetch_add(&fm_epoch, 1, __ATOMIC_SEQ_CST) == epoch0;
  if (keep) {
    memcpy(&r->st, st, sizeof(*st));
    r->flags = fl;
    r->upper = (uint32_t)upper;
    r->generation = gen;
    r->fresh_epoch = fresh_epoch;
  }
  __atomic_store_n(&r->valid, (uint32_t)keep, __ATOMIC_SEQ_CST);
  uint32_t odd = e + 1;
  if (!__atomic_compare_exchange_n(&r->seq, &odd, e + 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* A forget came meanwhile (seq moved by 2): it wins. */
    __atomic_store_n(&r->valid, 0, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_SEQ_CST);
  }
}

/* The lower generation now, or 0 without a region (never recorded). */
static uint64_t fm_lower_gen(const char* base) {
  if (base == NULL) return 0;
  return __atomic_load_n(&((const struct sentry_fm_header*)base)->generation, __ATOMIC_ACQUIRE);
}

/* The upper generation now, or 0 without a region or upper files. */
static uint64_t fm_upper_gen(const char* base) {
  if (base == NULL) return 0;
  const struct sentry_fm_header* h = (const struct sentry_fm_header*)base;
  if (!(__atomic_load_n(&h->features, __ATOMIC_ACQUIRE) & SENTRY_FM_UPPER_FILES)) return 0;
  return __atomic_load_n(&h->upper_generation, __ATOMIC_ACQUIRE);
}

static int fm_recordable(int flags) {
  return (flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC | O_PATH | O_DIRECTORY));
}

/* What the open that returned fd (of dirfd, path, flags) leaves: a record,
 * or its number forgotten. base, gen and ugen: the region and its lower
 * and upper generations before the open (ugen 0: no upper files); epoch0
 * the epoch then. */
static void fm_fd_opened(int fd, int dirfd, const char* path, int flags, const char* base,
                         uint64_t gen, uint64_t ugen, uint64_t epoch0) {
  if (fd < 0 || fd >= FM_FD_MAX) return;
  struct sentry_fm_slot s;
  int saved = errno;
  /* Never 0, 1 or 2: stdio's streams wrap them without an fdopen, and an
   * fclose or freopen of stdin closes its number inside libc. */
  if (fd > 2 && base != NULL && gen != 0 && fm_recordable(flags) &&
      fm_lookup_at(dirfd, path, 0, !(flags & O_NOFOLLOW), &s) &&
      !(s.flags & (SENTRY_FM_ABSENT | SENTRY_FM_TOKEN | SENTRY_FM_LISTING | SENTRY_FM_CWD)) &&
      S_ISREG(s.st.st_mode) &&
      ((s.flags & SENTRY_FM_UPPER) ? ugen != 0 && s.generation == ugen : s.generation == gen)) {
    long fl = fm_raw(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
    if (fl >= 0) {
      int upper = (s.flags & SENTRY_FM_UPPER) != 0;
      fm_fd_record(fd, &s.st, (int)fl, upper ? ugen : gen, upper, 0, epoch0);
      errno = saved;
      return;
    }
  }
  errno = saved;
  fm_fd_forget(fd);
}

/* A write-only create, which the sentry may answer with a FRESH slot
 * (sys_open.cc: the stash's own description, no status flag). */
static int fm_fresh_open(int flags) {
  return (flags & O_ACCMODE) == O_WRONLY && (flags & O_CREAT) &&
         !(flags & (O_APPEND | O_PATH | O_DIRECTORY | O_TMPFILE));
}

/* The calling thread's FRESH key (region.h: '+', its id, the absolute
 * normalised path) of (dirfd, path): an absolute path as it is, a relative
 * one beneath the published working directory or directory token; its
 * length, or 0. key: SENTRY_FM_FRESH_KEY_LEN + 256 bytes. */
static size_t fm_fresh_key(const char* base, int dirfd, const char* path, char* key) {
  const size_t at = SENTRY_FM_FRESH_KEY_LEN;
  size_t plen = strnlen(path, 256);
  if (plen == 0 || plen >= 256) return 0;
  size_t n = 0;
  if (path[0] != '/') {
    char dir[256];
    uint64_t g = 0;
    n = dirfd == AT_FDCWD ? fm_cwd_path(base, dir, &g) : fm_token_path(base, dirfd, dir, NULL);
    if (n == 0 || n + 1 + plen >= 256) return 0;
    memcpy(key + at, dir, n);
    key[at + n++] = '/';
  }
  memcpy(key + at + n, path, plen);
  n += plen;
  if (!sentry_fm_normal(key + at, n)) return 0;
  sentry_fm_fresh_key((uint32_t)fm_raw(SYS_gettid, 0, 0, 0, 0, 0, 0), key);
  return at + n;
}

/* What a write-only create that returned fd leaves: a FRESH record when
 * the sentry published one for (dirfd, path) in the upper generation that
 * stands after the open (the open bumped it before its donation: such a
 * slot is this open's), else its number forgotten. fepoch and epoch0: the
 * epochs before the open. */
static void fm_fd_created(int fd, int dirfd, const char* path, const char* base, uint64_t fepoch,
                          uint64_t epoch0) {
  if (fd < 0 || fd >= FM_FD_MAX) return;
  int saved = errno;
  uint64_t ugen = fm_upper_gen(base);
  char key[SENTRY_FM_FRESH_KEY_LEN + 256];
  size_t n = 0;
  struct sentry_fm_slot s;
  if (fd > 2 && base != NULL && ugen != 0 && (n = fm_fresh_key(base, dirfd, path, key)) != 0 &&
      fm_find(base, key, n, &s) &&
      (s.flags & (SENTRY_FM_FRESH | SENTRY_FM_UPPER)) == (SENTRY_FM_FRESH | SENTRY_FM_UPPER) &&
      s.generation == ugen && S_ISREG(s.st.st_mode) && s.st.st_size == 0) {
    long fl = fm_raw(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
    if (fl >= 0) {
      fm_fd_record(fd, &s.st, (int)fl, ugen, 1, fepoch, epoch0);
      errno = saved;
      return;
    }
  }
  errno = saved;
  fm_fd_forget(fd);
}

/* glibc's openat and close, found at load (dlsym is no call for a signal
 * handler's first close): they stay cancellation points for pthread_cancel,
 * as a program linked against glibc expects. The raw call only if absent. */
static int (*fm_real_openat)(int, const char*, int, ...);
static int (*fm_real_close)(int);

__attribute__((constructor)) static void fm_fdrec_init(void) {
  fm_real_openat = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat");
  fm_real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
}

/* The open itself: base, gen and the epoch are read before it. */
static int fm_open_at(int dirfd, const char* path, int flags, mode_t mode) {
  int fresh = fm_fresh_open(flags);
  const char* base = fm_recordable(flags) || fresh ? fm_mapped() : NULL;
  if (!fm_fdrecs) base = NULL;
  uint64_t gen = fm_lower_gen(base);
  uint64_t ugen = fm_upper_gen(base);
  uint64_t fepoch = __atomic_load_n(&fm_fresh_epoch, __ATOMIC_SEQ_CST);
  uint64_t epoch0 = __atomic_load_n(&fm_epoch, __ATOMIC_SEQ_CST);
  int fd = fm_real_openat != NULL ? fm_real_openat(dirfd, path, flags, mode)
                                  : (int)fm_raw(SYS_openat, dirfd, (long)path, flags, mode, 0, 0);
  if (fd >= 0 && fresh) {
    fm_fd_created(fd, dirfd, path, base, fepoch, epoch0);
  } else if (fd >= 0) {
    fm_fd_opened(fd, dirfd, path, flags, base, gen, ugen, epoch0);
  }
  return fd;
}

static int fm_needs_mode(int flags) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

FM_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = fm_needs_mode(flags) ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  return fm_open_at(AT_FDCWD, path, flags, mode);
}

FM_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = fm_needs_mode(flags) ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  return fm_open_at(dirfd, path, flags, mode);
}

/* glibc's fortify entries: an open that needs a mode but has none is a
 * bug glibc stops the program for. */
static int fm_open_2(int dirfd, const char* path, int flags) {
  if (fm_needs_mode(flags)) {
    static const char msg[] = "*** invalid open call: O_CREAT or O_TMPFILE without mode ***\n";
    fm_raw(SYS_write, 2, (long)msg, sizeof(msg) - 1, 0, 0, 0);
    abort();
  }
  return fm_open_at(dirfd, path, flags, 0);
}

FM_EXPORT int __open_2(const char* path, int flags) { return fm_open_2(AT_FDCWD, path, flags); }
FM_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return fm_open_2(dirfd, path, flags);
}

/* The *64 names: the same calls on x86_64 (O_LARGEFILE is the kernel's
 * default there). */
FM_EXPORT int open64(const char* path, int flags, ...) __attribute__((alias("open")));
FM_EXPORT int openat64(int dirfd, const char* path, int flags, ...)
    __attribute__((alias("openat")));
FM_EXPORT int __open64_2(const char* path, int flags) __attribute__((alias("__open_2")));
FM_EXPORT int __openat64_2(int dirfd, const char* path, int flags)
    __attribute__((alias("__openat_2")));

int fm_fd_fstat(int fd, struct stat* buf, int* ret) {
  struct fm_fdrec* r = fm_entry(fd);
  if (r == NULL) return 0;
  uint32_t s1 = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
  if (s1 & 1) return 0;
  uint32_t valid = __atomic_load_n(&r->valid, __ATOMIC_ACQUIRE);
  int32_t fl = r->flags;
  uint32_t upper = r->upper;
  uint64_t gen = r->generation;
  uint64_t fresh = r->fresh_epoch;
  struct stat st;
  memcpy(&st, &r->st, sizeof(st));
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(&r->seq, __ATOMIC_RELAXED) != s1 || valid != 1) return 0;
  const char* base = fm_mapped();
  if (base == NULL || !fm_fdrecs || (upper ? fm_upper_gen(base) : fm_lower_gen(base)) != gen) {
    return 0;
  }
  int saved = errno;
  long now = fm_raw(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
  errno = saved;
  if (now != fl) return 0;
  if (fresh != 0) {
    /* Still empty (its size is FIONREAD's bytes past the position plus the
     * position), with no truncation nor fork since its open. */
    if (__atomic_load_n(&fm_fresh_epoch, __ATOMIC_SEQ_CST) != fresh) return 0;
    int past = 0;
    long pos = fm_raw(SYS_lseek, fd, 0, SEEK_CUR, 0, 0, 0);
    long q = pos < 0 ? -1 : fm_raw(SYS_ioctl, fd, FIONREAD, (long)&past, 0, 0, 0);
    errno = saved;
    if (q != 0 || pos + past != 0 || fm_upper_gen(base) != gen) return 0;
  }
  int p = fm_probe(buf, sizeof(*buf));
  if (p < 0) return 0;
  if (p > 0) {
    errno = p;
    *ret = -1;
    return 1;
  }
  memcpy(buf, &st, sizeof(st));
  *ret = 0;
  return 1;
}

/* The entries that close or replace a number: forgotten before the call
 * (no fstat answers for a closed number) and after (no record made
 * meanwhile for it survives). */
FM_EXPORT int close(int fd) {
  fm_fd_forget(fd);
  int r = fm_real_close != NULL ? fm_real_close(fd) : (int)fm_raw(SYS_close, fd, 0, 0, 0, 0, 0);
  int saved = errno;
  fm_fd_forget(fd);
  errno = saved;
  return r;
}

FM_EXPORT int dup2(int old, int new) {
  fm_fd_forget(new);
  int r = (int)fm_raw(SYS_dup2, old, new, 0, 0, 0, 0);
  int saved = errno;
  fm_fd_forget(new);
  errno = saved;
  return r;
}

FM_EXPORT int dup3(int old, int new, int flags) {
  fm_fd_forget(new);
  int r = (int)fm_raw(SYS_dup3, old, new, flags, 0, 0, 0);
  int saved = errno;
  fm_fd_forget(new);
  errno = saved;
  return r;
}

FM_EXPORT int close_range(unsigned lo, unsigned hi, int flags) {
  fm_fd_forget_range(lo, hi);
  int r = (int)fm_raw(SYS_close_range, lo, hi, flags, 0, 0, 0);
  int saved = errno;
  fm_fd_forget_range(lo, hi);
  errno = saved;
  return r;
}

/* glibc's own, found past this library. */
static void* fm_rec_next(const char* name, void** cache) {
  void* f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, name);
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  }
  return f;
}

FM_EXPORT void closefrom(int lo) {
  static void* cache;
  void (*real)(int) = (void (*)(int))fm_rec_next("closefrom", &cache);
  if (lo < 0) lo = 0;
  fm_fd_forget_range((unsigned)lo, ~0u);
  if (real != NULL) {
    real(lo);
  } else {
    fm_raw(SYS_close_range, lo, ~0u, 0, 0, 0, 0);
  }
  fm_fd_forget_range((unsigned)lo, ~0u);
}

FM_EXPORT FILE* fdopen(int fd, const char* mode) {
  static void* cache;
  FILE* (*real)(int, const char*) = (FILE * (*)(int, const char*)) fm_rec_next("fdopen", &cache);
  fm_fd_forget(fd);
  if (real == NULL) {
    errno = ENOSYS;
    return NULL;
  }
  return real(fd, mode);
}

/* The calls that change an empty file's times and leave it empty: a
 * FRESH record stops answering before any of them is made. */
static void fm_fresh_end(void) { __atomic_fetch_add(&fm_fresh_epoch, 1, __ATOMIC_SEQ_CST); }

FM_EXPORT int ftruncate(int fd, off_t length) {
  fm_fresh_end();
  return (int)fm_raw(SYS_ftruncate, fd, length, 0, 0, 0, 0);
}

FM_EXPORT int ftruncate64(int fd, off_t length) __attribute__((alias("ftruncate")));

FM_EXPORT int fallocate(int fd, int mode, off_t offset, off_t len) {
  fm_fresh_end();
  return (int)fm_raw(SYS_fallocate, fd, mode, offset, len, 0, 0);
}

FM_EXPORT int fallocate64(int fd, int mode, off_t offset, off_t len)
    __attribute__((alias("fallocate")));

FM_EXPORT int posix_fallocate(int fd, off_t offset, off_t len) {
  static void* cache;
  int (*real)(int, off_t, off_t) =
      (int (*)(int, off_t, off_t))fm_rec_next("posix_fallocate", &cache);
  fm_fresh_end();
  return real != NULL ? real(fd, offset, len) : ENOSYS;
}

FM_EXPORT int posix_fallocate64(int fd, off_t offset, off_t len)
    __attribute__((alias("posix_fallocate")));

/* A child writing through a description it shares may also truncate it. */
__attribute__((constructor)) static void fm_fresh_init(void) {
  pthread_atfork(fm_fresh_end, NULL, NULL);
}

/* The numbers syscall() may close or replace. */
FM_EXPORT long syscall(long n, ...) {
  va_list ap;
  va_start(ap, n);
  long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
  long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
  va_end(ap);
  int lo = -1;
  unsigned hi = 0;
  if (n == SYS_close) {
    lo = (int)a;
    hi = (unsigned)a;
  } else if (n == SYS_dup2 || n == SYS_dup3) {
    lo = (int)b;
    hi = (unsigned)b;
  } else if (n == SYS_close_range) {
    lo = (int)(unsigned)a;
    hi = (unsigned)b;
  }
  if (lo >= 0) fm_fd_forget_range((unsigned)lo, hi);
  if (n == SYS_ftruncate || n == SYS_fallocate) fm_fresh_end();
  long r = fm_raw(n, a, b, c, d, e, f);
  if (lo >= 0) {
    int saved = errno;
    fm_fd_forget_range((unsigned)lo, hi);
    errno = saved;
  }
  return r;
}

void fm_fd_closing(int fd) { fm_fd_forget(fd); }
