// The guest half of strace_compare_test: a fixed sequence of the syscalls the
// sentry answers (paths, flags, modes, structs, sockaddrs of three families,
// msghdr names, errors), a thread, forked children that exit, are killed and
// exec, run natively under `strace -f` and under `sentry run --trace`. Every
// result is deterministic, whoever runs it (root natively, uid 1000 inside).
//
// Usage: trace_probe DIR (DIR must not exist; it is made and left behind).
//        trace_probe --hostile: arguments built to make a decoder read too
//        much or fault (unterminated strings against an unreadable page,
//        huge counts and lengths, 200,000-entry argv and envp); prints each
//        call's errno, which must not change under --trace.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void* Thread(void* arg) {
  (void)arg;
  open("thread-file", O_RDONLY);
  return NULL;
}

static socklen_t UnixAddr(struct sockaddr_un* a, const char* path) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  strcpy(a->sun_path, path);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static void Files(const char* dir) {
  struct stat st;
  char buf[128];
  mkdir(dir, 0755);
  chdir(dir);
  int fd = open("f1", O_WRONLY | O_CREAT | O_TRUNC, 0640);
  write(fd, "hello", 5);
  fchmod(fd, 0600);
  close(fd);
  openat(AT_FDCWD, "missing", O_RDONLY | O_CLOEXEC);
  open("we\"ird\n\t\001name", O_RDWR | O_CREAT | O_EXCL | O_APPEND, 0600);
  access("f1", R_OK | W_OK);
  access("missing", X_OK);
  faccessat(AT_FDCWD, "f1", F_OK, 0);
  stat("f1", &st);
  lstat("missing", &st);
  mkdir("d", 0700);
  rename("f1", "d/f2");
  link("d/f2", "hl");
  symlink("d/f2", "sl");
  readlink("sl", buf, sizeof(buf));
  lstat("sl", &st);
  fstatat(AT_FDCWD, "sl", &st, AT_SYMLINK_NOFOLLOW);
  chmod("hl", 0604);
  truncate("hl", 3);
  unlink("hl");
  unlinkat(AT_FDCWD, "sl", 0);
  rmdir("d");
  unlinkat(AT_FDCWD, "d", AT_REMOVEDIR);
  getcwd(buf, sizeof(buf));
  struct timespec ts[2] = {{1, 0}, {0, UTIME_OMIT}};
  utimensat(AT_FDCWD, "d/f2", ts, 0);
  renameat2(AT_FDCWD, "d/f2", AT_FDCWD, "f3", RENAME_NOREPLACE);
  open("a-path-name-that-is-longer-than-thirty-two-bytes", O_RDONLY);
}

static void Sockets(void) {
  struct sockaddr_un ua;
  int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bind(srv, (struct sockaddr*)&ua, UnixAddr(&ua, "sock"));
  listen(srv, 1);
  int cli = socket(AF_UNIX, SOCK_STREAM, 0);
  connect(cli, (struct sockaddr*)&ua, UnixAddr(&ua, "sock"));
  connect(cli, (struct sockaddr*)&ua, UnixAddr(&ua, "no-such-sock"));

  int dg = socket(AF_UNIX, SOCK_DGRAM, 0);
  bind(dg, (struct sockaddr*)&ua, UnixAddr(&ua, "dg"));
  int tx = socket(AF_UNIX, SOCK_DGRAM, 0);
  sendto(tx, "hello\n", 6, 0, (struct sockaddr*)&ua, UnixAddr(&ua, "dg"));
  struct iovec iov = {"a message of more than thirty-two bytes", 39};
  struct msghdr m = {
      .msg_name = &ua, .msg_namelen = UnixAddr(&ua, "dg"), .msg_iov = &iov, .msg_iovlen = 1};
  sendmsg(tx, &m, MSG_DONTWAIT);

  struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(1)};
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int s4 = socket(AF_INET, SOCK_STREAM, 0);
  connect(s4, (struct sockaddr*)&in, sizeof(in));
  struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(1)};
  in6.sin6_addr = in6addr_loopback;
  int s6 = socket(AF_INET6, SOCK_STREAM, 0);
  connect(s6, (struct sockaddr*)&in6, sizeof(in6));
  close(s6);
  close(s4);
  close(tx);
  close(dg);
  close(cli);
  close(srv);
}

static void Processes(void) {
  pthread_t t;
  pthread_create(&t, NULL, Thread, NULL);
  pthread_join(t, NULL);

  pid_t child = fork();
  if (child == 0) {
    access("/child-was-here", F_OK);
    _exit(3);
  }
  waitpid(child, NULL, 0);

  child = fork();
  if (child == 0) {
    kill(getpid(), SIGKILL);
    _exit(0);
  }
  waitpid(child, NULL, 0);

  child = fork();
  if (child == 0) {
    char* argv[] = {"true", "two words", "an argument longer than thirty-two bytes", NULL};
    char* envp[] = {"A=1", "B=2", NULL};
    execve("/bin/true", argv, envp);
    _exit(127);
  }
  waitpid(child, NULL, 0);
}

static void Report(const char* what, long r) { printf("%s %ld %d\n", what, r, r < 0 ? errno : 0); }

static int Hostile(void) {
  long page = sysconf(_SC_PAGESIZE);
  char* two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (two == MAP_FAILED) return 1;
  mprotect(two + page, page, PROT_NONE);
  char* edge = two + page - 8;  // 8 bytes, no NUL, then the unreadable page
  memset(edge, 'x', 8);
  Report("open edge", open(edge, O_RDONLY));
  Report("stat edge", syscall(SYS_newfstatat, AT_FDCWD, edge, two, 0));
  Report("connect huge", syscall(SYS_connect, 0, edge, 0xffffffffUL));
  int dg = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct msghdr m = {.msg_name = edge,
                     .msg_namelen = 110,
                     .msg_iov = (struct iovec*)edge,
                     .msg_iovlen = (size_t)1 << 30,
                     .msg_control = edge,
                     .msg_controllen = (size_t)1 << 20};
  Report("sendmsg huge", sendmsg(dg, &m, 0));
  struct mmsghdr mm[2] = {{.msg_hdr = m}, {.msg_hdr = m}};
  Report("sendmmsg huge", syscall(SYS_sendmmsg, dg, mm, 1u << 30, 0));
  Report("getdents64 huge", syscall(SYS_getdents64, 0, edge, 1u << 31));
  enum { kMany = 200000 };
  char** many = calloc(kMany + 1, sizeof(char*));
  for (int i = 0; i < kMany; ++i) many[i] = edge;  // each one unterminated
  Report("execve many", execve("/nonexistent", many, many));
  Report("execve edge", execve(edge, many, many));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (strcmp(argv[1], "--hostile") == 0) return Hostile();
  // Only 0-2, as in the sandbox: fds a test runner leaks in would shift every
  // fd number natively.
  syscall(SYS_close_range, 3, ~0U, 0);
  access("/trace-probe-begin", F_OK);
  umask(022);
  Files(argv[1]);
  Sockets();
  Processes();
  access("/trace-probe-end", F_OK);
  return 0;
}
