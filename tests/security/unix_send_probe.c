// The guest half of UnixSendWall (unix_send_test.cc): tries to reach a host
// unix datagram socket at HOST_PATH with every call that can carry a socket
// address, and races a thread that flips a msghdr's address between a socket
// of the sandbox's own and HOST_PATH. Prints "name=OK n" or "name=ERRNO".
//
//   unix_send_probe HOST_PATH ROUNDS
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void report(const char* name, long rc) {
  if (rc < 0) {
    printf("%s=%s\n", name, strerrorname_np(errno));
  } else {
    printf("%s=OK %ld\n", name, rc);
  }
}

static socklen_t unix_addr(struct sockaddr_un* a, const char* path) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  strncpy(a->sun_path, path, sizeof(a->sun_path) - 1);
  return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

static long send_msg(int s, const char* path, int use_mmsg) {
  struct sockaddr_un a;
  socklen_t len = unix_addr(&a, path);
  char payload[] = "ESCAPED";
  struct iovec v = {payload, sizeof(payload) - 1};
  struct msghdr m = {.msg_name = &a, .msg_namelen = len, .msg_iov = &v, .msg_iovlen = 1};
  if (!use_mmsg) return sendmsg(s, &m, 0);
  struct mmsghdr mm[2] = {{.msg_hdr = m}, {.msg_hdr = m}};
  return sendmmsg(s, mm, 2, 0);
}

// The racer: flips the path in the shared address between the sandbox's
// own socket and the host's, as fast as it can.
static struct sockaddr_un race_addr;
static char own_path[108], host_path[108];
static atomic_int racing = 1;

static void* flipper(void* arg) {
  (void)arg;
  // Each name stays a while, so that both are read: a call that saw the
  // host's name must be refused, one that saw its own must be delivered.
  while (atomic_load(&racing)) {
    memcpy(race_addr.sun_path, host_path, sizeof(host_path));
    __asm__ volatile("" ::: "memory");  // the stores are the point: keep both
    for (volatile int i = 0; i < 2000; ++i) {
    }
    memcpy(race_addr.sun_path, own_path, sizeof(own_path));
    __asm__ volatile("" ::: "memory");
    for (volatile int i = 0; i < 2000; ++i) {
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* host = argv[1];
  int rounds = atoi(argv[2]);
  int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  report("socket_dgram", s);
  if (s < 0) return 0;
  report("sendmsg", send_msg(s, host, 0));
  report("sendmmsg", send_msg(s, host, 1));
  // The same path by other names: relative, through a symlink, through /proc.
  char dir[108];
  snprintf(dir, sizeof(dir), "%s", host);
  char* slash = strrchr(dir, '/');
  if (slash) {
    *slash = 0;
    if (chdir(dir) == 0) report("sendmsg_relative", send_msg(s, slash + 1, 0));
    if (chdir("/tmp") != 0) return 1;
  }
  if (symlink(host, "/tmp/link.sock") == 0)
    report("sendmsg_symlink", send_msg(s, "/tmp/link.sock", 0));
  char via_proc[160];
  snprintf(via_proc, sizeof(via_proc), "/proc/self/root%s", host);
  report("sendmsg_proc_root", send_msg(s, via_proc, 0));
  // A connect then a plain send: connect is the sentry's.
  struct sockaddr_un a;
  socklen_t len = unix_addr(&a, host);
  report("connect", connect(s, (struct sockaddr*)&a, len));

  // The race: the sentry must read the address once and send to what it read.
  int own = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  snprintf(own_path, sizeof(own_path), "/tmp/own.sock");
  snprintf(host_path, sizeof(host_path), "%s", host);
  len = unix_addr(&race_addr, own_path);
  if (bind(own, (struct sockaddr*)&race_addr, len) < 0) return 1;
  int tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  pthread_t t;
  pthread_create(&t, NULL, flipper, NULL);
  long delivered = 0, refused = 0, other = 0;
  char byte = 'R', buf[16];
  for (int i = 0; i < rounds; ++i) {
    struct iovec v = {&byte, 1};
    struct msghdr m = {
        .msg_name = &race_addr, .msg_namelen = sizeof(race_addr), .msg_iov = &v, .msg_iovlen = 1};
    if (sendmsg(tx, &m, 0) == 1) {
      while (recv(own, buf, sizeof(buf), 0) > 0) ++delivered;
    } else if (errno == ECONNREFUSED || errno == ENOENT || errno == ENOTDIR || errno == EACCES) {
      // A torn name (half of each) may name a missing path, a path through
      // a socket (ENOTDIR) or a host directory (EACCES: not writable).
      ++refused;
    } else {
      if (other++ == 0) printf("race_other_errno=%s\n", strerrorname_np(errno));
    }
  }
  atomic_store(&racing, 0);
  pthread_join(t, NULL);
  while (recv(own, buf, sizeof(buf), 0) > 0) ++delivered;
  printf("race_delivered=OK %ld\nrace_refused=OK %ld\nrace_other=OK %ld\n", delivered, refused,
         other);
  return 0;
}
