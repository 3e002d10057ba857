/* libfastmeta.so: the guest's side of the fast-metadata region (region.h).
 *
 * Loaded into every dynamically linked guest process through the sandbox's
 * /etc/ld.so.preload. It interposes stat, lstat, fstatat (and their *64
 * names), access, faccessat, readlink and readlinkat: for an absolute,
 * normalised path whose answer the sentry has published it answers from the
 * region, and for one that crosses symlinks, "." or ".." when every part of
 * it is published (resolve.c, which also answers realpath); for anything
 * else it makes the very syscall glibc would make, which traps as before
 * (directory streams: dir.c; the fstat of a system file the process opened:
 * fdrec.c). The region is mapped at a
 * process's first such call (inherited by fork; mapped again after exec).
 * These calls hold no lock and allocate nothing (async-signal-safe as the
 * calls they replace), trust no offset not checked, and a region they cannot
 * read only costs them the trap.
 *
 * A caller's buffer is probed with getrandom(2) (a native call that writes
 * exactly that many bytes or fails with EFAULT) before the answer is copied
 * in: a bad buffer is EFAULT, as the kernel says, never a crash. A bad path
 * pointer other than NULL is read as the caller gave it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fastmeta/preload_internal.h"
#include "fastmeta/region.h"

#define FM_MAX_REGION (64u << 20)

static const char* fm_base;   /* the mapping, or NULL: every call traps */
static size_t fm_size;        /* its length */
static uint64_t fm_mask;      /* nslots - 1 */
static uint64_t fm_slots_off; /* checked against the mapping's size */
static uint64_t fm_index_off;
static int fm_tokens;       /* token slots published: lock_pid below is set */
static int32_t fm_lock_pid; /* l_pid of the sentry's token locks */
int fm_listings;            /* listing slots published: fm_list_* are set */
int fm_negatives;           /* absent names below what is published (region.h) */
static int fm_cwds;         /* CWD slots are published (region.h) */
int fm_dir_streams;         /* every opendir gets the library's own stream */
int fm_fdrecs;              /* fd records (fdrec.c) */
uint64_t fm_list_off;       /* the listings' area, checked against the mapping */
uint64_t fm_list_bytes;

static int fm_state; /* 0: not mapped yet, 1: being mapped, 2: done (mapped or not) */

/* Maps the region on a process's first absolute-path call, not at load: a
 * process that never asks (sort, cat) pays no trap for it. A call made while
 * another (a signal handler's, a thread's) maps it just traps. */
static void fm_init(void) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&fm_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    return;
  }
  int saved = errno;
  long fd = syscall(SYS_openat, AT_FDCWD, SENTRY_FM_REGION_PATH, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    long size = syscall(SYS_lseek, (int)fd, 0L, SEEK_END);
    if (size >= (long)SENTRY_FM_INDEX_OFFSET && size <= (long)FM_MAX_REGION) {
      void* m = (void*)syscall(SYS_mmap, NULL, (size_t)size, PROT_READ, MAP_SHARED, (int)fd, 0L);
      if (m != MAP_FAILED) {
        const struct sentry_fm_header* h = (const struct sentry_fm_header*)m;
        uint64_t n = h->nslots;
        int fits = h->magic == SENTRY_FM_MAGIC && h->version == SENTRY_FM_VERSION &&
                   h->slot_size == SENTRY_FM_SLOT_SIZE && n != 0 && (n & (n - 1)) == 0 &&
                   n <= FM_MAX_REGION / SENTRY_FM_SLOT_SIZE && h->slots_offset >= sizeof(*h) &&
                   h->slots_offset % 64 == 0 && h->slots_offset <= (uint64_t)size &&
                   n * SENTRY_FM_SLOT_SIZE <= (uint64_t)size - h->slots_offset &&
                   h->index_offset >= sizeof(*h) && h->index_offset % 4 == 0 &&
                   h->index_offset <= (uint64_t)size && n * 4 <= (uint64_t)size - h->index_offset;
        if (fits) {
          fm_mask = n - 1;
          fm_slots_off = h->slots_offset;
          fm_index_off = h->index_offset;
          fm_tokens = (h->features & SENTRY_FM_HAS_TOKENS) != 0;
          fm_lock_pid = h->lock_pid;
          fm_listings = (h->features & SENTRY_FM_HAS_LISTINGS) != 0 &&
                        h->list_offset >= sizeof(*h) && h->list_offset % 8 == 0 &&
                        h->list_offset <= (uint64_t)size &&
                        h->list_bytes <= (uint64_t)size - h->list_offset;
          fm_negatives = (h->features & SENTRY_FM_HAS_NEGATIVES) != 0;
          fm_cwds = (h->features & SENTRY_FM_HAS_CWD) != 0;
          fm_dir_streams = fm_listings && (h->features & SENTRY_FM_DIR_STREAMS) != 0;
          fm_fdrecs = (h->features & SENTRY_FM_FD_RECORDS) != 0;
          fm_list_off = h->list_offset;
          fm_list_bytes = h->list_bytes;
          fm_size = (size_t)size;
          __atomic_store_n(&fm_base, (const char*)m, __ATOMIC_RELEASE);
        } else {
          syscall(SYS_munmap, m, (size_t)size);
        }
      }
    }
    syscall(SYS_close, (int)fd);
  }
  errno = saved;
  __atomic_store_n(&fm_state, 2, __ATOMIC_RELEASE);
}

const char* fm_mapped(void) {
  if (__atomic_load_n(&fm_state, __ATOMIC_ACQUIRE) == 0) fm_init();
  return __atomic_load_n(&fm_base, __ATOMIC_ACQUIRE);
}

/* The header's generation of the slot's kind (region.h SENTRY_FM_UPPER). */
static uint64_t fm_gen_of(const struct sentry_fm_header* h, uint32_t flags) {
  return (flags & SENTRY_FM_UPPER) ? __atomic_load_n(&h->upper_generation, __ATOMIC_ACQUIRE)
                                   : __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
}

int fm_slot_current(const char* base, const struct sentry_fm_slot* s) {
  return fm_gen_of((const struct sentry_fm_header*)base, s->flags) == s->generation;
}

int fm_find(const char* base, const char* key, size_t len, struct sentry_fm_slot* out) {
  const struct sentry_fm_header* h = (const struct sentry_fm_header*)base;
  uint64_t gen = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
  uint64_t upper_gen = __atomic_load_n(&h->upper_generation, __ATOMIC_ACQUIRE);
  const uint32_t* index = (const uint32_t*)(base + fm_index_off);
  uint64_t hash = sentry_fm_hash(key, len, 0);
  for (uint32_t i = 0; i < SENTRY_FM_PROBES; i++) {
    uint64_t k = __atomic_load_n(&index[(hash + i) & fm_mask], __ATOMIC_ACQUIRE);
    if (k == 0 || k > fm_mask + 1) return 0;
    const struct sentry_fm_slot* s =
        (const struct sentry_fm_slot*)(base + fm_slots_off + (k - 1) * SENTRY_FM_SLOT_SIZE);
    uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1) return 0;
    memcpy(out, s, sizeof(*out));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq) return 0;
    if (__atomic_load_n(&h->generation, __ATOMIC_RELAXED) != gen) return 0;
    if (__atomic_load_n(&h->upper_generation, __ATOMIC_RELAXED) != upper_gen) return 0;
    /* An empty bucket, or an answer of a generation gone. */
    if (out->generation != ((out->flags & SENTRY_FM_UPPER) ? upper_gen : gen)) return 0;
    if ((size_t)out->path_len + out->target_len > sizeof(out->data)) return 0;
    if (out->path_len == len && memcmp(out->data, key, len) == 0) return 1;
  }
  return 0;
}

/* The largest listing searched for an absent name: a scan of it costs far
 * less than the trap it saves (about 1,000 entries). */
#define FM_NEGATIVE_SCAN_MAX (32u << 10)

/* Whether the COMPLETE listing of the directory path[0..dir_len) holds the
 * name name[0..name_len): 1 yes, 0 no, -1 no such listing, one of another
 * generation than gen (unless 0), or one that changed while read: the
 * trap answers. The records are read in place: a
 * live slot's records stay until the generation moves, which is checked
 * after; every length is checked before it is used. */
static int fm_listing_holds(const char* base, const char* path, size_t dir_len, const char* name,
                            size_t name_len, uint64_t gen) {
  char key[1 + 256];
  if (dir_len >= 256) return -1;
  key[0] = SENTRY_FM_LISTING_PREFIX;
  memcpy(key + 1, path, dir_len);
  struct sentry_fm_slot s;
  if (!fm_find(base, key, dir_len + 1, &s) || (gen != 0 && s.generation != gen)) return -1;
  if ((s.flags & (SENTRY_FM_LISTING | SENTRY_FM_COMPLETE)) !=
      (SENTRY_FM_LISTING | SENTRY_FM_COMPLETE)) {
    return -1;
  }
  uint64_t off = s.list.offset, bytes = s.list.bytes;
  if (bytes == 0 || bytes > FM_NEGATIVE_SCAN_MAX || bytes % 8 != 0 || off > fm_list_bytes ||
      bytes > fm_list_bytes - off) {
    return -1;
  }
  const char* rec = base + fm_list_off + off;
  int found = 0;
  for (uint64_t at = 0; at < bytes;) {
    uint16_t reclen; /* struct linux_dirent64's d_reclen, at byte 16; d_name at 19 */
    if (bytes - at < 24) return -1;
    memcpy(&reclen, rec + at + 16, sizeof(reclen));
    if (reclen < 24 || reclen % 8 != 0 || reclen > bytes - at) return -1;
    if (name_len + 1 <= (size_t)reclen - 19 && rec[at + 19 + name_len] == '\0' &&
        memcmp(rec + at + 19, name, name_len) == 0) {
      found = 1;
      break;
    }
    at += reclen;
  }
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (!fm_slot_current(base, &s)) return -1;
  return found;
}

/* Whether an absolute normalised path (not found itself) is ENOENT by what
 * was published about one of its directories: the deepest one the region
 * knows decides. A COMPLETE listing (region.h) without the next name, or
 * an absent answer for the directory itself, is ENOENT for every caller; a
 * name present, or a directory's own answer, leaves it to the trap. With
 * gen (not 0), only answers of that generation count: a path read off a
 * directory token in it may lead elsewhere in a later one. */
int fm_absent_above(const char* base, const char* path, size_t len, uint64_t gen) {
  size_t end = len;
  for (;;) {
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    if (start <= 1) return 0; /* a name in "/": the root is never listed */
    if (fm_listings) {
      int held = fm_listing_holds(base, path, start - 1, path + start, end - start, gen);
      if (held >= 0) return !held;
    }
    end = start - 1;
    struct sentry_fm_slot s;
    if (fm_find(base, path, end, &s) && !(s.flags & SENTRY_FM_TOKEN)) {
      return (s.flags & SENTRY_FM_ABSENT) != 0 && (gen == 0 || s.generation == gen);
    }
  }
}

/* No negative answer (fm_lookup_path's neg_gen): the path is an fd's own. */
#define FM_NO_NEGATIVE UINT64_MAX

/* A copy of the slot answering lstat (or stat, with follow) of an absolute
 * path of len bytes, or 0: a miss. A normalised one is looked up whole; an
 * absent one may be answered by its directories (fm_absent_above,
 * generation neg_gen). Anything else (a symlink crossed or followed, "."
 * or "..") is resolved through the region's symlinks (resolve.c), whose
 * generations are those of snap (if set: read before the path was). */
static int fm_lookup_path(const char* base, const char* path, size_t len, int follow,
                          struct sentry_fm_slot* out, uint64_t neg_gen, const uint64_t* snap) {
  if (sentry_fm_normal(path, len)) {
    if (fm_find(base, path, len, out)) {
      if (out->flags & SENTRY_FM_TOKEN) return 0;
      if (!follow || (out->flags & SENTRY_FM_FOLLOW)) return 1;
      /* a symlink that stat follows: resolved below */
    } else if (fm_negatives && neg_gen != FM_NO_NEGATIVE &&
               fm_absent_above(base, path, len, neg_gen)) {
      out->flags = SENTRY_FM_ABSENT | SENTRY_FM_FOLLOW;
      out->path_len = 0;
      out->target_len = 0;
      return 1;
    }
  }
  if (neg_gen == FM_NO_NEGATIVE) return 0; /* an fd's own path: its token's */
  return fm_resolve(base, path, len, follow, out, NULL, snap) == 1;
}

static int fm_lookup(const char* path, int follow, struct sentry_fm_slot* out) {
  if (path == NULL || path[0] != '/') return 0;
  const char* base = fm_mapped();
  if (base == NULL) return 0;
  size_t len = strnlen(path, FM_PATH_MAX);
  if (len >= FM_PATH_MAX) return 0;
  return fm_lookup_path(base, path, len, follow, out, 0, NULL);
}

/* The token's id is the sentry's lock on it (region.h): F_GETLK reports
 * the first lock of another owner that a write lock of the whole file would
 * meet. */
size_t fm_token_path(const char* base, int fd, char* out, uint64_t* gen) {
  if (!fm_tokens || fd < 0) return 0;
  struct flock fl;
  memset(&fl, 0, sizeof(fl));
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  int saved = errno;
  long r = syscall(SYS_fcntl, fd, F_GETLK, &fl);
  errno = saved;
  if (r != 0 || fl.l_type != F_RDLCK || fl.l_whence != SEEK_SET || fl.l_len != 1 ||
      fl.l_pid != fm_lock_pid || fl.l_start <= 0) {
    return 0;
  }
  char key[SENTRY_FM_TOKEN_KEY_LEN];
  sentry_fm_token_key((uint64_t)fl.l_start, key);
  struct sentry_fm_slot s;
  if (!fm_find(base, key, sizeof(key), &s) || !(s.flags & SENTRY_FM_TOKEN)) return 0;
  if (s.target_len == 0 || s.target_len >= 256) return 0;
  memcpy(out, s.data + s.path_len, s.target_len);
  out[s.target_len] = '\0';
  if (gen) *gen = s.generation;
  return s.target_len;
}

/* The calling thread's working directory (region.h SENTRY_FM_CWD), copied
 * to out (256 bytes), and its length; 0 when none is published. */
size_t fm_cwd_path(const char* base, char* out, uint64_t* gen) {
  if (!fm_cwds) return 0;
  char key[SENTRY_FM_CWD_KEY_LEN];
  sentry_fm_cwd_key((uint32_t)syscall(SYS_gettid), key);
  struct sentry_fm_slot s;
  if (!fm_find(base, key, sizeof(key), &s) || !(s.flags & SENTRY_FM_CWD)) return 0;
  if (s.target_len == 0 || s.target_len >= 256) return 0;
  memcpy(out, s.data + s.path_len, s.target_len);
  out[s.target_len] = '\0';
  *gen = s.generation;
  return s.target_len;
}

/* The slot answering (dirfd, path) as fstatat would resolve it: an absolute
 * path, dirfd's own answer (an empty path with AT_EMPTY_PATH), or a
 * relative one beneath a directory token or the working directory. */
int fm_lookup_at(int dirfd, const char* path, int empty_ok, int follow,
                 struct sentry_fm_slot* out) {
  if (path == NULL) return 0;
  if (path[0] == '/') return fm_lookup(path, follow, out);
  if (path[0] == '\0' && (dirfd == AT_FDCWD || !empty_ok)) return 0;
  const char* base = fm_mapped();
  if (base == NULL) return 0;
  char full[FM_PATH_MAX];
  uint64_t gen = 0;
  const struct sentry_fm_header* h = (const struct sentry_fm_header*)base;
  uint64_t snap[2] = {__atomic_load_n(&h->generation, __ATOMIC_ACQUIRE),
                      __atomic_load_n(&h->upper_generation, __ATOMIC_ACQUIRE)};
  size_t n =
      dirfd == AT_FDCWD ? fm_cwd_path(base, full, &gen) : fm_token_path(base, dirfd, full, &gen);
  if (n == 0) return 0;
  if (path[0] != '\0') {
    size_t len = strnlen(path, FM_PATH_MAX);
    if (n + 1 + len >= FM_PATH_MAX) return 0;
    full[n] = '/';
    memcpy(full + n + 1, path, len);
    n += 1 + len;
  }
  /* The fd's own answer is never ENOENT; a name under it only by answers
   * of the generation its path was read in. */
  return fm_lookup_path(base, full, n, follow, out, path[0] == '\0' ? FM_NO_NEGATIVE : gen, snap);
}

/* Whether buf may take n bytes: the kernel's own check (EFAULT), by a call
 * that writes them. 0: yes; else the errno to give (or -1: ask the trap). */
int fm_probe(void* buf, size_t n) {
  int saved = errno;
  ssize_t r = getrandom(buf, n, GRND_NONBLOCK);
  int err = errno;
  errno = saved;
  if (r == (ssize_t)n) return 0;
  return r < 0 && err == EFAULT ? EFAULT : -1;
}

/* 1 with *ret set when the region answered a stat; 0 to trap. */
static int fm_stat_at(int dirfd, const char* path, struct stat* buf, int flags, int* ret) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH)) return 0;
  struct sentry_fm_slot s;
  if (!fm_lookup_at(dirfd, path, (flags & AT_EMPTY_PATH) != 0, !(flags & AT_SYMLINK_NOFOLLOW),
                    &s)) {
    return 0;
  }
  if (s.flags & SENTRY_FM_ABSENT) {
    errno = FM_ERRNO(&s);
    *ret = -1;
    return 1;
  }
  int p = fm_probe(buf, sizeof(*buf));
  if (p < 0) return 0;
  if (p > 0) {
    errno = p;
    *ret = -1;
    return 1;
  }
  memcpy(buf, &s.st, sizeof(*buf));
  *ret = 0;
  return 1;
}

static int fm_fstatat(int dirfd, const char* path, struct stat* buf, int flags) {
  int ret;
  /* fstatat(fd, "", AT_EMPTY_PATH): fd's record (fdrec.c) first. */
  if (path != NULL && path[0] == '\0' && (flags & AT_EMPTY_PATH) && dirfd >= 0 &&
      !(flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH)) &&
      fm_fd_fstat(dirfd, buf, &ret)) {
    return ret;
  }
  if (fm_stat_at(dirfd, path, buf, flags, &ret)) return ret;
  return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags);
}

/* glibc's fstat: newfstatat(fd, "", buf, AT_EMPTY_PATH), EBADF for fd < 0. */
static int fm_fstat(int fd, struct stat* buf) {
  if (fd < 0) {
    errno = EBADF;
    return -1;
  }
  return fm_fstatat(fd, "", buf, AT_EMPTY_PATH);
}

FM_EXPORT int stat(const char* path, struct stat* buf) {
  return fm_fstatat(AT_FDCWD, path, buf, 0);
}
/* On x86-64 struct stat64 is struct stat. */
_Static_assert(sizeof(struct stat64) == sizeof(struct stat), "stat64");
FM_EXPORT int stat64(const char* path, struct stat64* buf) {
  return fm_fstatat(AT_FDCWD, path, (struct stat*)buf, 0);
}
FM_EXPORT int lstat(const char* path, struct stat* buf) {
  return fm_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
}
FM_EXPORT int lstat64(const char* path, struct stat64* buf) {
  return fm_fstatat(AT_FDCWD, path, (struct stat*)buf, AT_SYMLINK_NOFOLLOW);
}
FM_EXPORT int fstat(int fd, struct stat* buf) { return fm_fstat(fd, buf); }
FM_EXPORT int fstat64(int fd, struct stat64* buf) { return fm_fstat(fd, (struct stat*)buf); }
FM_EXPORT int fstatat(int dirfd, const char* path, struct stat* buf, int flags) {
  return fm_fstatat(dirfd, path, buf, flags);
}
FM_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* buf, int flags) {
  return fm_fstatat(dirfd, path, (struct stat*)buf, flags);
}

/* 1 with *ret set when the region answered access(path, mode). */
static int fm_access(const char* path, int mode, int* ret) {
  if (mode & ~(R_OK | W_OK | X_OK)) return 0; /* EINVAL: the trap's */
  if (mode & W_OK) return 0;                  /* depends on the caller */
  struct sentry_fm_slot s;
  if (!fm_lookup(path, 1, &s)) return 0;
  if (s.flags & SENTRY_FM_ABSENT) {
    errno = FM_ERRNO(&s);
    *ret = -1;
    return 1;
  }
  if ((uint32_t)mode & ~s.access_ok) return 0;
  *ret = 0;
  return 1;
}

FM_EXPORT int access(const char* path, int mode) {
  int ret;
  if (fm_access(path, mode, &ret)) return ret;
  return (int)syscall(SYS_access, path, mode);
}

FM_EXPORT int faccessat(int dirfd, const char* path, int mode, int flags) {
  int ret;
  /* AT_EACCESS: the answers published hold for every caller's ids. */
  if ((flags & ~AT_EACCESS) == 0 && fm_access(path, mode, &ret)) return ret;
  /* As glibc: faccessat2 first, faccessat where the kernel has none. */
  int r = (int)syscall(SYS_faccessat2, dirfd, path, mode, flags);
  if (r < 0 && errno == ENOSYS && flags == 0) r = (int)syscall(SYS_faccessat, dirfd, path, mode);
  return r;
}

static int fm_readlink(const char* path, char* buf, size_t size, ssize_t* ret) {
  if ((ssize_t)size <= 0) return 0;
  struct sentry_fm_slot s;
  if (!fm_lookup(path, 0, &s)) return 0;
  if (s.flags & SENTRY_FM_ABSENT) {
    errno = FM_ERRNO(&s);
    *ret = -1;
    return 1;
  }
  if (!S_ISLNK(s.st.st_mode)) {
    errno = EINVAL;
    *ret = -1;
    return 1;
  }
  if (!(s.flags & SENTRY_FM_TARGET) || s.target_len == 0) return 0;
  size_t n = s.target_len < size ? s.target_len : size;
  int p = fm_probe(buf, n);
  if (p < 0) return 0;
  if (p > 0) {
    errno = p;
    *ret = -1;
    return 1;
  }
  memcpy(buf, s.data + s.path_len, n);
  *ret = (ssize_t)n;
  return 1;
}

FM_EXPORT ssize_t readlink(const char* path, char* buf, size_t size) {
  ssize_t ret;
  if (fm_readlink(path, buf, size, &ret)) return ret;
  return syscall(SYS_readlink, path, buf, size);
}

FM_EXPORT ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t size) {
  ssize_t ret;
  if (fm_readlink(path, buf, size, &ret)) return ret;
  return syscall(SYS_readlinkat, dirfd, path, buf, size);
}

/* A program that unmaps or maps over the region through libc turns the
 * region off first (every later call traps): the library never reads an
 * address the program took back. */
static void fm_forget(const void* addr, size_t len) {
  const char* base = __atomic_load_n(&fm_base, __ATOMIC_ACQUIRE);
  const char* a = (const char*)addr;
  if (base != NULL && a < base + fm_size && base < a + len) {
    __atomic_store_n(&fm_base, NULL, __ATOMIC_RELEASE);
  }
}

FM_EXPORT int munmap(void* addr, size_t len) {
  fm_forget(addr, len);
  return (int)syscall(SYS_munmap, addr, len);
}

FM_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) fm_forget(addr, len);
  return (void*)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

FM_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

FM_EXPORT void* mremap(void* old, size_t old_len, size_t new_len, int flags, ...) {
  void* new_addr = NULL;
  if (flags & MREMAP_FIXED) {
    __builtin_va_list ap;
    __builtin_va_start(ap, flags);
    new_addr = __builtin_va_arg(ap, void*);
    __builtin_va_end(ap);
    fm_forget(new_addr, new_len);
  }
  fm_forget(old, old_len);
  return (void*)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}
