#include "sentry/trace/trace_structs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <utime.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/trace/trace_flags.h"

namespace sentry::trace {
namespace {

template <typename T>
bool Read(GuestMemory* mem, uint64_t addr, T* out) {
  return mem && addr != 0 && mem->CopyIn(GuestAddr(addr), out, sizeof(T)).ok();
}

std::string Rdev(uint64_t dev) {
  return absl::StrFormat("makedev(%#x, %#x)", major(dev), minor(dev));
}

std::string Rlim(uint64_t v) {
  if (v == ~uint64_t{0}) return "RLIM64_INFINITY";
  if (v > 1024 && v % 1024 == 0) return absl::StrCat(v / 1024, "*1024");  // as strace
  return absl::StrCat(v);
}

// strace's comment after a time it decodes: 2023-11-14T22:13:20.000000000+0000.
std::string TimeComment(int64_t sec, int64_t nsec) {
  time_t t = static_cast<time_t>(sec);
  struct tm tm;
  if (!localtime_r(&t, &tm)) return "";
  char date[64], zone[16];
  strftime(date, sizeof(date), "%FT%T", &tm);
  strftime(zone, sizeof(zone), "%z", &tm);
  if (nsec == 0) return absl::StrFormat(" /* %s%s */", date, zone);  // as strace: no ".000000000"
  return absl::StrFormat(" /* %s.%09d%s */", date, nsec, zone);
}

std::string UtimeSpec(const timespec& ts) {
  if (ts.tv_nsec == UTIME_NOW) return "UTIME_NOW";
  if (ts.tv_nsec == UTIME_OMIT) return "UTIME_OMIT";
  return absl::StrCat("{tv_sec=", ts.tv_sec, ", tv_nsec=", ts.tv_nsec, "}",
                      TimeComment(ts.tv_sec, ts.tv_nsec));
}

std::string Cmsgs(GuestMemory* mem, uint64_t addr, uint64_t len) {
  constexpr uint64_t kMaxControl = 4096;
  if (len == 0 || len > kMaxControl) return Addr(addr);
  std::string buf(len, '\0');
  if (!mem || !mem->CopyIn(GuestAddr(addr), buf.data(), len).ok()) return Addr(addr);
  std::string out = "[";
  size_t off = 0;
  for (int i = 0; off + sizeof(cmsghdr) <= len && i < 32; ++i) {
    cmsghdr h;
    std::memcpy(&h, buf.data() + off, sizeof(h));
    if (h.cmsg_len < sizeof(cmsghdr) || off + h.cmsg_len > len) break;
    std::string level = h.cmsg_level == SOL_SOCKET ? "SOL_SOCKET" : absl::StrCat(h.cmsg_level);
    absl::StrAppend(&out, i ? ", " : "", "{cmsg_len=", h.cmsg_len, ", cmsg_level=", level,
                    ", cmsg_type=");
    size_t data_len = h.cmsg_len - sizeof(cmsghdr);
    const char* data = buf.data() + off + sizeof(cmsghdr);
    if (h.cmsg_level == SOL_SOCKET && h.cmsg_type == SCM_RIGHTS) {
      out += "SCM_RIGHTS, cmsg_data=[";
      for (size_t j = 0; j + sizeof(int) <= data_len; j += sizeof(int)) {
        int fd;
        std::memcpy(&fd, data + j, sizeof(fd));
        absl::StrAppend(&out, j ? ", " : "", fd);
      }
      out += "]}";
    } else if (h.cmsg_level == SOL_SOCKET && h.cmsg_type == SCM_CREDENTIALS &&
               data_len >= sizeof(ucred)) {
      ucred c;
      std::memcpy(&c, data, sizeof(c));
      absl::StrAppend(&out, "SCM_CREDENTIALS, cmsg_data={pid=", c.pid, ", uid=", c.uid,
                      ", gid=", c.gid, "}}");
    } else {
      absl::StrAppend(
          &out, h.cmsg_type, ", cmsg_data=",
          Quote(std::string_view(data, std::min(data_len, kMaxStrLen)), data_len > kMaxStrLen),
          "}");
    }
    off += CMSG_ALIGN(h.cmsg_len);
  }
  return out + "]";
}

std::string MsghdrFields(GuestMemory* mem, const msghdr& m, int64_t sent) {
  std::string name =
      m.msg_name ? SockAddr(mem, reinterpret_cast<uint64_t>(m.msg_name), m.msg_namelen) : "NULL";
  std::string out = absl::StrCat(
      "{msg_name=", name, ", msg_namelen=", m.msg_namelen,
      ", msg_iov=", Iovecs(mem, reinterpret_cast<uint64_t>(m.msg_iov), m.msg_iovlen, sent),
      ", msg_iovlen=", m.msg_iovlen);
  if (m.msg_controllen) {
    absl::StrAppend(&out, ", msg_control=",
                    Cmsgs(mem, reinterpret_cast<uint64_t>(m.msg_control), m.msg_controllen));
  }
  absl::StrAppend(&out, ", msg_controllen=", m.msg_controllen,
                  ", msg_flags=", MsgFlags(static_cast<unsigned>(m.msg_flags)), "}");
  return out;
}

}  // namespace

std::string Stat(GuestMemory* mem, uint64_t addr) {
  struct stat st;
  if (!Read(mem, addr, &st)) return Addr(addr);
  std::string out = absl::StrCat("{st_mode=", FileMode(st.st_mode));
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    absl::StrAppend(&out, ", st_rdev=", Rdev(st.st_rdev));
  } else {
    absl::StrAppend(&out, ", st_size=", st.st_size);
  }
  return out + ", ...}";
}

std::string Statx(GuestMemory* mem, uint64_t addr) {
  struct statx st;
  if (!Read(mem, addr, &st)) return Addr(addr);
  static constexpr Named kAttrs[] = {
      {0x4, "STATX_ATTR_COMPRESSED"},    {0x10, "STATX_ATTR_IMMUTABLE"},
      {0x20, "STATX_ATTR_APPEND"},       {0x40, "STATX_ATTR_NODUMP"},
      {0x800, "STATX_ATTR_ENCRYPTED"},   {0x1000, "STATX_ATTR_AUTOMOUNT"},
      {0x2000, "STATX_ATTR_MOUNT_ROOT"}, {0x100000, "STATX_ATTR_VERITY"},
      {0x200000, "STATX_ATTR_DAX"}};
  std::string out = absl::StrCat("{stx_mask=", StatxMask(st.stx_mask),
                                 ", stx_attributes=", FlagSet(st.stx_attributes, kAttrs),
                                 ", stx_mode=", FileMode(st.stx_mode));
  if (S_ISCHR(st.stx_mode) || S_ISBLK(st.stx_mode)) {
    absl::StrAppend(&out, ", stx_rdev_major=", st.stx_rdev_major,
                    ", stx_rdev_minor=", st.stx_rdev_minor);
  } else {
    absl::StrAppend(&out, ", stx_size=", st.stx_size);
  }
  return out + ", ...}";
}

std::string Statfs(GuestMemory* mem, uint64_t addr) {
  struct statfs st;
  if (!Read(mem, addr, &st)) return Addr(addr);
  static constexpr Named kMagic[] = {
      {0x01021994, "TMPFS_MAGIC"},     {0xEF53, "EXT2_SUPER_MAGIC"},
      {0x9fa0, "PROC_SUPER_MAGIC"},    {0x794c7630, "OVERLAYFS_SUPER_MAGIC"},
      {0x62656572, "SYSFS_MAGIC"},     {0x1373, "DEVFS_SUPER_MAGIC"},
      {0x58465342, "XFS_SUPER_MAGIC"}, {0x9123683E, "BTRFS_SUPER_MAGIC"},
      {0x6969, "NFS_SUPER_MAGIC"}};
  static constexpr Named kFlags[] = {
      {0x20, "ST_VALID"},      {1, "ST_RDONLY"},       {2, "ST_NOSUID"},    {4, "ST_NODEV"},
      {8, "ST_NOEXEC"},        {16, "ST_SYNCHRONOUS"}, {64, "ST_MANDLOCK"}, {1024, "ST_NOATIME"},
      {2048, "ST_NODIRATIME"}, {4096, "ST_RELATIME"}};
  std::string type = Enum(static_cast<int64_t>(static_cast<uint64_t>(st.f_type)), kMagic);
  if (type[0] != '0' && type.find('_') == std::string::npos) {
    type = absl::StrFormat("%#x", static_cast<uint64_t>(st.f_type));
  }
  int fsid[2];  // strace prints them in hex
  std::memcpy(fsid, &st.f_fsid, sizeof(fsid));
  return absl::StrCat(
      "{f_type=", type, ", f_bsize=", st.f_bsize, ", f_blocks=", st.f_blocks,
      ", f_bfree=", st.f_bfree, ", f_bavail=", st.f_bavail, ", f_files=", st.f_files,
      ", f_ffree=", st.f_ffree, ", f_fsid={val=[",
      absl::StrFormat("%#x, %#x", static_cast<unsigned>(fsid[0]), static_cast<unsigned>(fsid[1])),
      "]}, f_namelen=", st.f_namelen, ", f_frsize=", st.f_frsize,
      ", f_flags=", FlagSet(static_cast<uint64_t>(st.f_flags), kFlags), "}");
}

std::string Sysinfo(GuestMemory* mem, uint64_t addr) {
  struct sysinfo si;
  if (!Read(mem, addr, &si)) return Addr(addr);
  return absl::StrCat("{uptime=", si.uptime, ", loads=[", si.loads[0], ", ", si.loads[1], ", ",
                      si.loads[2], "], totalram=", si.totalram, ", freeram=", si.freeram,
                      ", sharedram=", si.sharedram, ", bufferram=", si.bufferram,
                      ", totalswap=", si.totalswap, ", freeswap=", si.freeswap,
                      ", procs=", si.procs, ", totalhigh=", si.totalhigh,
                      ", freehigh=", si.freehigh, ", mem_unit=", si.mem_unit, "}");
}

std::string SockAddr(GuestMemory* mem, uint64_t addr, uint64_t len) {
  sockaddr_storage ss{};
  size_t n = std::min<uint64_t>(len, sizeof(ss));
  if (!mem || addr == 0 || n < sizeof(sa_family_t) || !mem->CopyIn(GuestAddr(addr), &ss, n).ok()) {
    return Addr(addr);
  }
  std::string out = absl::StrCat("{sa_family=", Family(ss.ss_family));
  char ip[INET6_ADDRSTRLEN] = "?";
  switch (ss.ss_family) {
    case AF_UNIX: {
      const auto& un = reinterpret_cast<const sockaddr_un&>(ss);
      size_t path_len = n - offsetof(sockaddr_un, sun_path);
      if (path_len == 0) break;
      if (un.sun_path[0] == 0) {
        absl::StrAppend(&out, ", sun_path=@",
                        Quote(std::string_view(un.sun_path + 1, path_len - 1)));
      } else {
        absl::StrAppend(&out, ", sun_path=",
                        Quote(std::string_view(un.sun_path, strnlen(un.sun_path, path_len))));
      }
      break;
    }
    case AF_INET: {
      if (n < sizeof(sockaddr_in)) break;
      const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
      inet_ntop(AF_INET, &in.sin_addr, ip, sizeof(ip));
      absl::StrAppend(&out, ", sin_port=htons(", ntohs(in.sin_port), "), sin_addr=inet_addr(\"", ip,
                      "\")");
      break;
    }
    case AF_INET6: {
      if (n < sizeof(sockaddr_in6)) break;
      const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
      inet_ntop(AF_INET6, &in6.sin6_addr, ip, sizeof(ip));
      absl::StrAppend(&out, ", sin6_port=htons(", ntohs(in6.sin6_port), "), sin6_flowinfo=htonl(",
                      ntohl(in6.sin6_flowinfo), "), inet_pton(AF_INET6, \"", ip,
                      "\", &sin6_addr), sin6_scope_id=", in6.sin6_scope_id);
      break;
    }
    case AF_NETLINK: {
      if (n < sizeof(sockaddr_nl)) break;
      const auto& nl = reinterpret_cast<const sockaddr_nl&>(ss);
      absl::StrAppend(&out, ", nl_pid=", nl.nl_pid,
                      absl::StrFormat(", nl_groups=%08x", nl.nl_groups));
      break;
    }
    default: {
      size_t data = n - sizeof(sa_family_t);
      absl::StrAppend(
          &out, ", sa_data=",
          Quote(std::string_view(reinterpret_cast<const char*>(&ss) + sizeof(sa_family_t),
                                 std::min(data, kMaxStrLen)),
                data > kMaxStrLen));
    }
  }
  return out + "}";
}

std::string Iovecs(GuestMemory* mem, uint64_t addr, uint64_t count, int64_t total) {
  if (!mem || addr == 0) return Addr(addr);
  std::string out = "[";
  for (uint64_t i = 0; i < count; ++i) {
    if (i == kMaxStrLen) return out + ", ...]";
    iovec v;
    if (!Read(mem, addr + i * sizeof(iovec), &v)) return i ? out + ", ...]" : Addr(addr);
    uint64_t show = v.iov_len;
    if (total >= 0) {
      show = std::min<uint64_t>(show, static_cast<uint64_t>(total));
      total -= static_cast<int64_t>(show);
    }
    std::string data = Buffer(mem, reinterpret_cast<uint64_t>(v.iov_base), show);
    absl::StrAppend(&out, i ? ", " : "", "{iov_base=", data, ", iov_len=", v.iov_len, "}");
  }
  return out + "]";
}

std::string Msghdr(GuestMemory* mem, uint64_t addr, int64_t sent) {
  msghdr m;
  if (!Read(mem, addr, &m)) return Addr(addr);
  return MsghdrFields(mem, m, sent);
}

std::string Mmsghdrs(GuestMemory* mem, uint64_t addr, uint64_t count) {
  if (!mem || addr == 0) return Addr(addr);
  std::string out = "[";
  for (uint64_t i = 0; i < count; ++i) {
    if (i == kMaxStrLen) return out + ", ...]";
    mmsghdr m;
    if (!Read(mem, addr + i * sizeof(mmsghdr), &m)) return i ? out + ", ...]" : Addr(addr);
    absl::StrAppend(&out, i ? ", " : "", "{msg_hdr=", MsghdrFields(mem, m.msg_hdr, -1),
                    ", msg_len=", m.msg_len, "}");
  }
  return out + "]";
}

std::string Timespec(GuestMemory* mem, uint64_t addr) {
  timespec ts;
  if (!Read(mem, addr, &ts)) return Addr(addr);
  return absl::StrCat("{tv_sec=", ts.tv_sec, ", tv_nsec=", ts.tv_nsec, "}");
}

std::string TimespecPair(GuestMemory* mem, uint64_t addr) {
  timespec ts[2];
  if (!Read(mem, addr, &ts)) return Addr(addr);
  return absl::StrCat("[", UtimeSpec(ts[0]), ", ", UtimeSpec(ts[1]), "]");
}

std::string TimevalPair(GuestMemory* mem, uint64_t addr) {
  timeval tv[2];
  if (!Read(mem, addr, &tv)) return Addr(addr);
  return absl::StrCat("[{tv_sec=", tv[0].tv_sec, ", tv_usec=", tv[0].tv_usec,
                      "}, {tv_sec=", tv[1].tv_sec, ", tv_usec=", tv[1].tv_usec, "}]");
}

std::string Utimbuf(GuestMemory* mem, uint64_t addr) {
  utimbuf u;
  if (!Read(mem, addr, &u)) return Addr(addr);
  return absl::StrCat("{actime=", u.actime, TimeComment(u.actime, 0), ", modtime=", u.modtime,
                      TimeComment(u.modtime, 0), "}");
}

std::string CpuSet(GuestMemory* mem, uint64_t addr, uint64_t len) {
  constexpr uint64_t kMaxBytes = 1024;
  if (!mem || addr == 0 || len == 0 || len > kMaxBytes) return Addr(addr);
  std::string buf(len, '\0');
  if (!mem->CopyIn(GuestAddr(addr), buf.data(), len).ok()) return Addr(addr);
  std::string out = "[";
  bool first = true;
  for (uint64_t cpu = 0; cpu < len * 8; ++cpu) {
    if (!(static_cast<unsigned char>(buf[cpu / 8]) & (1u << (cpu % 8)))) continue;
    absl::StrAppend(&out, first ? "" : " ", cpu);  // strace: [0 1]
    first = false;
  }
  return out + "]";
}

std::string OpenHow(GuestMemory* mem, uint64_t addr, uint64_t size) {
  struct {
    uint64_t flags, mode, resolve;
  } how;
  if (size < sizeof(how) || !Read(mem, addr, &how)) return Addr(addr);
  std::string out = absl::StrCat("{flags=", OpenFlags(how.flags));
  if (how.mode || (how.flags & O_CREAT) || (how.flags & O_TMPFILE) == O_TMPFILE)
    absl::StrAppend(&out, ", mode=", PermMode(how.mode));
  if (how.resolve) absl::StrAppend(&out, ", resolve=", ResolveFlags(how.resolve));
  return out + "}";
}

std::string SigSetAt(GuestMemory* mem, uint64_t addr, uint64_t size) {
  uint64_t set = 0;
  if (size == 0 || size > 8) return Addr(addr);
  if (!mem || addr == 0 || !mem->CopyIn(GuestAddr(addr), &set, size).ok()) return Addr(addr);
  return SigSet(set, size);
}

std::string Sigaction(GuestMemory* mem, uint64_t addr) {
  struct {
    uint64_t handler, flags, restorer, mask;
  } sa;  // the kernel's struct sigaction on x86-64
  if (!Read(mem, addr, &sa)) return Addr(addr);
  std::string handler = sa.handler == 0   ? "SIG_DFL"
                        : sa.handler == 1 ? "SIG_IGN"
                                          : absl::StrFormat("%#x", sa.handler);
  std::string out = absl::StrCat("{sa_handler=", handler, ", sa_mask=", SigSet(sa.mask, 8),
                                 ", sa_flags=", SaFlags(sa.flags));
  if (sa.flags & 0x04000000) absl::StrAppend(&out, ", sa_restorer=", Addr(sa.restorer));
  return out + "}";
}

std::string Rlimit64(GuestMemory* mem, uint64_t addr) {
  uint64_t r[2];
  if (!Read(mem, addr, &r)) return Addr(addr);
  return absl::StrCat("{rlim_cur=", Rlim(r[0]), ", rlim_max=", Rlim(r[1]), "}");
}

std::string WaitStatusText(int s) {
  if (WIFEXITED(s)) return absl::StrCat("{WIFEXITED(s) && WEXITSTATUS(s) == ", WEXITSTATUS(s), "}");
  if (WIFSIGNALED(s)) {
    return absl::StrCat("{WIFSIGNALED(s) && WTERMSIG(s) == ", SignalName(WTERMSIG(s)),
                        WCOREDUMP(s) ? " && WCOREDUMP(s)" : "", "}");
  }
  if (WIFSTOPPED(s))
    return absl::StrCat("{WIFSTOPPED(s) && WSTOPSIG(s) == ", SignalName(WSTOPSIG(s)), "}");
  if (WIFCONTINUED(s)) return "{WIFCONTINUED(s)}";
  return absl::StrFormat("%#x", s);
}

std::string WaitStatus(GuestMemory* mem, uint64_t addr) {
  int s;
  if (!Read(mem, addr, &s)) return Addr(addr);
  return absl::StrCat("[", WaitStatusText(s), "]");
}

std::string SigInfo(const siginfo_t& si) {
  static constexpr Named kCodes[] = {{0, "SI_USER"},
                                     {0x80, "SI_KERNEL"},
                                     {static_cast<uint64_t>(-1), "SI_QUEUE"},
                                     {static_cast<uint64_t>(-2), "SI_TIMER"},
                                     {static_cast<uint64_t>(-3), "SI_MESGQ"},
                                     {static_cast<uint64_t>(-4), "SI_ASYNCIO"},
                                     {static_cast<uint64_t>(-5), "SI_SIGIO"},
                                     {static_cast<uint64_t>(-6), "SI_TKILL"}};
  static constexpr Named kChld[] = {{1, "CLD_EXITED"},  {2, "CLD_KILLED"},  {3, "CLD_DUMPED"},
                                    {4, "CLD_TRAPPED"}, {5, "CLD_STOPPED"}, {6, "CLD_CONTINUED"}};
  static constexpr Named kSegv[] = {
      {1, "SEGV_MAPERR"}, {2, "SEGV_ACCERR"}, {3, "SEGV_BNDERR"}, {4, "SEGV_PKUERR"}};
  static constexpr Named kBus[] = {{1, "BUS_ADRALN"}, {2, "BUS_ADRERR"}, {3, "BUS_OBJERR"}};
  std::string out = absl::StrCat("{si_signo=", SignalName(si.si_signo), ", si_code=");
  bool fault = si.si_code > 0 && si.si_code != 0x80 &&
               (si.si_signo == SIGSEGV || si.si_signo == SIGBUS || si.si_signo == SIGILL ||
                si.si_signo == SIGFPE || si.si_signo == SIGTRAP);
  if (si.si_signo == SIGCHLD && si.si_code > 0) {
    absl::StrAppend(&out, Enum(si.si_code, kChld), ", si_pid=", si.si_pid, ", si_uid=", si.si_uid,
                    ", si_status=");
    if (si.si_code == CLD_EXITED) {
      absl::StrAppend(&out, si.si_status);
    } else {
      out += SignalName(si.si_status);
    }
    absl::StrAppend(&out, ", si_utime=", si.si_utime, ", si_stime=", si.si_stime, "}");
    return out;
  }
  if (fault) {
    std::string code = si.si_signo == SIGSEGV  ? Enum(si.si_code, kSegv)
                       : si.si_signo == SIGBUS ? Enum(si.si_code, kBus)
                                               : absl::StrCat(si.si_code);
    absl::StrAppend(&out, code, ", si_addr=", Addr(reinterpret_cast<uint64_t>(si.si_addr)), "}");
    return out;
  }
  absl::StrAppend(&out, Enum(si.si_code, kCodes));
  if (si.si_code <= 0) absl::StrAppend(&out, ", si_pid=", si.si_pid, ", si_uid=", si.si_uid);
  return out + "}";
}

}  // namespace sentry::trace
