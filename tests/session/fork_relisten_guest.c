// The guest of fork_relisten_test: a sandbox's process that forks as a
// session kernel does (FORK.md step 6: the gated clone, then its re-listen)
// and reports what it sees, one line per fact on stdout. The test holds the
// supervisor's control socket and decides what is granted.
//
//   fork_relisten_guest fork [WORK...]  prints "pid N", waits for a line on
//       stdin, forks once with the fork's flags (the child _exits at once, if
//       it ever runs), re-listens, and reports the pid walls; runs each WORK
//       (a shell command line, through /bin/sh -c) before and after.
//   fork_relisten_guest race            as fork, with threads that call the
//       sentry meanwhile (one waits in a FIFO's open, one re-listens on its
//       own, two loop on trapped calls) during the quiesce.
//   fork_relisten_guest unprepared      a fork clone and a re-listen without
//       a prepare.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORK_FLAGS                                                                           \
  (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS | \
   SIGCHLD)

static struct sock_filter room[BPF_MAXINSNS];

static long Relisten(void) {
  for (int i = 0; i < BPF_MAXINSNS; ++i) {
    room[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  }
  struct sock_fprog offer = {BPF_MAXINSNS, room};
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &offer);
}

static int Err(long r) { return r < 0 ? errno : 0; }

static int LowestFreeFd(void) {
  int fd = dup(0);
  if (fd >= 0) close(fd);
  return fd;
}

static void Work(int argc, char** argv, int first, const char* when) {
  for (int i = first; i < argc; ++i) {
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
      execl("/bin/sh", "sh", "-c", argv[i], (char*)NULL);
      _exit(127);
    }
    int status = 0;
    waitpid(p, &status, 0);
    printf("work %s %d rc=%d\n", when, i - first, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
  }
}

// The racing threads.
static atomic_int g_stop, g_errors, g_first_error, g_calls, g_own_relisten = -1, g_fifo_open = -1;
static const char* g_fifo = "/tmp/relisten-fifo";

// Counts a failed call; the first one's errno and call (1 getcwd, 2 open,
// 3 kill) are reported.
static void Failed(int which) {
  int e = errno;
  if (atomic_fetch_add(&g_errors, 1) == 0) atomic_store(&g_first_error, which * 1000 + e);
}

static void* Caller(void* arg) {
  (void)arg;
  char buf[256];
  while (!atomic_load(&g_stop)) {
    // getcwd and an open of a lower file: both answered by the sentry.
    if (syscall(SYS_getcwd, buf, sizeof(buf)) < 0) Failed(1);
    int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      Failed(2);
    } else {
      close(fd);
    }
    atomic_fetch_add(&g_calls, 1);
  }
  return NULL;
}

static atomic_int g_signals;
static void OnUsr1(int sig) {
  (void)sig;
  atomic_fetch_add(&g_signals, 1);
}

static void* Signaller(void* arg) {
  (void)arg;
  // Signals to the process while its tasks are stopped and resumed.
  while (!atomic_load(&g_stop)) {
    if (kill(getpid(), SIGUSR1) != 0) Failed(3);
    usleep(200);
  }
  return NULL;
}

static void* OwnRelisten(void* arg) {
  (void)arg;
  // Another thread's re-listen while the prepared one's is under way.
  usleep(1000);
  atomic_store(&g_own_relisten, Err(Relisten()));
  return NULL;
}

static atomic_int g_reader_done;

static void* FifoReader(void* arg) {
  (void)arg;
  // Waits in the sentry (a late call) until a writer opens; then reads the
  // writer's byte (reopening after an end without it: a writer may have
  // met the read end of the interrupted call, which the sentry let go).
  int got = 0, err = 0;
  for (int i = 0; i < 400 && !got && !err; ++i) {
    int fd = open(g_fifo, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      break;
    }
    char c;
    got = read(fd, &c, 1) == 1;
    close(fd);
  }
  atomic_store(&g_fifo_open, got ? 0 : err ? err : -1);
  atomic_store(&g_reader_done, 1);
  return NULL;
}

static int Unprepared(void) {
  long c = syscall(SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
  if (c == 0) _exit(0);
  printf("clone %d\n", Err(c));
  printf("relisten %d\n", Err(Relisten()));
  printf("kill_self %d\n", Err(kill(getpid(), 0)));
  return 0;
}

// A sandbox that may not fork: with a second process ("busy"), or a filter
// chain 16 deep ("deep"). Prints its pid and waits for a line.
static int Unforkable(int deep) {
  pid_t other = -1;
  if (deep) {
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {1, &allow};
    for (int i = 0; i < 16; ++i) {
      if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return 5;
    }
  } else {
    other = fork();
    if (other == 0) {
      pause();
      _exit(0);
    }
  }
  printf("pid %d\n", getpid());
  char line[64];
  if (!fgets(line, sizeof(line), stdin)) return 4;
  if (other > 0) kill(other, SIGKILL);
  printf("done\n");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) return 2;
  if (strcmp(argv[1], "unprepared") == 0) return Unprepared();
  if (strcmp(argv[1], "busy") == 0) return Unforkable(0);
  if (strcmp(argv[1], "deep") == 0) return Unforkable(1);
  int race = strcmp(argv[1], "race") == 0;
  Work(argc, argv, 2, "before");
  pthread_t callers[2], own, reader, signaller;
  if (race) {
    unlink(g_fifo);
    if (mkfifo(g_fifo, 0600) != 0) return 3;
    pthread_create(&reader, NULL, FifoReader, NULL);
    for (int i = 0; i < 2; ++i) pthread_create(&callers[i], NULL, Caller, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnUsr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_create(&signaller, NULL, Signaller, NULL);
  }
  printf("pid %d\n", getpid());
  char line[64];
  if (!fgets(line, sizeof(line), stdin)) return 4;
  if (race) pthread_create(&own, NULL, OwnRelisten, NULL);

  int live = strcmp(argv[1], "live") == 0;
  long c = syscall(SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
  if (c == 0) {
    // Runs only once handed to its own supervisor (mode "live"): it waits.
    if (live) {
      for (;;) pause();
    }
    _exit(0);
  }
  printf("clone %d\n", Err(c));
  int free_before = LowestFreeFd();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long r = Relisten();
  int relisten_err = r < 0 ? errno : (int)r;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("relisten %d\n", relisten_err);
  printf("relisten_us %ld\n", (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
  printf("no_new_fd %d\n", LowestFreeFd() == free_before ? 0 : 1);
  if (live && c > 0) {
    // The child lives under its own supervisor: the parent's widest kills.
    printf("kill_child %d\n", Err(kill((pid_t)c, SIGKILL)));
    printf("kill_all %d\n", Err(kill(-1, SIGKILL)));
    printf("kill_own_group %d\n", Err(kill(0, SIGCONT)));
    printf("killed\n");
    char again[64];
    if (!fgets(again, sizeof(again), stdin)) return 4;
    printf("done\n");
    return 0;
  }
  if (c > 0) {
    // The walls between parent and child: the child (killed at the end of
    // the re-listen, a zombie until reaped here) is no process of the
    // sandbox's, though natively the parent may name it.
    printf("kill_child %d\n", Err(kill((pid_t)c, 0)));
    printf("kill_all %d\n", Err(kill(-1, 0)));
    printf("kill_group %d\n", Err(kill(-getpgid(0), 0)));
    printf("kill_own_group %d\n", Err(kill(0, 0)));
    printf("getpgid_child %d\n", Err(getpgid((pid_t)c)));
    printf("kill_self %d\n", Err(kill(getpid(), 0)));
    int status = 0;
    pid_t w = waitpid((pid_t)c, &status, __WALL);
    printf("reaped %d\n", w == c && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 1);
  }
  printf("relisten_again %d\n", Err(Relisten()));
  if (race) {
    pthread_join(own, NULL);
    printf("own_relisten %d\n", atomic_load(&g_own_relisten));
    // The FIFO's reader waited in the old listener; its open restarted under
    // the new one and completes now that a writer comes.
    // Writers until the reader has its byte: each opens without waiting
    // (ENXIO while no reader waits) and writes one.
    signal(SIGPIPE, SIG_IGN);
    int writer_errors = 0;
    for (int i = 0; i < 2000 && !atomic_load(&g_reader_done); ++i) {
      int w = open(g_fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (w >= 0) {
        if (write(w, "x", 1) != 1 && errno != EPIPE && errno != EAGAIN) ++writer_errors;
        close(w);
      } else if (errno != ENXIO) {
        ++writer_errors;
      }
      usleep(1000);
    }
    printf("fifo_writer %d\n", writer_errors);
    pthread_join(reader, NULL);
    printf("fifo_open %d\n", atomic_load(&g_fifo_open));
    int before = atomic_load(&g_calls);
    usleep(20000);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 2; ++i) pthread_join(callers[i], NULL);
    pthread_join(signaller, NULL);
    printf("calls_after %d\n", atomic_load(&g_calls) > before ? 0 : 1);
    printf("signals_seen %d\n", atomic_load(&g_signals) > 0 ? 0 : 1);
    printf("call_errors %d\n", atomic_load(&g_errors));
    printf("first_error %d\n", atomic_load(&g_first_error));
  }
  Work(argc, argv, 2, "after");
  printf("done\n");
  return 0;
}
