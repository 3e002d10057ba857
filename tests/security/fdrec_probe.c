/* The guest half of FastFdRecords.ThreadsCloseAndFstatAtOnce
 * (fast_fd_records_test.cc): one thread closes a number and reopens it, A
 * and B in turn, as fast as it can; two others fstat that number through
 * libc (the preload library's fd records) at the same time. Every answer
 * must be A's or B's whole stat (as the trapped newfstatat gave it before),
 * or EBADF: never a mix, never another file's.
 *
 *   fdrec_probe A B ITERATIONS
 * prints "a=N b=N ebadf=N garbage=N number=N fast=N" (number: a reopen that
 * did not get the number back; fast: answers in under 3 us, which no trap
 * gives: the records'). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char* path_a;
static const char* path_b;
static long iterations;
static int fd;
static struct stat st_a, st_b;
static volatile int done;
static long seen_a, seen_b, seen_ebadf, garbage, bad_number, fast;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The trapped answer: newfstatat by syscall(), which the library passes on. */
static int trapped(int n, struct stat* st) {
  return (int)syscall(SYS_newfstatat, n, "", st, AT_EMPTY_PATH);
}

static void* churn(void* arg) {
  (void)arg;
  for (long i = 0; i < iterations; i++) {
    close(fd);
    int g = open(i % 2 ? path_a : path_b, O_RDONLY);
    if (g != fd) __atomic_fetch_add(&bad_number, 1, __ATOMIC_RELAXED);
    /* Held open a while (the vDSO's clock: no trap), so that the
     * watchers' fstats meet the record, not only the open's trap (the
     * number is installed before that trap returns). */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
      clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 200000);
  }
  done = 1;
  return NULL;
}

static void* watch(void* arg) {
  (void)arg;
  long a = 0, b = 0, ebadf = 0, bad = 0, quick = 0;
  while (!done) {
    struct stat st;
    memset(&st, 0x5a, sizeof(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = fstat(fd, &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Under 3 us: no trap answered it (a seccomp round trip alone takes
     * about 6 us here): the record did. */
    if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 3000) quick++;
    if (r == 0) {
      if (memcmp(&st, &st_a, sizeof(st)) == 0) {
        a++;
      } else if (memcmp(&st, &st_b, sizeof(st)) == 0) {
        b++;
      } else {
        bad++;
      }
    } else if (errno == EBADF) {
      ebadf++;
    } else {
      bad++;
    }
  }
  pthread_mutex_lock(&mu);
  seen_a += a;
  seen_b += b;
  seen_ebadf += ebadf;
  garbage += bad;
  fast += quick;
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  path_a = argv[1];
  path_b = argv[2];
  iterations = atol(argv[3]);
  /* The trapped stat of each, through an fd of its own. */
  int x = open(path_a, O_RDONLY);
  if (x < 0 || trapped(x, &st_a) != 0) return 3;
  close(x);
  fd = open(path_b, O_RDONLY);
  if (fd < 0 || trapped(fd, &st_b) != 0) return 3;
  pthread_t t[3];
  pthread_create(&t[1], NULL, watch, NULL);
  pthread_create(&t[2], NULL, watch, NULL);
  pthread_create(&t[0], NULL, churn, NULL);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  printf("a=%ld b=%ld ebadf=%ld garbage=%ld number=%ld fast=%ld\n", seen_a, seen_b, seen_ebadf,
         garbage, bad_number, fast);
  return 0;
}
