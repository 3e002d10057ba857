/* Resolution through symlinks from the region, and realpath without a trap.
 *
 * A path whose whole answer is not in the region (it crosses a symlink, or
 * names "." or "..", or ends on a symlink that stat follows) is walked here
 * as the sentry's VFS walks it (vfs_walk.cc Walk), but from published
 * answers only: at each step, the longest run of names up to the next "."
 * or ".." is looked up whole, then shorter ones; a symlink slot splices its
 * target (relative to the link's directory, or to the root), at most 40 of
 * them (more: ELOOP, which the trap says); ".." pops a name only when that
 * name is a directory every caller may search (a slot's X_OK, or a
 * directory the walk was proved to have searched); a name absent from the
 * region is ENOENT only when fm_absent_above says so; anything else traps.
 * Every slot used answers for every caller by itself (the sentry publishes
 * by the same rules at each step: fast_meta_publish.cc PublishResolved),
 * and the header's two generations are the same before the first read and
 * after the last, so all of them held at once: the walk's answer is the one
 * a trap would have given at that moment.
 *
 * realpath, canonicalize_file_name and __realpath_chk answer from the same
 * walk (its end's normal path); when a part is not published, after one
 * trapped stat of the path (which publishes them) the walk is tried again;
 * any doubt calls glibc's own (which traps on every readlink it makes). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fastmeta/preload_internal.h"
#include "fastmeta/region.h"

#define FM_REM 4096     /* PATH_MAX: the text left to walk */
#define FM_SEG_MAX 64   /* names looked up in one run */
#define FM_MAX_LINKS 40 /* vfs.h kMaxSymlinks, the kernel's */
#define FM_MAX_STEPS 256

struct fm_walk {
  char res[256]; /* the normal path of the directory reached ("": the root) */
  size_t res_len;
  int res_x;        /* res may be searched by every caller */
  char rem[FM_REM]; /* what is left to walk: rem[at, FM_REM) */
  size_t at;
};

static int fm_is_dots(const char* p, size_t n) {
  return (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.');
}

static void fm_gens(const char* base, uint64_t snap[2]) {
  const struct sentry_fm_header* h = (const struct sentry_fm_header*)base;
  snap[0] = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
  snap[1] = __atomic_load_n(&h->upper_generation, __ATOMIC_ACQUIRE);
}

/* Whether res is a directory every caller may search (for "." and ".."). */
static int fm_res_searchable(const char* base, struct fm_walk* w) {
  if (w->res_x || w->res_len == 0) return 1;
  struct sentry_fm_slot s;
  if (!fm_find(base, w->res, w->res_len, &s) || (s.flags & SENTRY_FM_ABSENT) ||
      !S_ISDIR(s.st.st_mode) || !(s.access_ok & X_OK)) {
    return 0;
  }
  w->res_x = 1;
  return 1;
}

/* The walk; 1: *out answers (ABSENT: ENOENT), its normal path in w->res;
 * 2: it ended at the root (realpath's "/"); 0: the trap answers. */
static int fm_walk(const char* base, struct fm_walk* w, int follow, int trailing,
                   struct sentry_fm_slot* out) {
  int links = 0;
  for (int steps = 0; steps < FM_MAX_STEPS; steps++) {
    while (w->at < FM_REM && w->rem[w->at] == '/') w->at++;
    if (w->at == FM_REM) { /* nothing left: the walk ends at res */
      if (w->res_len == 0) return 2;
      if (!fm_find(base, w->res, w->res_len, out) || (out->flags & SENTRY_FM_ABSENT) ||
          !S_ISDIR(out->st.st_mode)) {
        return 0;
      }
      return 1;
    }
    size_t p = w->at, q = p;
    while (q < FM_REM && w->rem[q] != '/') q++;
    if (fm_is_dots(w->rem + p, q - p)) {
      if (!fm_res_searchable(base, w)) return 0;
      if (q - p == 2)
        while (w->res_len > 0 && w->res[--w->res_len] != '/') {
        }
      w->res_x = 1; /* an ancestor of res: searched to reach it */
      w->at = q;
      continue;
    }
    /* The run of names up to the next "." or "..", as one normal path. */
    char cand[256];
    size_t clen[FM_SEG_MAX], cend[FM_SEG_MAX], k = 0, n = w->res_len;
    memcpy(cand, w->res, n);
    while (k < FM_SEG_MAX) {
      while (p < FM_REM && w->rem[p] == '/') p++;
      if (p == FM_REM) break;
      q = p;
      while (q < FM_REM && w->rem[q] != '/') q++;
      if (fm_is_dots(w->rem + p, q - p) || n + 1 + (q - p) >= sizeof(cand)) break;
      cand[n++] = '/';
      memcpy(cand + n, w->rem + p, q - p);
      n += q - p;
      clen[k] = n;
      cend[k++] = q;
      p = q;
    }
    if (k == 0) return 0; /* a name too long for the region */
    struct sentry_fm_slot s;
    size_t hit = k;
    for (; hit > 0; hit--) {
      if (fm_find(base, cand, clen[hit - 1], &s) &&
          !(s.flags & (SENTRY_FM_TOKEN | SENTRY_FM_CWD | SENTRY_FM_LISTING))) {
        break;
      }
    }
    if (hit == 0) {
      if (!fm_absent_above(base, cand, clen[k - 1], 0)) return 0;
      out->flags = SENTRY_FM_ABSENT | SENTRY_FM_FOLLOW;
      out->path_len = 0;
      out->target_len = 0;
      return 1;
    }
    size_t end = cend[hit - 1];
    size_t after = end;
    while (after < FM_REM && w->rem[after] == '/') after++;
    int last = after == FM_REM;
    if (s.flags & SENTRY_FM_ABSENT) { /* a name on the way, or the last one */
      *out = s;
      return 1;
    }
    if (S_ISLNK(s.st.st_mode) && (!last || follow || trailing)) {
      if (!(s.flags & SENTRY_FM_TARGET) || s.target_len == 0 || ++links > FM_MAX_LINKS) return 0;
      const char* target = s.data + s.path_len;
      /* rem becomes target, "/", what followed the link. */
      if ((size_t)s.target_len + 1 > end) return 0;
      w->at = end - s.target_len - 1;
      memmove(w->rem + w->at, target, s.target_len);
      w->rem[end - 1] = '/';
      if (target[0] == '/') {
        w->res_len = 0;
      } else {
        w->res_len = hit > 1 ? clen[hit - 2] : w->res_len;
        memcpy(w->res, cand, w->res_len);
      }
      w->res_x = 1; /* the link's directory was searched to reach it */
      continue;
    }
    memcpy(w->res, cand, clen[hit - 1]);
    w->res_len = clen[hit - 1];
    if ((!last || trailing) && !S_ISDIR(s.st.st_mode)) {
      /* Walked on from (or a trailing slash after) what is not a directory:
       * ENOTDIR whatever follows (vfs_walk.cc Walk and Lookup). */
      out->flags = SENTRY_FM_ABSENT | FM_NOTDIR;
      out->path_len = 0;
      out->target_len = 0;
      return 1;
    }
    if (last) {
      *out = s;
      return 1;
    }
    if (hit < k) {
      /* A directory, and no longer run of its names answered (no link
       * below it is known): its next name is absent, or the trap says. */
      if (!fm_absent_above(base, cand, clen[hit], 0)) return 0;
      out->flags = SENTRY_FM_ABSENT | SENTRY_FM_FOLLOW;
      out->path_len = 0;
      out->target_len = 0;
      return 1;
    }
    w->res_x = (s.access_ok & X_OK) != 0;
    w->at = end;
  }
  return 0;
}

int fm_resolve(const char* base, const char* path, size_t len, int follow,
               struct sentry_fm_slot* out, char* resolved, const uint64_t* snap) {
  if (len == 0 || len >= FM_REM || path[0] != '/') return 0;
  uint64_t before[2], after[2];
  if (snap) {
    before[0] = snap[0];
    before[1] = snap[1];
  } else {
    fm_gens(base, before);
  }
  struct fm_walk w;
  w.res_len = 0;
  w.res_x = 1; /* the root: every walk searches it */
  w.at = FM_REM - len;
  memcpy(w.rem + w.at, path, len);
  int r = fm_walk(base, &w, follow, path[len - 1] == '/', out);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  fm_gens(base, after);
  if (r == 0 || after[0] != before[0] || after[1] != before[1]) return 0;
  if (r == 2) {
    if (!resolved) return 0;
    memcpy(resolved, "/", 2);
    return 2;
  }
  if (resolved && !(out->flags & SENTRY_FM_ABSENT)) {
    memcpy(resolved, w.res, w.res_len);
    resolved[w.res_len] = '\0';
  }
  return 1;
}

/* realpath(path) from the region into out (PATH_MAX bytes): 1 answered
 * (errno set when it is an error: ENOENT), 0 ask glibc's. */
static int fm_realpath(const char* path, char* out, int* err) {
  if (path == NULL || path[0] == '\0') return 0;
  const char* base = fm_mapped();
  if (base == NULL) return 0;
  char full[FM_REM];
  size_t len = strnlen(path, FM_REM);
  if (len >= FM_REM) return 0;
  uint64_t snap[2];
  fm_gens(base, snap);
  if (path[0] == '/') {
    memcpy(full, path, len);
  } else {
    uint64_t gen;
    size_t n = fm_cwd_path(base, full, &gen);
    if (n == 0 || n + 1 + len >= FM_REM) return 0;
    full[n] = '/';
    memcpy(full + n + 1, path, len);
    len += n + 1;
  }
  struct sentry_fm_slot s;
  int r = fm_resolve(base, full, len, 1, &s, out, snap);
  if (r == 0) return 0;
  *err = r == 1 && (s.flags & SENTRY_FM_ABSENT) ? FM_ERRNO(&s) : 0;
  return 1;
}

/* Whether a trapped stat may publish what path's walk needs: its first
 * name has an answer of its own (a path under /proc or a mount never
 * does), or, relative, the working directory is published. Else it would
 * only add a trap to glibc's. */
static int fm_worth_a_stat(const char* path) {
  const char* base = fm_mapped();
  if (path == NULL || path[0] == '\0' || base == NULL) return 0;
  char key[256];
  if (path[0] != '/') {
    uint64_t gen;
    return fm_cwd_path(base, key, &gen) != 0;
  }
  size_t n = 1;
  while (path[n] != '\0' && path[n] != '/' && n < sizeof(key)) n++;
  struct sentry_fm_slot s;
  return n > 1 && n < sizeof(key) && fm_find(base, path, n, &s) && !(s.flags & SENTRY_FM_ABSENT);
}

typedef char* (*fm_realpath_fn)(const char*, char*);

static char* fm_real_realpath(const char* path, char* resolved) {
  static fm_realpath_fn real;
  fm_realpath_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = (fm_realpath_fn)dlsym(RTLD_NEXT, "realpath");
    if (f == NULL) {
      errno = ENOSYS;
      return NULL;
    }
    __atomic_store_n(&real, f, __ATOMIC_RELEASE);
  }
  return f(path, resolved);
}

FM_EXPORT char* realpath(const char* path, char* resolved) {
  char buf[PATH_MAX];
  int err = 0;
  int saved = errno;
  if (!fm_realpath(path, buf, &err)) {
    /* Not all of it published (a header cc1 meets first): one trapped
     * stat publishes every part of its walk (the sentry's
     * PublishResolved), where glibc's realpath would trap a readlink for
     * every name. The answer is still only the region's, or glibc's. */
    if (!fm_worth_a_stat(path)) return fm_real_realpath(path, resolved);
    struct stat st;
    syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0);
    errno = saved;
    if (!fm_realpath(path, buf, &err)) return fm_real_realpath(path, resolved);
  }
  if (err != 0) {
    errno = err;
    return NULL;
  }
  errno = saved;
  size_t n = strlen(buf) + 1;
  if (resolved == NULL) {
    resolved = malloc(n);
    if (resolved == NULL) return NULL; /* ENOMEM, as glibc */
  }
  memcpy(resolved, buf, n);
  return resolved;
}

FM_EXPORT char* canonicalize_file_name(const char* path) { return realpath(path, NULL); }

/* _FORTIFY_SOURCE's realpath: a caller's buffer smaller than PATH_MAX is
 * glibc's to refuse (__chk_fail). */
FM_EXPORT char* __realpath_chk(const char* path, char* resolved, size_t resolved_len) {
  if (resolved != NULL && resolved_len < PATH_MAX) {
    typedef char* (*chk_fn)(const char*, char*, size_t);
    chk_fn f = (chk_fn)dlsym(RTLD_NEXT, "__realpath_chk");
    if (f != NULL) return f(path, resolved, resolved_len);
    abort();
  }
  return realpath(path, resolved);
}
