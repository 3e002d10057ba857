// fork + exec + exit from many threads at once, checking that each child runs
// with the working directory and umask it should have: the parent's (inherited
// through fork and exec) or the ones the child set between fork and exec.
//
// usage: fork_exec_race THREADS ROUNDS        (the driver)
//        fork_exec_race --check DIR UMASK     (the exec'd child; exit 0 if right)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kDirs = 4 };
static char g_self[4096];
static char g_base[256];
static int g_rounds;
static atomic_int g_failures;
static atomic_int g_done;

// The child's view must agree three ways: getcwd (the sentry's answer), a
// relative open of the marker that names the directory, and /proc/self/status
// (the sentry's umask) against umask() itself (the kernel's).
static int Check(const char* dir, const char* mask_text) {
  char cwd[4096];
  if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, dir) != 0) return 2;
  int fd = open("marker", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 3;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n < 0) return 3;
  buf[n] = 0;
  if (strcmp(buf, dir) != 0) return 4;
  mode_t want = (mode_t)strtol(mask_text, NULL, 8);
  mode_t real = umask(want);
  if (real != want) return 5;
  FILE* f = fopen("/proc/self/status", "re");
  if (!f) return 6;
  char line[256];
  int ok = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned u;
    if (sscanf(line, "Umask:\t%o", &u) == 1) ok = (u == want);
  }
  fclose(f);
  return ok ? 0 : 7;
}

static void DirName(int i, char* out, size_t size) { snprintf(out, size, "%s/d%d", g_base, i); }

static void* Worker(void* arg) {
  long id = (long)arg;
  char parent_dir[4096];
  DirName(0, parent_dir, sizeof(parent_dir));
  for (int r = 0; r < g_rounds; ++r) {
    // Odd rounds change both in the child; even rounds inherit the parent's.
    int change = (r + id) & 1;
    char dir[4096], mask[8];
    int which = 1 + (int)((r + id) % (kDirs - 1));
    mode_t m = change ? (mode_t)(0077 & (r * 7 + id)) : 022;
    if (change) {
      DirName(which, dir, sizeof(dir));
    } else {
      snprintf(dir, sizeof(dir), "%s", parent_dir);
    }
    snprintf(mask, sizeof(mask), "%o", m);
    pid_t pid = fork();
    if (pid < 0) {
      if (errno == EAGAIN) {
        --r;
        usleep(1000);
        continue;
      }
      atomic_fetch_add(&g_failures, 1);
      continue;
    }
    if (pid == 0) {
      if (change && (chdir(dir) != 0)) _exit(10);
      if (change) umask(m);
      char* argv[] = {g_self, "--check", dir, mask, NULL};
      execv(g_self, argv);
      _exit(11);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (atomic_fetch_add(&g_failures, 1) < 5) {
        fprintf(stderr, "round %d thread %ld: child status %#x (dir %s umask %s)\n", r, id,
                status, dir, mask);
      }
    }
    atomic_fetch_add(&g_done, 1);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--check") == 0) return Check(argv[2], argv[3]);
  if (argc != 3) {
    fprintf(stderr, "usage: %s THREADS ROUNDS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  g_rounds = atoi(argv[2]);
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
  if (n <= 0) return 2;
  g_self[n] = 0;
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(g_base, sizeof(g_base), "%s/race.XXXXXX", tmp);
  if (!mkdtemp(g_base)) return 2;
  for (int i = 0; i < kDirs; ++i) {
    char dir[4096], marker[4200];
    DirName(i, dir, sizeof(dir));
    snprintf(marker, sizeof(marker), "%s/marker", dir);
    mkdir(dir, 0755);
    FILE* f = fopen(marker, "we");
    if (!f) return 2;
    fputs(dir, f);
    fclose(f);
  }
  char d0[4096];
  DirName(0, d0, sizeof(d0));
  if (chdir(d0) != 0) return 2;
  umask(022);
  pthread_t t[64];
  if (threads < 1 || threads > 64) return 2;
  for (long i = 0; i < threads; ++i) pthread_create(&t[i], NULL, Worker, (void*)i);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  printf("children=%d failures=%d\n", atomic_load(&g_done), atomic_load(&g_failures));
  for (int i = 0; i < kDirs; ++i) {
    char dir[4096], marker[4200];
    DirName(i, dir, sizeof(dir));
    snprintf(marker, sizeof(marker), "%s/marker", dir);
    unlink(marker);
    rmdir(dir);
  }
  rmdir(g_base);
  return atomic_load(&g_failures) == 0 ? 0 : 1;
}
