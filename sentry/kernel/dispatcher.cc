#include "sentry/kernel/dispatcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s.substr(0, 128)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 32 && c < 127) {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("\\x%02x", c);
    }
  }
  out += s.size() > 128 ? "\"..." : "\"";
  return out;
}

std::string OpenFlags(uint64_t v) {
  static constexpr std::pair<int, const char*> kFlags[] = {
      {O_CREAT, "O_CREAT"},       {O_EXCL, "O_EXCL"},         {O_NOCTTY, "O_NOCTTY"},
      {O_TRUNC, "O_TRUNC"},       {O_APPEND, "O_APPEND"},     {O_NONBLOCK, "O_NONBLOCK"},
      {O_DSYNC, "O_DSYNC"},       {O_DIRECT, "O_DIRECT"},     {O_DIRECTORY, "O_DIRECTORY"},
      {O_NOFOLLOW, "O_NOFOLLOW"}, {O_NOATIME, "O_NOATIME"},   {O_CLOEXEC, "O_CLOEXEC"},
      {O_PATH, "O_PATH"},         {__O_TMPFILE, "O_TMPFILE"}, {O_SYNC & ~O_DSYNC, "O_SYNC"}};
  const char* acc[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
  std::string out = acc[v & O_ACCMODE];
  uint64_t rest = v & ~static_cast<uint64_t>(O_ACCMODE | O_LARGEFILE);
  for (auto [bit, name] : kFlags) {
    if (rest & bit) {
      absl::StrAppend(&out, "|", name);
      rest &= ~static_cast<uint64_t>(bit);
    }
  }
  if (rest) absl::StrAppend(&out, absl::StrFormat("|0x%x", rest));
  return out;
}

// "{AF_INET, 8.8.8.8:53}": a sockaddr, read again for display only.
std::string SockAddr(SyscallContext& ctx, GuestAddr addr, uint64_t len) {
  sockaddr_storage ss{};
  if (len < sizeof(sa_family_t) || len > sizeof(ss) || !ctx.mem.CopyIn(addr, &ss, len).ok()) {
    return absl::StrFormat("0x%x", addr.raw());
  }
  char ip[INET6_ADDRSTRLEN] = "?";
  switch (ss.ss_family) {
    case AF_INET: {
      const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
      inet_ntop(AF_INET, &in.sin_addr, ip, sizeof(ip));
      return absl::StrCat("{AF_INET, ", ip, ":", ntohs(in.sin_port), "}");
    }
    case AF_INET6: {
      const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
      inet_ntop(AF_INET6, &in6.sin6_addr, ip, sizeof(ip));
      return absl::StrCat("{AF_INET6, [", ip, "]:", ntohs(in6.sin6_port), "}");
    }
    case AF_UNIX: {
      const auto& un = reinterpret_cast<const sockaddr_un&>(ss);
      size_t n = len - offsetof(sockaddr_un, sun_path);
      std::string path(un.sun_path, strnlen(un.sun_path, n));
      return absl::StrCat("{AF_UNIX, ", n > 0 && un.sun_path[0] == 0 ? "@" : "", Quote(path), "}");
    }
    default:
      return absl::StrCat("{family ", ss.ss_family, "}");
  }
}

// Refusals worth telling the model about: permissions, the network, the
// read-only system. (ENOENT and friends are ordinary program behaviour.)
bool IsDenial(int err) {
  return err == EACCES || err == EPERM || err == ENETUNREACH || err == EROFS ||
         err == EAFNOSUPPORT || err == ECONNREFUSED;
}

}  // namespace

void Dispatcher::RecordDenial(SyscallContext& ctx, int nr, const SyscallRow& row, int err,
                              const std::string& described) {
  if (!IsDenial(err) && ctx.hint.empty()) return;
  Kernel& k = ctx.kernel;
  ++k.denial_count;
  if (k.denials.size() >= Kernel::kMaxDenials) return;
  k.denials.push_back({described.empty() ? Describe(ctx, nr) : described, row.name, err, ctx.hint});
}

std::string Dispatcher::Describe(SyscallContext& ctx, int nr) {
  const SyscallRow* row = FindSyscall(nr);
  std::string out = row ? row->name : absl::StrCat("syscall_", nr);
  out += "(";
  const char* kinds = row ? row->args : "";
  for (int i = 0; kinds[i] && i < 6; ++i) {
    if (i) out += ", ";
    uint64_t v = ctx.args.raw[i];
    switch (kinds[i]) {
      case 'f':
        out += static_cast<int>(v) == AT_FDCWD ? "AT_FDCWD" : absl::StrCat(static_cast<int>(v));
        break;
      case 'd':
      case 'P':
      case 'K':
        absl::StrAppend(&out, static_cast<int64_t>(v));
        break;
      case 'u':
      case 'U':
      case 'l':
        absl::StrAppend(&out, v);
        break;
      case 'o':
        absl::StrAppend(&out, absl::StrFormat("0%o", v));
        break;
      case 'F':
        out += OpenFlags(v);
        break;
      case 'A':
        out += SockAddr(ctx, GuestAddr(v), i + 1 < 6 ? ctx.args.raw[i + 1] : 0);
        break;
      case 's':
      case 'q':
      case 'n': {
        auto s = ctx.mem.CopyInString(GuestAddr(v), 4095);
        out += s.ok() ? Quote(s.value()) : absl::StrFormat("0x%x", v);
        break;
      }
      default:
        absl::StrAppend(&out, absl::StrFormat("0x%x", v));
        break;
    }
  }
  out += ")";
  return out;
}

DispatchResult Dispatcher::Dispatch(SyscallContext& ctx, int nr) {
  ctx.nr = nr;
  std::string described;
  if (trace_) described = Describe(ctx, nr);
  const SyscallRow* row = find_(nr);
  DispatchResult r;
  bool refusal = row && (row->action == Action::kErrno ||
                         (row->action == Action::kNative && row->filter != ArgFilter::kNone));
  if (refusal && IsReportedRefusal(row->err)) {
    // A refusal of the table's own (the filter sends only those here).
    if (row->filter == ArgFilter::kUnixStreamOnly) {
      ctx.hint =
          "this sandbox runs without a network namespace (the host gives none): no network "
          "sockets, and unix sockets of stream or seqpacket type only";
    } else {
      ctx.hint =
          absl::StrCat(row->name, row->filter == ArgFilter::kNone ? "" : " with these arguments",
                       " is not permitted in this sandbox (no privileges over the host's "
                       "kernel, devices, clock or other processes)");
    }
    r.value = -row->err;
    r.refused = true;
    RecordDenial(ctx, nr, *row, row->err, described);
  } else if (!row || row->action != Action::kTrap || !row->handler) {
    r.value = -ENOSYS;
    r.refused = true;
  } else {
    SysResult<uint64_t> res = row->handler(ctx);
    r.value = res.ok() ? static_cast<int64_t>(res.value()) : -res.error();
    r.let_kernel_run = res.ok() && ctx.let_kernel_run;
    if (!res.ok()) RecordDenial(ctx, nr, *row, res.error(), described);
  }
  if (trace_) {
    pid_t tid = ctx.task.ns_tid;
    if (r.value < 0 && r.value > -4096) {
      std::fprintf(trace_, "[%d] %s = -1 %s (%s)\n", tid, described.c_str(),
                   strerrorname_np(static_cast<int>(-r.value)) ?: "E?",
                   std::strerror(static_cast<int>(-r.value)));
    } else {
      std::fprintf(trace_, "[%d] %s = %lld\n", tid, described.c_str(),
                   static_cast<long long>(r.value));
    }
  }
  return r;
}

}  // namespace sentry
