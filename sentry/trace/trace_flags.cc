#include "sentry/trace/trace_flags.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sentry::trace {
namespace {

#define N(x) \
  { static_cast<uint64_t>(x), #x }

// Kernel values where glibc's differ (O_LARGEFILE is 0 in x86-64 userspace).
constexpr uint64_t kOLargefile = 0100000;

// The order is strace's where it prints several (O_SYNC before O_DSYNC, whose
// bit it contains; O_TMPFILE before O_DIRECTORY).
constexpr Named kOpenFlags[] = {
    N(O_CREAT),
    N(O_EXCL),
    N(O_NOCTTY),
    N(O_TRUNC),
    N(O_APPEND),
    N(O_NONBLOCK),
    N(O_SYNC),
    N(O_DSYNC),
    N(O_ASYNC),
    N(O_DIRECT),
    {kOLargefile, "O_LARGEFILE"},
    N(O_TMPFILE),
    N(O_NOFOLLOW),
    N(O_DIRECTORY),
    N(O_NOATIME),
    N(O_CLOEXEC),
    N(O_PATH),
};
constexpr Named kAtFlags[] = {
    N(AT_SYMLINK_NOFOLLOW), N(AT_REMOVEDIR),  N(AT_SYMLINK_FOLLOW),
    N(AT_NO_AUTOMOUNT),     N(AT_EMPTY_PATH), {0x8000, "AT_RECURSIVE"},
};
constexpr Named kAccess[] = {N(R_OK), N(W_OK), N(X_OK)};
constexpr Named kProt[] = {N(PROT_READ),
                           N(PROT_WRITE),
                           N(PROT_EXEC),
                           {0x8, "PROT_SEM"},
                           {0x01000000, "PROT_GROWSDOWN"},
                           {0x02000000, "PROT_GROWSUP"}};
constexpr Named kMapType[] = {N(MAP_SHARED), N(MAP_PRIVATE), N(MAP_SHARED_VALIDATE)};
constexpr Named kMapFlags[] = {
    N(MAP_FIXED),      N(MAP_ANONYMOUS), N(MAP_32BIT),     N(MAP_GROWSDOWN),       N(MAP_DENYWRITE),
    N(MAP_EXECUTABLE), N(MAP_LOCKED),    N(MAP_NORESERVE), N(MAP_POPULATE),        N(MAP_NONBLOCK),
    N(MAP_STACK),      N(MAP_HUGETLB),   N(MAP_SYNC),      N(MAP_FIXED_NOREPLACE),
};
constexpr Named kSockTypes[] = {N(SOCK_STREAM),    N(SOCK_DGRAM), N(SOCK_RAW),   N(SOCK_RDM),
                                N(SOCK_SEQPACKET), N(SOCK_DCCP),  N(SOCK_PACKET)};
constexpr Named kSockTypeFlags[] = {N(SOCK_CLOEXEC), N(SOCK_NONBLOCK)};
constexpr Named kFamilies[] = {
    N(AF_UNSPEC),     N(AF_UNIX),      N(AF_INET),     N(AF_AX25),  N(AF_IPX),     N(AF_APPLETALK),
    N(AF_NETROM),     N(AF_BRIDGE),    N(AF_ATMPVC),   N(AF_X25),   N(AF_INET6),   N(AF_ROSE),
    N(AF_DECnet),     N(AF_NETBEUI),   N(AF_SECURITY), N(AF_KEY),   N(AF_NETLINK), N(AF_PACKET),
    N(AF_ASH),        N(AF_ECONET),    N(AF_ATMSVC),   N(AF_RDS),   N(AF_SNA),     N(AF_IRDA),
    N(AF_PPPOX),      N(AF_WANPIPE),   N(AF_LLC),      N(AF_IB),    N(AF_MPLS),    N(AF_CAN),
    N(AF_TIPC),       N(AF_BLUETOOTH), N(AF_IUCV),     N(AF_RXRPC), N(AF_ISDN),    N(AF_PHONET),
    N(AF_IEEE802154), N(AF_CAIF),      N(AF_ALG),      N(AF_NFC),   N(AF_VSOCK),   N(AF_KCM),
    N(AF_QIPCRTR),    N(AF_SMC),       N(AF_XDP),
};
constexpr Named kMsgFlags[] = {
    N(MSG_OOB),          N(MSG_PEEK),       N(MSG_DONTROUTE), N(MSG_CTRUNC),   N(MSG_PROXY),
    N(MSG_TRUNC),        N(MSG_DONTWAIT),   N(MSG_EOR),       N(MSG_WAITALL),  N(MSG_FIN),
    N(MSG_SYN),          N(MSG_CONFIRM),    N(MSG_RST),       N(MSG_ERRQUEUE), N(MSG_NOSIGNAL),
    N(MSG_MORE),         N(MSG_WAITFORONE), N(MSG_BATCH),     N(MSG_ZEROCOPY), N(MSG_FASTOPEN),
    N(MSG_CMSG_CLOEXEC),
};
constexpr Named kCloneFlags[] = {
    {0x100, "CLONE_VM"},
    {0x200, "CLONE_FS"},
    {0x400, "CLONE_FILES"},
    {0x800, "CLONE_SIGHAND"},
    {0x1000, "CLONE_PIDFD"},
    {0x2000, "CLONE_PTRACE"},
    {0x4000, "CLONE_VFORK"},
    {0x8000, "CLONE_PARENT"},
    {0x10000, "CLONE_THREAD"},
    {0x20000, "CLONE_NEWNS"},
    {0x40000, "CLONE_SYSVSEM"},
    {0x80000, "CLONE_SETTLS"},
    {0x100000, "CLONE_PARENT_SETTID"},
    {0x200000, "CLONE_CHILD_CLEARTID"},
    {0x400000, "CLONE_DETACHED"},
    {0x800000, "CLONE_UNTRACED"},
    {0x1000000, "CLONE_CHILD_SETTID"},
    {0x2000000, "CLONE_NEWCGROUP"},
    {0x4000000, "CLONE_NEWUTS"},
    {0x8000000, "CLONE_NEWIPC"},
    {0x10000000, "CLONE_NEWUSER"},
    {0x20000000, "CLONE_NEWPID"},
    {0x40000000, "CLONE_NEWNET"},
    {0x80000000, "CLONE_IO"},
};
constexpr Named kFcntl[] = {
    N(F_DUPFD),         N(F_GETFD),      N(F_SETFD),      N(F_GETFL),     N(F_SETFL),
    N(F_GETLK),         N(F_SETLK),      N(F_SETLKW),     N(F_SETOWN),    N(F_GETOWN),
    N(F_SETSIG),        N(F_GETSIG),     N(F_SETOWN_EX),  N(F_GETOWN_EX), N(F_OFD_GETLK),
    N(F_OFD_SETLK),     N(F_OFD_SETLKW), N(F_SETLEASE),   N(F_GETLEASE),  N(F_NOTIFY),
    N(F_DUPFD_CLOEXEC), N(F_SETPIPE_SZ), N(F_GETPIPE_SZ), N(F_ADD_SEALS), N(F_GET_SEALS),
};
constexpr Named kIoctls[] = {
    {0x5401, "TCGETS"},         {0x5402, "TCSETS"},         {0x5403, "TCSETSW"},
    {0x5404, "TCSETSF"},        {0x540A, "TCXONC"},         {0x540B, "TCFLSH"},
    {0x540E, "TIOCSCTTY"},      {0x540F, "TIOCGPGRP"},      {0x5410, "TIOCSPGRP"},
    {0x5411, "TIOCOUTQ"},       {0x5412, "TIOCSTI"},        {0x5413, "TIOCGWINSZ"},
    {0x5414, "TIOCSWINSZ"},     {0x541B, "FIONREAD"},       {0x5421, "FIONBIO"},
    {0x5422, "TIOCNOTTY"},      {0x5429, "TIOCGSID"},       {0x5450, "FIONCLEX"},
    {0x5451, "FIOCLEX"},        {0x5452, "FIOASYNC"},       {0x80045430, "TIOCGPTN"},
    {0x40045431, "TIOCSPTLCK"}, {0x80045439, "TIOCGPTLCK"}, {0x5441, "TIOCGPTPEER"},
};
constexpr Named kWhence[] = {N(SEEK_SET), N(SEEK_CUR), N(SEEK_END), N(SEEK_DATA), N(SEEK_HOLE)};
constexpr Named kRename[] = {
    {1, "RENAME_NOREPLACE"}, {2, "RENAME_EXCHANGE"}, {4, "RENAME_WHITEOUT"}};
constexpr Named kStatxMask[] = {
    {0xfff, "STATX_ALL"},       {0x7ff, "STATX_BASIC_STATS"}, {0x1, "STATX_TYPE"},
    {0x2, "STATX_MODE"},        {0x4, "STATX_NLINK"},         {0x8, "STATX_UID"},
    {0x10, "STATX_GID"},        {0x20, "STATX_ATIME"},        {0x40, "STATX_MTIME"},
    {0x80, "STATX_CTIME"},      {0x100, "STATX_INO"},         {0x200, "STATX_SIZE"},
    {0x400, "STATX_BLOCKS"},    {0x800, "STATX_BTIME"},       {0x1000, "STATX_MNT_ID"},
    {0x2000, "STATX_DIOALIGN"},
};
constexpr Named kStatxSync[] = {
    {0, "AT_STATX_SYNC_AS_STAT"}, {0x2000, "AT_STATX_FORCE_SYNC"}, {0x4000, "AT_STATX_DONT_SYNC"}};
constexpr Named kResolve[] = {{1, "RESOLVE_NO_XDEV"},     {2, "RESOLVE_NO_MAGICLINKS"},
                              {4, "RESOLVE_NO_SYMLINKS"}, {8, "RESOLVE_BENEATH"},
                              {0x10, "RESOLVE_IN_ROOT"},  {0x20, "RESOLVE_CACHED"}};
constexpr Named kXattr[] = {{1, "XATTR_CREATE"}, {2, "XATTR_REPLACE"}};
constexpr Named kFutexCmds[] = {
    {0, "FUTEX_WAIT"},
    {1, "FUTEX_WAKE"},
    {2, "FUTEX_FD"},
    {3, "FUTEX_REQUEUE"},
    {4, "FUTEX_CMP_REQUEUE"},
    {5, "FUTEX_WAKE_OP"},
    {6, "FUTEX_LOCK_PI"},
    {7, "FUTEX_UNLOCK_PI"},
    {8, "FUTEX_TRYLOCK_PI"},
    {9, "FUTEX_WAIT_BITSET"},
    {10, "FUTEX_WAKE_BITSET"},
    {11, "FUTEX_WAIT_REQUEUE_PI"},
    {12, "FUTEX_CMP_REQUEUE_PI"},
    {13, "FUTEX_LOCK_PI2"},
};
constexpr Named kClocks[] = {
    {0, "CLOCK_REALTIME"},          {1, "CLOCK_MONOTONIC"},     {2, "CLOCK_PROCESS_CPUTIME_ID"},
    {3, "CLOCK_THREAD_CPUTIME_ID"}, {4, "CLOCK_MONOTONIC_RAW"}, {5, "CLOCK_REALTIME_COARSE"},
    {6, "CLOCK_MONOTONIC_COARSE"},  {7, "CLOCK_BOOTTIME"},      {8, "CLOCK_REALTIME_ALARM"},
    {9, "CLOCK_BOOTTIME_ALARM"},    {11, "CLOCK_TAI"},
};
constexpr Named kArchPrctl[] = {{0x1001, "ARCH_SET_GS"},    {0x1002, "ARCH_SET_FS"},
                                {0x1003, "ARCH_GET_FS"},    {0x1004, "ARCH_GET_GS"},
                                {0x1011, "ARCH_GET_CPUID"}, {0x1012, "ARCH_SET_CPUID"}};
constexpr Named kRlimits[] = {
    {0, "RLIMIT_CPU"},       {1, "RLIMIT_FSIZE"}, {2, "RLIMIT_DATA"},    {3, "RLIMIT_STACK"},
    {4, "RLIMIT_CORE"},      {5, "RLIMIT_RSS"},   {6, "RLIMIT_NPROC"},   {7, "RLIMIT_NOFILE"},
    {8, "RLIMIT_MEMLOCK"},   {9, "RLIMIT_AS"},    {10, "RLIMIT_LOCKS"},  {11, "RLIMIT_SIGPENDING"},
    {12, "RLIMIT_MSGQUEUE"}, {13, "RLIMIT_NICE"}, {14, "RLIMIT_RTPRIO"}, {15, "RLIMIT_RTTIME"},
};
constexpr Named kSigHow[] = {{0, "SIG_BLOCK"}, {1, "SIG_UNBLOCK"}, {2, "SIG_SETMASK"}};
constexpr Named kMadvise[] = {
    {0, "MADV_NORMAL"},      {1, "MADV_RANDOM"},       {2, "MADV_SEQUENTIAL"},
    {3, "MADV_WILLNEED"},    {4, "MADV_DONTNEED"},     {8, "MADV_FREE"},
    {9, "MADV_REMOVE"},      {10, "MADV_DONTFORK"},    {11, "MADV_DOFORK"},
    {12, "MADV_MERGEABLE"},  {13, "MADV_UNMERGEABLE"}, {14, "MADV_HUGEPAGE"},
    {15, "MADV_NOHUGEPAGE"}, {16, "MADV_DONTDUMP"},    {17, "MADV_DODUMP"},
    {18, "MADV_WIPEONFORK"}, {19, "MADV_KEEPONFORK"},  {20, "MADV_COLD"},
    {21, "MADV_PAGEOUT"},
};
constexpr Named kSaFlags[] = {
    {0x04000000, "SA_RESTORER"}, {0x08000000, "SA_ONSTACK"},   {0x10000000, "SA_RESTART"},
    {0x40000000, "SA_NODEFER"},  {0x80000000, "SA_RESETHAND"}, {4, "SA_SIGINFO"},
    {1, "SA_NOCLDSTOP"},         {2, "SA_NOCLDWAIT"},
};
constexpr Named kWait[] = {{1, "WNOHANG"},         {2, "WSTOPPED"},
                           {4, "WEXITED"},         {8, "WCONTINUED"},
                           {0x1000000, "WNOWAIT"}, {0x20000000, "__WNOTHREAD"},
                           {0x40000000, "__WALL"}, {0x80000000, "__WCLONE"}};
constexpr Named kPrctl[] = {
    {1, "PR_SET_PDEATHSIG"},
    {2, "PR_GET_PDEATHSIG"},
    {3, "PR_GET_DUMPABLE"},
    {4, "PR_SET_DUMPABLE"},
    {7, "PR_GET_KEEPCAPS"},
    {8, "PR_SET_KEEPCAPS"},
    {15, "PR_SET_NAME"},
    {16, "PR_GET_NAME"},
    {21, "PR_GET_SECCOMP"},
    {22, "PR_SET_SECCOMP"},
    {23, "PR_CAPBSET_READ"},
    {29, "PR_SET_TIMERSLACK"},
    {30, "PR_GET_TIMERSLACK"},
    {35, "PR_SET_MM"},
    {36, "PR_SET_CHILD_SUBREAPER"},
    {37, "PR_GET_CHILD_SUBREAPER"},
    {38, "PR_SET_NO_NEW_PRIVS"},
    {39, "PR_GET_NO_NEW_PRIVS"},
    {41, "PR_SET_THP_DISABLE"},
    {42, "PR_GET_THP_DISABLE"},
    {47, "PR_CAP_AMBIENT"},
    {0x53564d41, "PR_SET_VMA"},
};
constexpr const char* kSignals[] = {
    nullptr,     "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
    "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
    "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
    "SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS",
};

#undef N

}  // namespace

std::string FlagSet(uint64_t v, std::span<const Named> table, const char* zero) {
  if (v == 0) return zero;
  std::string out;
  uint64_t rest = v;
  for (const Named& n : table) {
    if (n.value != 0 && (rest & n.value) == n.value) {
      absl::StrAppend(&out, out.empty() ? "" : "|", n.name);
      rest &= ~n.value;
    }
  }
  if (rest) absl::StrAppend(&out, out.empty() ? "" : "|", absl::StrFormat("%#x", rest));
  return out;
}

std::string Enum(int64_t v, std::span<const Named> table, const char* fallback) {
  for (const Named& n : table) {
    if (static_cast<int64_t>(n.value) == v) return n.name;
  }
  if (fallback) return absl::StrFormat("%#x /* %s */", v, fallback);
  return absl::StrCat(v);
}

std::string OpenFlags(uint64_t v) {
  static constexpr const char* kAcc[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
  std::string out = kAcc[v & O_ACCMODE];
  uint64_t rest = v & ~static_cast<uint64_t>(O_ACCMODE);
  if (rest) absl::StrAppend(&out, "|", FlagSet(rest, kOpenFlags));
  return out;
}

std::string AtFlags(uint64_t v) { return FlagSet(v, kAtFlags); }
std::string AccessMode(uint64_t v) { return FlagSet(v, kAccess, "F_OK"); }
std::string Dirfd(int64_t v) {
  return static_cast<int>(v) == AT_FDCWD ? "AT_FDCWD" : absl::StrCat(static_cast<int>(v));
}
std::string ProtFlags(uint64_t v) { return FlagSet(v, kProt, "PROT_NONE"); }

std::string MapFlags(uint64_t v) {
  uint64_t type = v & 0xf, rest = v & ~uint64_t{0xf};
  std::string out = type ? Enum(static_cast<int64_t>(type), kMapType) : "";
  if (rest) absl::StrAppend(&out, out.empty() ? "" : "|", FlagSet(rest, kMapFlags));
  return out.empty() ? "0" : out;
}

std::string SockType(uint64_t v) {
  std::string out = Enum(static_cast<int64_t>(v & 0xf), kSockTypes);
  uint64_t rest = v & ~uint64_t{0xf};
  if (rest) absl::StrAppend(&out, "|", FlagSet(rest, kSockTypeFlags));
  return out;
}

std::string Family(uint64_t v) { return Enum(static_cast<int64_t>(v), kFamilies, nullptr); }
std::string MsgFlags(uint64_t v) { return FlagSet(v, kMsgFlags); }

std::string CloneFlags(uint64_t v) {
  uint64_t sig = v & 0xff;
  std::string out = FlagSet(v & ~uint64_t{0xff}, kCloneFlags, "");
  if (sig) absl::StrAppend(&out, out.empty() ? "" : "|", SignalName(static_cast<int64_t>(sig)));
  return out.empty() ? "0" : out;
}

std::string FcntlCmd(int64_t v) { return Enum(v, kFcntl); }

std::string IoctlCmd(uint64_t v) {
  uint64_t cmd = v & 0xffffffff;
  for (const Named& n : kIoctls) {
    if (n.value == cmd) return n.name;
  }
  return absl::StrFormat("%#x", cmd);
}

std::string Whence(int64_t v) { return Enum(v, kWhence); }
std::string RenameFlags(uint64_t v) { return FlagSet(v, kRename); }
std::string StatxMask(uint64_t v) { return FlagSet(v, kStatxMask); }

std::string StatxFlags(uint64_t v) {
  std::string out = Enum(static_cast<int64_t>(v & 0x6000), kStatxSync);
  uint64_t rest = v & ~uint64_t{0x6000};
  if (rest) absl::StrAppend(&out, "|", FlagSet(rest, kAtFlags));
  return out;
}

std::string ResolveFlags(uint64_t v) { return FlagSet(v, kResolve); }
std::string XattrFlags(uint64_t v) { return FlagSet(v, kXattr); }

std::string FutexOp(int64_t v) {
  constexpr int64_t kPrivate = 128, kRealtime = 256;
  std::string out = Enum(v & 0x7f, kFutexCmds);
  if (v & kPrivate) out += "_PRIVATE";
  if (v & kRealtime) out += "|FUTEX_CLOCK_REALTIME";
  if (int64_t rest = v & ~int64_t{0x7f | kPrivate | kRealtime}) {
    absl::StrAppend(&out, absl::StrFormat("|%#x", rest));
  }
  return out;
}

std::string ClockId(int64_t v) { return Enum(v, kClocks); }
std::string ArchPrctlCode(int64_t v) { return Enum(v, kArchPrctl, "ARCH_???"); }
std::string Rlimit(int64_t v) { return Enum(v, kRlimits); }
std::string SigprocmaskHow(int64_t v) { return Enum(v, kSigHow); }
std::string MadviseAdvice(int64_t v) { return Enum(v, kMadvise); }
std::string SaFlags(uint64_t v) { return FlagSet(v, kSaFlags); }
std::string WaitOptions(uint64_t v) { return FlagSet(v, kWait); }
std::string PrctlOption(int64_t v) { return Enum(v, kPrctl, "PR_???"); }

std::string FileMode(uint64_t mode) {
  static constexpr Named kTypes[] = {
      {S_IFREG, "S_IFREG"}, {S_IFDIR, "S_IFDIR"}, {S_IFLNK, "S_IFLNK"},  {S_IFCHR, "S_IFCHR"},
      {S_IFBLK, "S_IFBLK"}, {S_IFIFO, "S_IFIFO"}, {S_IFSOCK, "S_IFSOCK"}};
  std::string out;
  if (uint64_t type = mode & S_IFMT) {
    out = Enum(static_cast<int64_t>(type), kTypes);
    if (out[0] != 'S') out = absl::StrFormat("%#o", type);
    out += "|";
  }
  if (mode & S_ISUID) out += "S_ISUID|";
  if (mode & S_ISGID) out += "S_ISGID|";
  if (mode & S_ISVTX) out += "S_ISVTX|";
  absl::StrAppend(&out, absl::StrFormat("%#03o", mode & 0777));
  if (uint64_t rest = mode & ~uint64_t{S_IFMT | 07777}) {
    absl::StrAppend(&out, absl::StrFormat("|%#o", rest));
  }
  return out;
}

std::string PermMode(uint64_t mode) { return absl::StrFormat("%#03o", mode); }

std::string SignalName(int64_t sig) {
  if (sig > 0 && sig < 32) return kSignals[sig];
  if (sig == 32) return "SIGRTMIN";
  if (sig > 32 && sig <= 64) return absl::StrCat("SIGRT_", sig - 32);
  return absl::StrCat(sig);
}

std::string SigSet(uint64_t set, size_t bytes) {
  size_t nsig = bytes >= 8 ? 64 : bytes * 8;
  if (nsig < 64) set &= (uint64_t{1} << nsig) - 1;
  int count = __builtin_popcountll(set);
  bool inverted = static_cast<size_t>(count) * 2 > nsig;
  uint64_t shown = inverted ? ~set : set;
  std::string out = inverted ? "~[" : "[";
  bool first = true;
  for (size_t s = 1; s <= nsig; ++s) {
    if (!(shown & (uint64_t{1} << (s - 1)))) continue;
    std::string name = SignalName(static_cast<int64_t>(s));
    if (name.rfind("SIG", 0) == 0) name = name.substr(3);
    if (name == "RTMIN" && s != 32) name = absl::StrCat(s);
    absl::StrAppend(&out, first ? "" : " ", name);
    first = false;
  }
  return out + "]";
}

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "E?";
}

}  // namespace sentry::trace
