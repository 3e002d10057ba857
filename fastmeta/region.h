/* The fast-metadata region: what the sentry publishes and the guest's
 * preload library (preload.c) reads, without a trap.
 *
 * One sealed memfd per sandbox (sentry/kernel/fast_meta.h). The sentry alone
 * writes it, through the one writable mapping it made before sealing; every
 * guest process maps it PROT_READ | MAP_SHARED. Layout, little-endian x86-64:
 *
 *   offset 0            struct sentry_fm_header
 *   offset index_offset nslots x uint32_t: a bucket's slot number + 1, or 0
 *   offset slots_offset nslots x struct sentry_fm_slot (slot_size bytes each)
 *   offset list_offset  list_bytes of directory listings (HAS_LISTINGS)
 *
 * A slot answers one question about one absolute, normalised guest path:
 * "what does lstat give, and stat too when FOLLOW is set?" (a symlink
 * answers lstat and readlink only; anything else, and an absent name,
 * answers both). Its bucket is the first of the SENTRY_FM_PROBES buckets
 * from sentry_fm_hash(path, 0) & (nslots - 1) on (wrapping) that holds it;
 * a reader stops at a bucket that is empty or whose slot is of an older
 * generation (a miss). When all of them hold other answers, the first one's
 * gives way to the new one (unless the sentry keeps it: then the next, or
 * the new answer is not written).
 *
 * A TOKEN slot names a directory token the sentry donated (an fd of a
 * directory, opened by the guest): its key is sentry_fm_token_key(id), its
 * target the directory's absolute path, published only while that path
 * leads to that very directory. The guest learns a token's id without a
 * trap: the sentry holds a POSIX read lock on the byte [id, id + 1) of the
 * token (an inode only that one donation ever opened), which
 * fcntl(fd, F_GETLK) reports to every process holding it, with l_pid
 * header.lock_pid (0: the sentry is outside the guest's pid namespace, so
 * no guest process can own a lock that reads so). A guest whose fd number
 * now names something else sees that object's locks, not the old token's. Slots are taken in order
 * (and from the first again after an invalidation), so the few pages a run
 * uses are the ones both sides touch: a hashed slot each cost a page fault
 * on each side.
 *
 * Each slot is a seqlock: the sentry makes seq odd, writes, makes it even
 * again. A reader copies the slot, then checks that seq did not change, was
 * even, that the slot's generation is the header's (the sentry bumps the
 * header's generation before it answers any write that could change an
 * answer) and that the path matches; anything else is a miss (the trap).
 *
 * A LISTING slot (key '@' and a directory's path) says where that
 * directory's listing is (struct sentry_fm_listing). The guest finds it from
 * a directory fd: its token slot gives the path, whose listing slot must be
 * of the same generation; it copies the records and checks that the header's
 * generation is still that one (the area is append-only within a
 * generation, and every change to a listing bumps it first), so the copy is
 * the listing as a trapped getdents64 would have read it at that moment.
 *
 * A LISTING slot with COMPLETE also answers for names absent from it: its
 * directory's path leads to it by the rules of a path's answer and every
 * caller may search it, so a trap would answer ENOENT for dir/name, and for
 * anything under it, whatever name is not among the records (the sentry's
 * lookups in a listed lower directory consult exactly these names). The
 * guest reads the records in place and checks the header's generation
 * after, as above. So does an ABSENT answer for a directory: whatever lies
 * below it is ENOENT too. The guest uses both only with HAS_NEGATIVES.
 *
 * An UPPER slot (HAS_UPPER) answers for a path whose walk met a node of the
 * in-memory upper layer (a directory or symlink the guest made, /tmp): it
 * is live while its generation is header.upper_generation, which the sentry
 * bumps before it answers any trapped call that changes an upper node (every
 * change to the upper layer's names and attributes is one). So
 * the churn of /tmp leaves the lower layer's answers alone. Everything said
 * above of "the header's generation" holds for an UPPER slot with
 * upper_generation in its place (a listing's records too: the area is reused
 * only after an invalidation, which bumps both).
 *
 * An upper regular file (HAS_UPPER_FILES) is published only while no
 * writable description of its store file exists anywhere (the sentry asks
 * the kernel: a read lease is refused while the inode is open for writing,
 * and a writable shared mapping keeps its file open), and every writable
 * description is one the sentry makes at a trapped open, which bumps
 * upper_generation before it is donated: so its size and times, which
 * native writes change, cannot move while its slot is live. The store's
 * tmpfs is mounted noatime (a native read changes no answer); on a store
 * that is not, nothing of this kind is published. fdrec.c records such a
 * file's read-only opens under upper_generation.
 *
 * A FRESH slot (with UPPER_FILES and FD_RECORDS; always UPPER) is the
 * answer of an upper regular file that the trapped open which made it has
 * just donated: made by that open (no other description of it exists), and
 * empty. Its key is SENTRY_FM_FRESH_PREFIX, the calling thread's id and the
 * path, so that no path's lookup ever finds it: the file has a writer, and
 * native writes move its answer without a trap. Only fdrec.c reads it, in
 * that thread, for the fd that very open returned (the open bumped
 * upper_generation before its donation, and so does every other writable
 * open of an upper file or change of a name: a FRESH slot of the calling
 * thread and of the upper_generation read after its open is that open's),
 * and answers that fd's fstat from it only while the file is still empty
 * (a native FIONREAD and lseek say so: every write to an empty file grows
 * it) and no call that changes an empty file's times natively (ftruncate,
 * fallocate) went through the library since (fdrec.c says what remains).
 *
 * A CWD slot (HAS_CWD; always UPPER) names a thread's working directory:
 * its key is sentry_fm_cwd_key(gettid()), its target the directory's
 * absolute path, published (after a trapped call relative to it) only while
 * that path leads to that directory by the rules of a path's answer. The
 * sentry bumps upper_generation before it answers any chdir or fchdir, and
 * when a thread it published one for is gone (its id may be reused), so a
 * live CWD slot is the calling thread's own working directory: its relative
 * paths are answered as the absolute ones below it, as a token's are.
 *
 * Plain C: the guest library is C, the sentry C++. */
#ifndef SENTRY_FASTMETA_REGION_H_
#define SENTRY_FASTMETA_REGION_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define SENTRY_FM_MAGIC 0x314d4653u /* "SFM1" */
#define SENTRY_FM_VERSION 7u
#define SENTRY_FM_SLOT_SIZE 512u
#define SENTRY_FM_INDEX_OFFSET 4096u
#define SENTRY_FM_PROBES 8u

/* Where the guest opens the region (read-only) and where the library is. */
#define SENTRY_FM_REGION_PATH "/etc/sentry/fastmeta"
#define SENTRY_FM_LIBRARY_PATH "/etc/sentry/libfastmeta.so"

/* Slot flags. */
#define SENTRY_FM_FOLLOW 1u    /* also stat's answer (else lstat's only) */
#define SENTRY_FM_ABSENT 2u    /* ENOENT; st is unused */
#define SENTRY_FM_TARGET 4u    /* a symlink whose target follows the path */
#define SENTRY_FM_TOKEN 8u     /* a directory token: its path follows the key */
#define SENTRY_FM_LISTING 16u  /* a directory's listing: list says where it is */
#define SENTRY_FM_COMPLETE 32u /* a LISTING whose absent names are ENOENT (below) */
#define SENTRY_FM_UPPER 64u    /* of header.upper_generation, not header.generation (below) */
#define SENTRY_FM_CWD 128u     /* a thread's working directory: its path follows the key */
#define SENTRY_FM_FRESH 256u   /* a file a trapped open just made (below) */

/* header.features */
#define SENTRY_FM_HAS_TOKENS 1u    /* token slots are published; lock_pid is set */
#define SENTRY_FM_HAS_LISTINGS 2u  /* listing slots are published; list_* are set */
#define SENTRY_FM_HAS_NEGATIVES 4u /* absent names below a COMPLETE listing or an ABSENT slot */
#define SENTRY_FM_DIR_STREAMS 8u   /* opendir of any directory: the library's own stream */
#define SENTRY_FM_HAS_UPPER 16u    /* UPPER slots are published (below) */
#define SENTRY_FM_HAS_CWD 32u      /* CWD slots are published (below) */
#define SENTRY_FM_FD_RECORDS 64u   /* the library records what it opened (fdrec.c) */
#define SENTRY_FM_UPPER_FILES 128u /* UPPER slots of regular files, recorded too (below) */

/* The d_off of the last record of a directory's listing, wherever the
 * sentry returns it (a trapped getdents64 that reached the end, a published
 * listing), and the position after it, where getdents64 returns 0: as
 * ext4's end of a 32-bit hash listing. A stream whose last record read
 * carries it knows the listing ended without another getdents64 (dir.c).
 * Low enough for lseek on any file system a directory token lives on. */
#define SENTRY_FM_DIR_END 0x7fffffffL

/* A listing's key: '@' and the directory's absolute normalised path. */
#define SENTRY_FM_LISTING_PREFIX '@'
/* The largest listing published (bytes of records); a larger one traps. */
#define SENTRY_FM_MAX_LISTING (1u << 20)

/* A token's key: '#' and its id in 16 hex digits. */
#define SENTRY_FM_TOKEN_KEY_LEN 17u
/* A fresh file's key (FRESH, below): '+', the id of the thread that made
 * it (gettid) in 8 hex digits, and its absolute normalised path. */
#define SENTRY_FM_FRESH_PREFIX '+'
#define SENTRY_FM_FRESH_KEY_LEN 9u
/* A working directory's key: '$' and the thread's id (gettid) in 8 hex digits. */
#define SENTRY_FM_CWD_KEY_LEN 9u

struct sentry_fm_header {
  uint32_t magic;
  uint32_t version;
  uint32_t slot_size;
  uint32_t nslots; /* a power of two; also the number of buckets */
  uint64_t slots_offset;
  uint64_t generation; /* starts at 1; bumped by every invalidation */
  uint64_t index_offset;
  uint32_t features;    /* SENTRY_FM_HAS_TOKENS */
  int32_t lock_pid;     /* l_pid of the sentry's token locks, as guests see it */
  uint64_t list_offset; /* the listings' area: offset and size (HAS_LISTINGS) */
  uint64_t list_bytes;
  /* The generation of UPPER slots: bumped by every change to the upper
   * layer, and with generation by every invalidation (both are taken from
   * one counter, so upper_generation >= generation, and two slots of equal
   * generations were published with no invalidation of either kind between
   * them). */
  uint64_t upper_generation;
  uint8_t reserved[56];
};

/* Where a LISTING slot's records are: bytes of struct linux_dirent64 records
 * at offset into the listings' area, exactly what getdents64 returns for the
 * whole directory read from position 0 (".", "..", then the entries, each
 * d_off the position after it). The area is written only where nothing was
 * published in the current generation: records a slot of generation g
 * points at stay as they are until the header's generation moves past g. */
struct sentry_fm_listing {
  uint64_t offset;
  uint64_t bytes;
  uint64_t entries;
};

struct sentry_fm_slot {
  uint32_t seq;
  uint32_t flags;
  uint64_t generation;
  /* The access(2) modes (R_OK, X_OK) every caller is granted: the mode's
   * owner, group and other bits all grant them (and, for the lower layer,
   * the host's other bits). W_OK is never answered here. */
  uint32_t access_ok;
  uint16_t path_len;
  uint16_t target_len;
  union {
    struct stat st;                /* a path's answer */
    struct sentry_fm_listing list; /* a LISTING slot's records */
  };
  char data[SENTRY_FM_SLOT_SIZE - 24 - sizeof(struct stat)]; /* path, then target */
};

/* FNV-1a over the path, then the follow byte. */
static inline uint64_t sentry_fm_hash(const char* path, size_t len, int follow) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)path[i];
    h *= 1099511628211ull;
  }
  h ^= follow ? 1u : 2u;
  h *= 1099511628211ull;
  return h;
}

static inline void sentry_fm_token_key(uint64_t id, char out[SENTRY_FM_TOKEN_KEY_LEN]) {
  out[0] = '#';
  for (int i = 0; i < 16; i++) out[1 + i] = "0123456789abcdef"[(id >> (60 - 4 * i)) & 15];
}

static inline void sentry_fm_fresh_key(uint32_t tid, char out[SENTRY_FM_FRESH_KEY_LEN]) {
  out[0] = SENTRY_FM_FRESH_PREFIX;
  for (int i = 0; i < 8; i++) out[1 + i] = "0123456789abcdef"[(tid >> (28 - 4 * i)) & 15];
}

static inline void sentry_fm_cwd_key(uint32_t tid, char out[SENTRY_FM_CWD_KEY_LEN]) {
  out[0] = '$';
  for (int i = 0; i < 8; i++) out[1 + i] = "0123456789abcdef"[(tid >> (28 - 4 * i)) & 15];
}

/* An absolute path with no empty, "." or ".." component and no trailing
 * slash (not "/" itself), shorter than the slot's data: the only paths the
 * region answers for. */
static inline int sentry_fm_normal(const char* p, size_t len) {
  if (len < 2 || len >= 256 || p[0] != '/' || p[len - 1] == '/') return 0;
  size_t start = 1;
  for (size_t i = 1; i <= len; i++) {
    if (i == len || p[i] == '/') {
      size_t n = i - start;
      if (n == 0) return 0;
      if (n == 1 && p[start] == '.') return 0;
      if (n == 2 && p[start] == '.' && p[start + 1] == '.') return 0;
      start = i + 1;
    } else if (p[i] == '\0') {
      return 0;
    }
  }
  return 1;
}

#ifdef __cplusplus
static_assert(sizeof(struct sentry_fm_slot) == SENTRY_FM_SLOT_SIZE, "slot size");
static_assert(sizeof(struct sentry_fm_header) == 128, "header size");
#else
_Static_assert(sizeof(struct sentry_fm_slot) == SENTRY_FM_SLOT_SIZE, "slot size");
_Static_assert(sizeof(struct sentry_fm_header) == 128, "header size");
#endif

#endif /* SENTRY_FASTMETA_REGION_H_ */
