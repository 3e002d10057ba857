// escape_probe: the guest side of the security suite. It is copied into the
// sandbox (--copy HOST:/tmp/probe) and run there; each subcommand tries one
// family of attacks and prints one line per attempt, "name=RESULT", where
// RESULT is "OK" (the call succeeded) or the errno's name (EPERM, ENOENT...).
// The test on the host parses these lines and compares them with what the
// syscall table and the VFS must answer.
//
//   probe syscalls                  every dangerous syscall once
//   probe x32 | int80               must be killed by SIGSYS (never returns)
//   probe tiocsti                   TIOCSTI on stdin
//   probe identity HOSTPID          uid, capabilities, no_new_privs, kill(HOSTPID)
//   probe net PORT ADDR...          sockets and connects
//   probe toctou ITER FILE          racing swaps against a host canary path
//   probe dirfd                     donated lower-file fds used as dirfds
//   probe dirops                    directory fds with fd-based syscalls
//   probe seccomp                   the guest's own seccomp listener
//   probe flock PATH SECONDS        flock a lower file, then sleep
//   probe efault                    bad pointers in trapped syscalls
//   probe fds                       the fds open at start
//   probe untraced                  a CLONE_UNTRACED child: open, execve, the fork gate
//   probe forkgate                  the fork gate from two threads; forks that must work
//   probe unix ABS_STREAM ABS_DGRAM PATH   the host's AF_UNIX sockets
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif
#define SYS_statmount_nr 457
#define SYS_listmount_nr 458

// A session fork's clone flags (syscalls/fork_gate.h): they stop at the
// sentry's fork gate, which refuses them without a grant of the server's.
#define FORK_FLAGS                                                                           \
  (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS | \
   SIGCHLD)

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

static void Result(const char* name, long rc, int err) {
  if (rc >= 0) {
    printf("%s=OK\n", name);
  } else {
    const char* en = strerrorname_np(err);
    if (en) {
      printf("%s=%s\n", name, en);
    } else {
      printf("%s=E%d\n", name, err);
    }
  }
  fflush(stdout);
}

// Runs a raw syscall and prints its outcome. A call that unexpectedly created a
// child (clone) makes the child leave at once.
// Evaluates expr, then reads errno (a function's arguments have no order).
#define CHECK(name, expr)    \
  do {                       \
    errno = 0;               \
    long r_ = (long)(expr);  \
    Result(name, r_, errno); \
  } while (0)
// As CHECK, for a call that returns an fd: closes it.
#define CHECK_FD(name, expr)  \
  do {                        \
    errno = 0;                \
    int fd_ = (int)(expr);    \
    Result(name, fd_, errno); \
    if (fd_ >= 0) close(fd_); \
  } while (0)

#define TRY(name, ...)                          \
  do {                                          \
    errno = 0;                                  \
    long rc_ = syscall(__VA_ARGS__);            \
    int err_ = errno;                           \
    if (rc_ == 0 && getpid() != self) _exit(0); \
    Result(name, rc_, err_);                    \
  } while (0)

static int Syscalls(void) {
  pid_t self = getpid();
  char buf[256] = {0};
  struct iovec local = {buf, sizeof(buf)};
  struct iovec remote = {buf, sizeof(buf)};

  // Process and memory inspection of others.
  TRY("io_uring_setup", SYS_io_uring_setup, 8, buf);
  TRY("ptrace_traceme", SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
  TRY("ptrace_attach_1", SYS_ptrace, 16 /* PTRACE_ATTACH */, 1, 0, 0);
  TRY("ptrace_seize_1", SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, 1, 0, 0);
  TRY("process_vm_readv", SYS_process_vm_readv, 1, &local, 1, &remote, 1, 0);
  TRY("process_vm_writev", SYS_process_vm_writev, 1, &local, 1, &remote, 1, 0);
  TRY("kcmp", SYS_kcmp, self, 1, 0 /* KCMP_FILE */, 0, 0);
  TRY("process_madvise", SYS_process_madvise, 0, &local, 1, 0, 0);
  TRY("process_mrelease", SYS_process_mrelease, 0, 0);
  long pidfd = syscall(SYS_pidfd_open, self, 0);
  Result("pidfd_open_self", pidfd, errno);
  TRY("pidfd_getfd", SYS_pidfd_getfd, pidfd < 0 ? 0 : pidfd, 0, 0);
  TRY("pidfd_open_1", SYS_pidfd_open, 1, 0);

  // File handles: reach any inode of a filesystem, bypassing paths.
  struct {
    unsigned int handle_bytes;
    int handle_type;
    unsigned char f_handle[128];
  } fh = {128, 0, {0}};
  int mount_id = 0;
  TRY("name_to_handle_at", SYS_name_to_handle_at, AT_FDCWD, "/usr", &fh, &mount_id, 0);
  TRY("open_by_handle_at", SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY);

  // Mounts and namespaces.
  TRY("mount", SYS_mount, "none", "/tmp", "tmpfs", 0, 0);
  TRY("mount_bind", SYS_mount, "/usr", "/tmp", 0, MS_BIND, 0);
  TRY("umount2", SYS_umount2, "/usr", MNT_DETACH);
  TRY("pivot_root", SYS_pivot_root, "/tmp", "/tmp");
  TRY("chroot", SYS_chroot, "/tmp");
  TRY("unshare_newuser", SYS_unshare, CLONE_NEWUSER);
  TRY("unshare_newns", SYS_unshare, CLONE_NEWNS);
  TRY("setns", SYS_setns, 0, 0);
  TRY("clone_newuser", SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  TRY("clone_newns", SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
  TRY("clone_newpid", SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
  TRY("clone_newnet", SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
  TRY("clone_fork_flags", SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
  TRY("clone_fork_flags_high_bits", SYS_clone, (1ul << 40) | FORK_FLAGS, 0, 0, 0, 0);
  TRY("clone_fork_flags_newcgroup", SYS_clone, FORK_FLAGS | CLONE_NEWCGROUP, 0, 0, 0, 0);
  TRY("clone_fork_flags_sigusr1", SYS_clone, (FORK_FLAGS & ~0xff) | SIGUSR1, 0, 0, 0, 0);
  {
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog own = {1, &allow};
    TRY("seccomp_listener", SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
        &own);
    TRY("seccomp_listener_tsync", SYS_seccomp, SECCOMP_SET_MODE_FILTER,
        SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC, &own);
  }
  uint64_t clone_args[11] = {CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0};
  TRY("clone3", SYS_clone3, clone_args, 88);
  TRY("open_tree", SYS_open_tree, AT_FDCWD, "/usr", 1 /* OPEN_TREE_CLONE */);
  TRY("move_mount", SYS_move_mount, AT_FDCWD, "/usr", AT_FDCWD, "/tmp", 0);
  TRY("fsopen", SYS_fsopen, "tmpfs", 0);
  TRY("fsmount", SYS_fsmount, 0, 0, 0);
  TRY("fspick", SYS_fspick, AT_FDCWD, "/usr", 0);
  TRY("mount_setattr", SYS_mount_setattr, AT_FDCWD, "/usr", 0, buf, 32);
  TRY("statmount", SYS_statmount_nr, buf, buf, sizeof(buf), 0);
  TRY("listmount", SYS_listmount_nr, buf, buf, 8, 0);

  // The kernel itself.
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  TRY("bpf", SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
  struct perf_event_attr pe;
  memset(&pe, 0, sizeof(pe));
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof(pe);
  pe.config = PERF_COUNT_SW_CPU_CLOCK;
  TRY("perf_event_open", SYS_perf_event_open, &pe, 0, -1, -1, 0);
  TRY("userfaultfd", SYS_userfaultfd, 0);
  TRY("kexec_load", SYS_kexec_load, 0, 0, 0, 0);
  TRY("kexec_file_load", SYS_kexec_file_load, -1, -1, 0, "", 0);
  TRY("init_module", SYS_init_module, buf, 0, "");
  TRY("finit_module", SYS_finit_module, 0, "", 0);
  TRY("delete_module", SYS_delete_module, "ext4", 0);
  TRY("keyctl", SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  TRY("add_key", SYS_add_key, "user", "sentry-test", "x", 1, KEY_SPEC_PROCESS_KEYRING);
  TRY("request_key", SYS_request_key, "user", "sentry-test", 0, KEY_SPEC_PROCESS_KEYRING);
  TRY("personality_read_implies_exec", SYS_personality, READ_IMPLIES_EXEC);
  TRY("personality_linux32", SYS_personality, PER_LINUX32);
  TRY("personality_query", SYS_personality, 0xffffffff);
  TRY("iopl", SYS_iopl, 3);
  TRY("ioperm", SYS_ioperm, 0x80, 1, 1);
  TRY("syslog", SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf));
  TRY("acct", SYS_acct, "/tmp/acct");
  TRY("swapon", SYS_swapon, "/tmp/swap", 0);
  TRY("reboot", SYS_reboot, 0, 0, 0, 0);  // bad magic: harmless even if it ran
  TRY("sethostname", SYS_sethostname, "pwned", 5);
  TRY("setdomainname", SYS_setdomainname, "pwned", 5);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  TRY("clock_settime", SYS_clock_settime, CLOCK_REALTIME, &now);
  TRY("settimeofday", SYS_settimeofday, 0, 0);
  char timex[256] = {0};  // struct timex with modes = 0: a read, were it allowed
  TRY("adjtimex", SYS_adjtimex, timex);
  TRY("vhangup", SYS_vhangup);
  TRY("fanotify_init", SYS_fanotify_init, 0, 0);
  TRY("quotactl", SYS_quotactl, 0, "/dev/sda", 0, 0);
  TRY("lookup_dcookie", SYS_lookup_dcookie, 0, buf, sizeof(buf));
  TRY("migrate_pages", SYS_migrate_pages, 1, 8, buf, buf);
  TRY("move_pages", SYS_move_pages, 1, 0, 0, 0, 0, 0);
  TRY("memfd_secret", SYS_memfd_secret, 0);
  TRY("modify_ldt", SYS_modify_ldt, 0, buf, sizeof(buf));
  TRY("set_thread_area", SYS_set_thread_area, buf);
  TRY("uselib", SYS_uselib, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  TRY("landlock_create_ruleset", SYS_landlock_create_ruleset, 0, 0, 1);
  TRY("unknown_500", 500);

  // Argument-filtered natives.
  TRY("prctl_set_mm", SYS_prctl, PR_SET_MM, PR_SET_MM_START_CODE, 0, 0, 0);
  TRY("prctl_set_securebits", SYS_prctl, PR_SET_SECUREBITS, 0, 0, 0, 0);
  TRY("prctl_capbset_drop", SYS_prctl, PR_CAPBSET_DROP, 0, 0, 0, 0);
  TRY("prctl_get_no_new_privs", SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  TRY("ioctl_tiocsti", SYS_ioctl, 0, TIOCSTI, "x");
  TRY("ioctl_tioclinux", SYS_ioctl, 0, TIOCLINUX, buf);
  TRY("ioctl_tiocsctty", SYS_ioctl, 0, TIOCSCTTY, 1);
  TRY("ioctl_seccomp_recv", SYS_ioctl, 0, SECCOMP_IOCTL_NOTIF_RECV, buf);
  TRY("setpriority_user", SYS_setpriority, PRIO_USER, 0, 19);
  TRY("ioprio_set_user", SYS_ioprio_set, 3 /* IOPRIO_WHO_USER */, 0, 0);
  TRY("socket_packet", SYS_socket, AF_PACKET, SOCK_RAW, 0);
  TRY("socket_netlink", SYS_socket, AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */);
  TRY("socket_vsock", SYS_socket, AF_VSOCK, SOCK_STREAM, 0);
  TRY("socket_alg", SYS_socket, AF_ALG, SOCK_SEQPACKET, 0);
  TRY("socket_inet_raw", SYS_socket, AF_INET, SOCK_RAW, IPPROTO_ICMP);

  // Device nodes would be a way to the host's disks and memory.
  TRY("mknod_chr", SYS_mknod, "/tmp/mem", S_IFCHR | 0666, makedev(1, 1));
  TRY("mknod_blk", SYS_mknod, "/tmp/sda", S_IFBLK | 0666, makedev(8, 0));
  printf("done=OK\n");
  return 0;
}

// A 64-bit syscall number with the x32 bit: the filter must kill the process.
static int X32(void) {
  syscall(0x40000000 | SYS_getpid);
  printf("x32=survived\n");
  return 0;
}

// The 32-bit ABI through int 0x80 (getpid is 20 there): killed as well.
static int Int80(void) {
  long ret = 20;
  __asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
  printf("int80=survived %ld\n", ret);
  return 0;
}

static int Tiocsti(void) {
  const char* text = "echo INJECTED\n";
  int ok = 0, last_err = 0;
  for (const char* p = text; *p; ++p) {
    if (ioctl(0, TIOCSTI, p) == 0) {
      ++ok;
    } else {
      last_err = errno;
    }
  }
  Result("tiocsti", ok ? 0 : -1, last_err);
  printf("tiocsti_injected=%d\n", ok);
  printf("isatty0=%s\n", isatty(0) ? "OK" : "ENOTTY");
  return 0;
}

static int Identity(pid_t host_pid) {
  printf("uid=%d\neuid=%d\ngid=%d\npid=%d\nppid=%d\n", getuid(), geteuid(), getgid(), getpid(),
         getppid());
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0xff, sizeof(data));
  if (syscall(SYS_capget, &hdr, data) == 0) {
    unsigned long long eff = data[0].effective | ((unsigned long long)data[1].effective << 32);
    unsigned long long prm = data[0].permitted | ((unsigned long long)data[1].permitted << 32);
    unsigned long long inh = data[0].inheritable | ((unsigned long long)data[1].inheritable << 32);
    printf("cap_eff=%llx\ncap_prm=%llx\ncap_inh=%llx\n", eff, prm, inh);
  } else {
    printf("capget=%s\n", strerrorname_np(errno));
  }
  for (int cap = 0; cap <= 40; ++cap) {
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1) printf("capbset_has=%d\n", cap);
  }
  printf("no_new_privs=%d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  struct utsname u;
  uname(&u);
  printf("hostname=%s\n", u.nodename);
  CHECK("kill_hostpid_0", kill(host_pid, 0));
  CHECK("kill_hostpid_cont", kill(host_pid, SIGCONT));
  CHECK("pidfd_open_hostpid", syscall(SYS_pidfd_open, host_pid, 0));
  CHECK("setpriority_hostpid", setpriority(PRIO_PROCESS, host_pid, 19));
  struct rlimit rl;
  CHECK("prlimit_hostpid", prlimit(host_pid, RLIMIT_NOFILE, NULL, &rl));
  CHECK("sched_getaffinity_hostpid", syscall(SYS_sched_getaffinity, host_pid, 128, &rl));
  CHECK("setuid_0", setuid(0));
  CHECK("setgroups_0", setgroups(0, NULL));
  return 0;
}

static void TryConnect(const char* name, int family, int type, const char* addr, int port) {
  int s = socket(family, type | SOCK_CLOEXEC, 0);
  if (s < 0) {
    Result(name, -1, errno);
    return;
  }
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  socklen_t len;
  if (family == AF_INET) {
    struct sockaddr_in* in = (struct sockaddr_in*)&ss;
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    inet_pton(AF_INET, addr, &in->sin_addr);
    len = sizeof(*in);
  } else {
    struct sockaddr_in6* in6 = (struct sockaddr_in6*)&ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    inet_pton(AF_INET6, addr, &in6->sin6_addr);
    len = sizeof(*in6);
  }
  int rc = connect(s, (struct sockaddr*)&ss, len);
  int err = errno;
  if (rc == 0 && type == SOCK_DGRAM) {
    // A datagram "connect" only sets the peer: the send is the real test.
    rc = (int)send(s, "escape", 6, 0);
    err = errno;
  }
  Result(name, rc, err);
  close(s);
}

static int Net(int argc, char** argv) {
  int port = atoi(argv[0]);
  TryConnect("tcp_host_loopback", AF_INET, SOCK_STREAM, "127.0.0.1", port);
  TryConnect("tcp6_host_loopback", AF_INET6, SOCK_STREAM, "::1", port);
  TryConnect("udp_host_loopback", AF_INET, SOCK_DGRAM, "127.0.0.1", port);
  TryConnect("tcp_dns", AF_INET, SOCK_STREAM, "8.8.8.8", 53);
  TryConnect("udp_dns", AF_INET, SOCK_DGRAM, "8.8.8.8", 53);
  TryConnect("tcp_metadata", AF_INET, SOCK_STREAM, "169.254.169.254", 80);
  TryConnect("tcp6_dns", AF_INET6, SOCK_STREAM, "2001:4860:4860::8888", 53);
  for (int i = 1; i < argc; ++i) {
    char name[128];
    snprintf(name, sizeof(name), "tcp_host_addr_%d", i);
    TryConnect(name, strchr(argv[i], ':') ? AF_INET6 : AF_INET, SOCK_STREAM, argv[i], port);
  }
  // sendto is native (wall 2): the datagram must not leave the sandbox's netns.
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in to = {0};
  to.sin_family = AF_INET;
  to.sin_port = htons(53);
  inet_pton(AF_INET, "8.8.8.8", &to.sin_addr);
  CHECK("sendto_dns", sendto(s, "x", 1, 0, (struct sockaddr*)&to, sizeof(to)));
  close(s);
  CHECK("socket_packet", socket(AF_PACKET, SOCK_RAW, 0));
  CHECK("socket_netlink_route", socket(AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */));
  return 0;
}

// AF_UNIX: the host's abstract sockets (per network namespace) and pathname
// sockets (resolved by the kernel in the sentry's or the guest's mount view)
// must both be out of reach.
static void UnixTry(const char* name, int type, const char* path, int abstract, int use_sendto) {
  int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (s < 0) {
    Result(name, -1, errno);
    return;
  }
  struct sockaddr_un {
    sa_family_t sun_family;
    char sun_path[108];
  } a;
  memset(&a, 0, sizeof(a));
  a.sun_family = AF_UNIX;
  size_t len = strlen(path);
  if (len > 100) len = 100;
  memcpy(a.sun_path + (abstract ? 1 : 0), path, len);
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (abstract ? 1 : 0));
  if (use_sendto) {
    CHECK(name, sendto(s, "escape", 6, 0, (struct sockaddr*)&a, alen));
  } else {
    CHECK(name, connect(s, (struct sockaddr*)&a, alen));
  }
  close(s);
}

static int Unix(const char* abstract_stream, const char* abstract_dgram, const char* path) {
  UnixTry("abstract_stream", SOCK_STREAM, abstract_stream, 1, 0);
  UnixTry("abstract_dgram_connect", SOCK_DGRAM, abstract_dgram, 1, 0);
  UnixTry("abstract_dgram_sendto", SOCK_DGRAM, abstract_dgram, 1, 1);
  UnixTry("path_stream", SOCK_STREAM, path, 0, 0);
  UnixTry("path_dgram_sendto", SOCK_DGRAM, path, 0, 1);
  return 0;
}

// --- TOCTOU ---

static atomic_int g_stop;
static const char* g_target_file;  // host path of the canary file
static char g_target_dir[2048];    // its directory
static char g_target_base[256];    // its name
static char g_path_buf[4096];      // flipped between a benign and a host path

static void WriteFile(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    printf("setup_%s=%s\n", path, strerrorname_np(errno));
    exit(2);
  }
  ssize_t n = write(fd, text, strlen(text));
  (void)n;
  close(fd);
}

// Swaps /tmp/race/f between a file and a symlink to the canary, /tmp/race/d
// between a directory and symlinks (absolute and relative) to the canary's
// directory. RENAME_EXCHANGE where the VFS has it, plain rename-over if not.
static void* Swapper(void* arg) {
  (void)arg;
  unsigned long swaps = 0;
  while (!atomic_load(&g_stop)) {
    if (syscall(SYS_renameat2, AT_FDCWD, "/tmp/race/f", AT_FDCWD, "/tmp/race/f_alt",
                2 /* RENAME_EXCHANGE */) != 0) {
      rename("/tmp/race/f", "/tmp/race/f_tmp");
      rename("/tmp/race/f_alt", "/tmp/race/f");
      rename("/tmp/race/f_tmp", "/tmp/race/f_alt");
    }
    const char* alt = (swaps & 1) ? "/tmp/race/d_abs" : "/tmp/race/d_rel";
    if (syscall(SYS_renameat2, AT_FDCWD, "/tmp/race/d", AT_FDCWD, alt, 2) != 0) {
      rename("/tmp/race/d", "/tmp/race/d_tmp");
      rename(alt, "/tmp/race/d");
      rename("/tmp/race/d_tmp", alt);
    }
    ++swaps;
  }
  printf("swaps=%lu\n", swaps);
  return NULL;
}

// Flips a path buffer under a thread that passes it to open(): the sentry must
// read the path once.
static void* Flipper(void* arg) {
  (void)arg;
  char benign[4096], host[4096];
  snprintf(benign, sizeof(benign), "/tmp/race/benign");
  snprintf(host, sizeof(host), "%s", g_target_file);
  while (!atomic_load(&g_stop)) {
    memcpy(g_path_buf, host, strlen(host) + 1);
    memcpy(g_path_buf, benign, strlen(benign) + 1);
  }
  return NULL;
}

static int ReadOnce(const char* path, long* opened, long* failed, long* leaks) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ++*failed;
    return 0;
  }
  ++*opened;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n < 0) n = 0;
  buf[n] = '\0';
  if (strcmp(buf, "benign") != 0 && n > 0) {
    ++*leaks;
    // Print what was read: the host test greps for the canary's secret.
    printf("LEAK path=%s content=%s\n", path, buf);
    return 1;
  }
  return 0;
}

static int Toctou(int iterations, const char* target) {
  g_target_file = target;
  snprintf(g_target_dir, sizeof(g_target_dir), "%s", target);
  char* slash = strrchr(g_target_dir, '/');
  if (!slash) return 2;
  snprintf(g_target_base, sizeof(g_target_base), "%s", slash + 1);
  *slash = '\0';
  mkdir("/tmp/race", 0755);
  WriteFile("/tmp/race/benign", "benign");
  WriteFile("/tmp/race/f", "benign");
  if (symlink(target, "/tmp/race/f_alt") != 0) return 2;
  mkdir("/tmp/race/d", 0755);
  char inner[4096];
  snprintf(inner, sizeof(inner), "/tmp/race/d/%s", g_target_base);
  WriteFile(inner, "benign");
  if (symlink(g_target_dir, "/tmp/race/d_abs") != 0) return 2;
  char rel[4200];
  snprintf(rel, sizeof(rel), "../../../../../../../..%s", g_target_dir);
  if (symlink(rel, "/tmp/race/d_rel") != 0) return 2;
  memcpy(g_path_buf, "/tmp/race/benign", sizeof("/tmp/race/benign"));

  pthread_t swapper, flipper;
  pthread_create(&swapper, NULL, Swapper, NULL);
  pthread_create(&flipper, NULL, Flipper, NULL);
  long opened = 0, failed = 0, leaks = 0;
  for (int i = 0; i < iterations; ++i) {
    ReadOnce("/tmp/race/f", &opened, &failed, &leaks);
    ReadOnce(inner, &opened, &failed, &leaks);
    ReadOnce(g_path_buf, &opened, &failed, &leaks);
  }
  atomic_store(&g_stop, 1);
  pthread_join(swapper, NULL);
  pthread_join(flipper, NULL);
  printf("opened=%ld\nfailed=%ld\nleaks=%ld\n", opened, failed, leaks);
  return 0;
}

// --- fds as directories ---

static int Dirfd(void) {
  int env = open("/usr/bin/env", O_RDONLY | O_CLOEXEC);
  if (env < 0) {
    printf("open_env=%s\n", strerrorname_np(errno));
    return 2;
  }
  struct stat st;
  char buf[4096];
  CHECK_FD("openat_dotdot", openat(env, "..", O_RDONLY));
  CHECK_FD("openat_dotdot_shadow", openat(env, "../../etc/shadow", O_RDONLY));
  CHECK_FD("openat_dotdot_root", openat(env, "../../../../root", O_RDONLY));
  CHECK("fstatat_dotdot", fstatat(env, "..", &st, 0));
  CHECK("fstatat_dot", fstatat(env, ".", &st, 0));
  CHECK("readlinkat_dotdot", readlinkat(env, "..", buf, sizeof(buf)));
  CHECK("mkdirat_env", mkdirat(env, "x", 0755));
  CHECK("fchdir_env", fchdir(env));
  char devfd[64];
  snprintf(devfd, sizeof(devfd), "/dev/fd/%d/..", env);
  CHECK_FD("devfd_dotdot", open(devfd, O_RDONLY));
  snprintf(devfd, sizeof(devfd), "/proc/self/fd/%d/..", env);
  CHECK_FD("procfd_dotdot", open(devfd, O_RDONLY));
  snprintf(devfd, sizeof(devfd), "/proc/self/fd/%d/../../etc/shadow", env);
  CHECK_FD("procfd_shadow", open(devfd, O_RDONLY));

  int opath = open("/usr/bin/env", O_PATH | O_CLOEXEC);
  Result("opath_open", opath, errno);
  CHECK_FD("opath_openat_dotdot", openat(opath, "..", O_RDONLY));
  CHECK_FD("opath_openat_shadow", openat(opath, "../../etc/shadow", O_RDONLY));
  CHECK("opath_fstatat_dotdot", fstatat(opath, "..", &st, 0));
  CHECK("opath_readlinkat_dotdot", readlinkat(opath, "..", buf, sizeof(buf)));
  CHECK("opath_fchdir", fchdir(opath));

  int usr = open("/usr", O_PATH | O_DIRECTORY | O_CLOEXEC);
  Result("opath_usr", usr, errno);
  CHECK_FD("opath_usr_work", openat(usr, "../work", O_RDONLY));
  CHECK_FD("opath_usr_shadow", openat(usr, "../etc/shadow", O_RDONLY));
  CHECK_FD("opath_usr_deep", openat(usr, "../../../../../../work", O_RDONLY));
  uint64_t how[3] = {O_RDONLY, 0, 0x08 /* RESOLVE_BENEATH */};
  CHECK_FD("openat2_beneath_dotdot", syscall(SYS_openat2, usr, "../etc/passwd", how, 24));
  how[2] = 0x10; /* RESOLVE_IN_ROOT */
  CHECK_FD("openat2_in_root_work", syscall(SYS_openat2, usr, "../../../work", how, 24));
  // A directory fd used with the guest's own (pipe) fd numbers as dirfds.
  int p[2];
  if (pipe(p) == 0) {
    CHECK_FD("pipe_dirfd", openat(p[0], "..", O_RDONLY));
    CHECK("pipe_fchdir", fchdir(p[0]));
  }
  return 0;
}

static int ListNames(int fd, char* out, size_t cap) {
  char buf[8192];
  size_t used = 0;
  out[0] = '\0';
  while (1) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n < 0) return -errno;
    if (n == 0) break;
    for (long off = 0; off < n;) {
      unsigned short reclen = *(unsigned short*)(buf + off + 16);
      const char* name = buf + off + 19;
      size_t len = strlen(name);
      if (used + len + 2 < cap) {
        memcpy(out + used, name, len);
        used += len;
        out[used++] = ',';
        out[used] = '\0';
      }
      off += reclen;
    }
  }
  return 0;
}

static int Dirops(void) {
  static char names[1 << 16];
  mkdir("/tmp/mine", 0755);
  WriteFile("/tmp/mine/only-in-sandbox", "x");
  int mine = open("/tmp/mine", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = ListNames(mine, names, sizeof(names));
  printf("list_mine=%s\n", rc == 0 ? names : strerrorname_np(-rc));

  int usr = open("/usr", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  Result("open_usr", usr, errno);
  rc = ListNames(usr, names, sizeof(names));
  printf("list_usr=%s\n", rc == 0 ? names : strerrorname_np(-rc));
  // read() on the token itself must find nothing to read.
  char buf[4096];
  CHECK("read_token", read(usr, buf, sizeof(buf)));
  CHECK("fchdir_usr", fchdir(usr));
  printf("getcwd=%s\n", getcwd(buf, sizeof(buf)) ? buf : strerrorname_np(errno));
  int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  rc = ListNames(cwd, names, sizeof(names));
  printf("list_cwd=%s\n", rc == 0 ? names : strerrorname_np(-rc));
  CHECK_FD("open_relative_bin_env", open("bin/env", O_RDONLY));
  CHECK_FD("open_dotdot_work", open("../work", O_RDONLY));
  if (chdir("/") != 0) return 2;

  int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK("linkat_usr_env", linkat(usr, "bin/env", tmp, "env-link", 0));
  CHECK("renameat_usr_bin", renameat(usr, "bin", tmp, "stolen-bin"));
  CHECK("renameat_into_usr", renameat(tmp, "mine", usr, "planted"));
  CHECK("mkdirat_usr", mkdirat(usr, "planted-dir", 0755));
  CHECK("unlinkat_usr_env", unlinkat(usr, "bin/env", 0));
  CHECK("symlinkat_usr", symlinkat("/work", usr, "planted-link"));
  CHECK("fchmod_usr", fchmod(usr, 0777));
  CHECK("fchown_usr", fchown(usr, getuid(), getgid()));
  CHECK("linkat_empty_path", linkat(mine, "", tmp, "mine-link", AT_EMPTY_PATH));
  return 0;
}

// --- the guest's own seccomp listener ---

static int g_listener = -1;

static void* OpenInThread(void* arg) {
  int* out = arg;
  int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
  *out = fd < 0 ? -errno : fd;
  return NULL;
}

// Installs a filter of its own that sends openat to a listener the guest holds:
// were it able to answer with SECCOMP_USER_NOTIF_FLAG_CONTINUE, the kernel would
// run openat natively in the guest's mount view, past the sentry.
static int Seccomp(void) {
  struct sock_filter insns[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof(insns) / sizeof(insns[0]), insns};
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  Result("seccomp_new_listener", fd, errno);
  if (fd < 0) return 0;
  g_listener = (int)fd;
  int opened = 0;
  pthread_t t;
  pthread_create(&t, NULL, OpenInThread, &opened);
  usleep(200000);
  char req[256], resp[64];
  memset(req, 0, sizeof(req));
  CHECK("notif_recv", ioctl(g_listener, SECCOMP_IOCTL_NOTIF_RECV, req));
  struct seccomp_notif_resp* r = (struct seccomp_notif_resp*)resp;
  memset(resp, 0, sizeof(resp));
  r->id = ((struct seccomp_notif*)req)->id;
  r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  CHECK("notif_send_continue", ioctl(g_listener, SECCOMP_IOCTL_NOTIF_SEND, resp));
  CHECK("notif_id_valid", ioctl(g_listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &r->id));
  close(g_listener);  // pending and later notifications now fail with ENOSYS
  pthread_join(t, NULL);
  Result("open_under_own_filter", opened < 0 ? -1 : 0, opened < 0 ? -opened : 0);
  // A native mount-view path is /.sentry-store: still unreachable by path.
  CHECK("open_store", open("/.sentry-store", O_RDONLY | O_DIRECTORY));
  return 0;
}

static int Flock(const char* path, int seconds) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    Result("open", -1, errno);
    return 0;
  }
  CHECK("flock_ex", flock(fd, LOCK_EX | LOCK_NB));
  struct flock fl = {0};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  CHECK("ofd_rdlck", fcntl(fd, F_OFD_SETLK, &fl));
  CHECK("setlease", fcntl(fd, F_SETLEASE, F_RDLCK));
  sleep((unsigned)seconds);
  return 0;
}

// Bad guest pointers in trapped syscalls: EFAULT for the guest, never a crash
// or hang of the sentry.
static int Efault(void) {
  long page = sysconf(_SC_PAGESIZE);
  char* two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (two == MAP_FAILED) return 2;
  munmap(two + page, page);
  // A path that runs into the unmapped page without a NUL.
  memset(two, 'a', page);
  char* edge = two + page - 8;
  struct stat st;
  char buf[64];
  CHECK_FD("open_null", syscall(SYS_open, NULL, O_RDONLY));
  CHECK_FD("open_low", syscall(SYS_open, (void*)1, O_RDONLY));
  CHECK_FD("open_kernel", syscall(SYS_open, (void*)0xffffffffff600000ul, O_RDONLY));
  CHECK_FD("open_unterminated", syscall(SYS_open, edge, O_RDONLY));
  CHECK("stat_bad_buf", syscall(SYS_stat, "/usr", (void*)8));
  CHECK("stat_unmapped_buf", syscall(SYS_stat, "/usr", two + page));
  CHECK("getcwd_bad", syscall(SYS_getcwd, (void*)8, 4096));
  CHECK("readlink_bad", syscall(SYS_readlink, "/bin", (void*)8, 64));
  CHECK("openat2_bad_how", syscall(SYS_openat2, AT_FDCWD, "/usr", (void*)8, 24));
  CHECK("openat2_huge_size", syscall(SYS_openat2, AT_FDCWD, "/usr", buf, 1ul << 40));
  int dir = open("/usr", O_RDONLY | O_DIRECTORY);
  CHECK("getdents_bad", syscall(SYS_getdents64, dir, (void*)8, 4096));
  CHECK("getdents_huge", syscall(SYS_getdents64, dir, two, 1ul << 40));
  int s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK("connect_bad", syscall(SYS_connect, s, (void*)8, 16));
  CHECK("connect_huge_len", syscall(SYS_connect, s, buf, 1 << 30));
  CHECK("rename_bad", syscall(SYS_rename, (void*)8, "/tmp/x"));
  CHECK("symlink_bad", syscall(SYS_symlink, "/tmp", (void*)8));
  char* argv0[] = {(char*)"x", NULL};
  CHECK("execve_bad", syscall(SYS_execve, (void*)8, argv0, NULL));
  CHECK("execve_unterminated", syscall(SYS_execve, edge, argv0, NULL));
  CHECK("fstat_bad", syscall(SYS_fstat, dir, (void*)8));
  CHECK("statx_bad", syscall(SYS_statx, AT_FDCWD, "/usr", 0, 0x7ff, (void*)8));
  CHECK("sysinfo_bad", syscall(SYS_sysinfo, (void*)8));
  CHECK("fd_huge", syscall(SYS_fstat, 1 << 30, &st));
  CHECK("fd_negative", syscall(SYS_fchdir, -5));
  CHECK_FD("alive", open("/usr/bin/env", O_RDONLY));
  return 0;
}

// A child made with CLONE_UNTRACED is not auto-attached by the sentry's ptrace
// options: it must still be unable to open (its traps come from a task the
// sentry does not know) and, above all, to execve (SECCOMP_RET_TRACE with no
// tracer is ENOSYS), which would otherwise run unchecked in the mount view.
static int Untraced(void) {
  int p[2];
  if (pipe(p) != 0) return 2;
  long pid = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 1);
    setvbuf(stdout, NULL, _IONBF, 0);
    CHECK_FD("untraced_open", open("/etc/passwd", O_RDONLY));
    CHECK_FD("untraced_open_usr", open("/usr/bin/env", O_RDONLY));
    char* argv[] = {(char*)"/usr/bin/true", NULL};
    char* envp[] = {NULL};
    CHECK("untraced_execve", syscall(SYS_execve, "/usr/bin/true", argv, envp));
    CHECK("untraced_execve_store", syscall(SYS_execve, "/.sentry-store/f1", argv, envp));
    // The fork gate is a TRACE stop: with no tracer the kernel fails it.
    long forked = syscall(SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
    if (forked == 0) _exit(0);
    Result("untraced_clone_fork_flags", forked, errno);
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog own = {1, &allow};
    CHECK("untraced_seccomp_listener",
          syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &own));
    long gpid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (gpid == 0) {
      CHECK("grandchild_execve", syscall(SYS_execve, "/usr/bin/true", argv, envp));
      _exit(0);
    }
    waitpid((pid_t)gpid, NULL, 0);
    _exit(0);
  }
  close(p[1]);
  Result("clone_untraced", pid, errno);
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) fwrite(buf, 1, (size_t)n, stdout);
  int status = 0;
  if (pid > 0) waitpid((pid_t)pid, &status, 0);
  printf("untraced_status=%d\n", status);
  return 0;
}

// --- the fork gate, and the forks that must still work ---

static void* ForkCloneInThread(void* arg) {
  long r = syscall(SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
  if (r == 0) _exit(0);
  *(int*)arg = r < 0 ? errno : 0;
  return NULL;
}

static void* ReturnSeven(void* arg) {
  (void)arg;
  return (void*)7;
}

// The exit status a child reported, or -1.
static int Reaped(long pid) {
  int status = 0;
  if (pid <= 0 || waitpid((pid_t)pid, &status, __WALL) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

static char g_clone_stack[64 * 1024] __attribute__((aligned(16)));
static int CloneChild(void* arg) {
  (void)arg;
  return 5;
}

static int ForkGate(void) {
  pid_t self = getpid();
  TRY("gate_clone_fork_flags", SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
  int in_thread = -1;
  pthread_t t;
  pthread_create(&t, NULL, ForkCloneInThread, &in_thread);
  pthread_join(t, NULL);
  Result("gate_clone_fork_flags_thread", in_thread == 0 ? 0 : -1, in_thread);
  // What must keep working beside the gate.
  pid_t f = fork();
  if (f == 0) _exit(3);
  printf("fork=%d\n", Reaped(f));
  pid_t v = vfork();
  if (v == 0) _exit(4);
  printf("vfork=%d\n", Reaped(v));
  long c = clone(CloneChild, g_clone_stack + sizeof(g_clone_stack), SIGCHLD, NULL);
  printf("clone=%d\n", Reaped(c));
  long raw = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (raw == 0) _exit(6);
  printf("clone_raw=%d\n", Reaped(raw));
  void* ret = NULL;
  pthread_create(&t, NULL, ReturnSeven, NULL);
  pthread_join(t, &ret);
  printf("thread=%ld\n", (long)ret);
  // A filter of its own without a listener still narrows the guest's calls.
  struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog own = {1, &allow};
  CHECK("seccomp_own_filter", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &own));
  // Once the guest stacked a filter the gate still answers (a guest filter
  // cannot turn the sentry's TRACE into an ALLOW: the lower action wins).
  TRY("gate_after_own_filter", SYS_clone, FORK_FLAGS, 0, 0, 0, 0);
  TRY("listener_after_own_filter", SYS_seccomp, SECCOMP_SET_MODE_FILTER,
      SECCOMP_FILTER_FLAG_NEW_LISTENER, &own);
  printf("done=OK\n");
  return 0;
}

// Every fd open at the guest's first instruction: only 0, 1 and 2 may be (a
// leaked sentry fd, above all the seccomp listener, would be a way out).
static int Fds(void) {
  for (int fd = 0; fd < 65536; ++fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0) continue;
    struct stat st;
    const char* kind = "?";
    if (fstat(fd, &st) == 0) {
      kind = S_ISREG(st.st_mode)    ? "file"
             : S_ISDIR(st.st_mode)  ? "dir"
             : S_ISFIFO(st.st_mode) ? "fifo"
             : S_ISSOCK(st.st_mode) ? "socket"
             : S_ISCHR(st.st_mode)  ? "chr"
                                    : "other";
    }
    printf("fd_%d=%s\n", fd, kind);
  }
  printf("done=OK\n");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: probe SUBCOMMAND [ARGS]\n");
    return 2;
  }
  const char* cmd = argv[1];
  if (!strcmp(cmd, "syscalls")) return Syscalls();
  if (!strcmp(cmd, "x32")) return X32();
  if (!strcmp(cmd, "int80")) return Int80();
  if (!strcmp(cmd, "tiocsti")) return Tiocsti();
  if (!strcmp(cmd, "identity") && argc > 2) return Identity(atoi(argv[2]));
  if (!strcmp(cmd, "net") && argc > 2) return Net(argc - 2, argv + 2);
  if (!strcmp(cmd, "toctou") && argc > 3) return Toctou(atoi(argv[2]), argv[3]);
  if (!strcmp(cmd, "dirfd")) return Dirfd();
  if (!strcmp(cmd, "dirops")) return Dirops();
  if (!strcmp(cmd, "seccomp")) return Seccomp();
  if (!strcmp(cmd, "efault")) return Efault();
  if (!strcmp(cmd, "fds")) return Fds();
  if (!strcmp(cmd, "untraced")) return Untraced();
  if (!strcmp(cmd, "forkgate")) return ForkGate();
  if (!strcmp(cmd, "unix") && argc > 4) return Unix(argv[2], argv[3], argv[4]);
  if (!strcmp(cmd, "flock") && argc > 3) return Flock(argv[2], atoi(argv[3]));
  fprintf(stderr, "probe: unknown subcommand %s\n", cmd);
  return 2;
}
