#include "sentry/pool/pool_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/base/fd_passing.h"

namespace sentry::pool {
namespace {

enum Tag : uint8_t {
  kArgv = 1,  // repeated, in order
  kEnv,       // repeated
  kCopyHost,  // repeated, each followed by its kCopyGuest
  kCopyGuest,
  kCwd,
  kShape,
  kFlags,  // decimal bits: see kFlag*
  kLogPath,
  kStdinPath,
  kWorkdir,
  kTimeout,  // decimal seconds
  kMemory,
  kPids,
  kCpus,
  kMaxOutput,
  kNofile,
  kFileGuest,  // repeated, each followed by its kFileData
  kFileData,
  kReturnFile,      // repeated: a guest path read back after the run
  kReturnFileMax,   // bytes of each
  kReturnTotalMax,  // bytes of all
};

constexpr unsigned kFlagCopyScript = 1, kFlagTrace = 2, kFlagTimings = 4, kFlagJson = 8;

void Put(std::string* out, Tag tag, std::string_view value) {
  out->push_back(static_cast<char>(tag));
  uint32_t n = static_cast<uint32_t>(value.size());
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  out->append(value);
}

std::string Number(double v) { return absl::StrFormat("%.17g", v); }

bool ReadFull(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::string ShapeOf(const RunOptions& o) {
  // A network of any kind is made with the sandbox (its DNS names, proxy and
  // secrets): only the default, none, is kept warm.
  bool network = !o.net.allow.empty() || !o.net.static_hosts.empty() || !o.net.secrets.empty() ||
                 o.net.allow_private || o.net_bytes;
  return absl::StrCat("root=", o.root, " disk=", o.disk_bytes, " cgroups=", o.cgroups,
                      " namespaces=", static_cast<int>(o.namespaces),
                      " userns=", static_cast<int>(o.userns), " landlock=", o.landlock,
                      " network=", network ? "custom" : "none");
}

void TakeShape(const RunOptions& shape, RunOptions* o) {
  o->root = shape.root;
  o->disk_bytes = shape.disk_bytes;
  o->cgroups = shape.cgroups;
  o->namespaces = shape.namespaces;
  o->userns = shape.userns;
  o->landlock = shape.landlock;
  o->net = shape.net;
  o->net_bytes = shape.net_bytes;
}

std::string EncodeRequest(const RunOptions& o, const std::string& cwd) {
  std::string body;
  for (const std::string& a : o.argv) Put(&body, kArgv, a);
  for (const std::string& e : o.env) Put(&body, kEnv, e);
  for (const auto& [host, guest] : o.copies) {
    Put(&body, kCopyHost, host);
    Put(&body, kCopyGuest, guest);
  }
  for (const auto& [guest, data] : o.files) {
    Put(&body, kFileGuest, guest);
    Put(&body, kFileData, data);
  }
  Put(&body, kCwd, cwd);
  Put(&body, kShape, ShapeOf(o));
  unsigned flags = (o.copy_script ? kFlagCopyScript : 0) | (o.trace ? kFlagTrace : 0) |
                   (o.timings ? kFlagTimings : 0) | (o.json ? kFlagJson : 0);
  Put(&body, kFlags, absl::StrCat(flags));
  Put(&body, kLogPath, o.log_path);
  Put(&body, kStdinPath, o.stdin_path);
  Put(&body, kWorkdir, o.workdir);
  Put(&body, kTimeout, Number(o.timeout_sec));
  Put(&body, kMemory, absl::StrCat(o.memory_bytes));
  Put(&body, kPids, absl::StrCat(o.pids));
  Put(&body, kCpus, Number(o.cpus));
  Put(&body, kMaxOutput, absl::StrCat(o.max_output));
  Put(&body, kNofile, absl::StrCat(o.nofile));
  for (const std::string& f : o.return_files) Put(&body, kReturnFile, f);
  Put(&body, kReturnFileMax, absl::StrCat(o.return_file_max));
  Put(&body, kReturnTotalMax, absl::StrCat(o.return_total_max));
  return body;
}

absl::StatusOr<Request> DecodeRequest(std::string_view body) {
  Request r;
  RunOptions& o = r.options;
  o.argv.clear();
  std::string pending_host;
  bool have_host = false;
  std::string pending_file;
  bool have_file = false;
  auto bad = [](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("a malformed request: ", why));
  };
  while (!body.empty()) {
    uint32_t n;
    if (body.size() < 1 + sizeof(n)) return bad("a truncated record");
    auto tag = static_cast<uint8_t>(body[0]);
    std::memcpy(&n, body.data() + 1, sizeof(n));
    body.remove_prefix(1 + sizeof(n));
    if (n > body.size()) return bad("a record longer than the request");
    std::string v(body.substr(0, n));
    body.remove_prefix(n);
    bool ok = true;
    switch (tag) {
      case kArgv:
        o.argv.push_back(std::move(v));
        break;
      case kEnv:
        o.env.push_back(std::move(v));
        break;
      case kCopyHost:
        if (have_host) return bad("a --copy without its guest path");
        pending_host = std::move(v);
        have_host = true;
        break;
      case kCopyGuest:
        if (!have_host) return bad("a --copy without its host path");
        o.copies.emplace_back(std::move(pending_host), std::move(v));
        have_host = false;
        break;
      case kFileGuest:
        if (have_file) return bad("a file without its bytes");
        pending_file = std::move(v);
        have_file = true;
        break;
      case kFileData:
        if (!have_file) return bad("file bytes without a path");
        o.files.emplace_back(std::move(pending_file), std::move(v));
        have_file = false;
        break;
      case kCwd:
        r.cwd = std::move(v);
        break;
      case kShape:
        r.shape = std::move(v);
        break;
      case kFlags: {
        unsigned f = 0;
        ok = absl::SimpleAtoi(v, &f);
        o.copy_script = f & kFlagCopyScript;
        o.trace = f & kFlagTrace;
        o.timings = f & kFlagTimings;
        o.json = f & kFlagJson;
        break;
      }
      case kLogPath:
        o.log_path = std::move(v);
        break;
      case kStdinPath:
        o.stdin_path = std::move(v);
        break;
      case kWorkdir:
        o.workdir = std::move(v);
        break;
      case kTimeout:
        ok = absl::SimpleAtod(v, &o.timeout_sec) && o.timeout_sec >= 0;
        break;
      case kMemory:
        ok = absl::SimpleAtoi(v, &o.memory_bytes);
        break;
      case kPids:
        ok = absl::SimpleAtoi(v, &o.pids);
        break;
      case kCpus:
        ok = absl::SimpleAtod(v, &o.cpus) && o.cpus >= 0;
        break;
      case kMaxOutput:
        ok = absl::SimpleAtoi(v, &o.max_output);
        break;
      case kNofile:
        ok = absl::SimpleAtoi(v, &o.nofile);
        break;
      case kReturnFile:
        o.return_files.push_back(std::move(v));
        break;
      case kReturnFileMax:
        ok = absl::SimpleAtoi(v, &o.return_file_max);
        break;
      case kReturnTotalMax:
        ok = absl::SimpleAtoi(v, &o.return_total_max);
        break;
      default:
        return bad(absl::StrCat("an unknown record ", static_cast<int>(tag)));
    }
    if (!ok) return bad(absl::StrCat("a bad value in record ", static_cast<int>(tag)));
  }
  if (have_host) return bad("a --copy without its guest path");
  if (have_file) return bad("a file without its bytes");
  if (o.argv.empty()) return bad("no command");
  if (r.cwd.empty() || r.cwd[0] != '/') return bad("no working directory");
  return r;
}

bool SendRequest(int sock, const std::string& body) {
  const int fds[3] = {0, 1, 2};
  return SendRequest(sock, body, fds);
}

bool SendRequest(int sock, const std::string& body, std::span<const int> fds) {
  if (body.size() > kMaxRequestBytes) {
    errno = E2BIG;
    return false;
  }
  uint32_t n = static_cast<uint32_t>(body.size());
  ssize_t sent = SendWithFds(sock, &n, sizeof(n), fds);
  if (sent != sizeof(n)) return false;
  return WriteFull(sock, body.data(), body.size());
}

absl::StatusOr<std::string> ReceiveRequest(int sock, std::array<UniqueFd, 5>* fds) {
  uint32_t n = 0;
  // Whatever came, the fds are ours to close.
  Received got = ReceiveWithFds(sock, &n, sizeof(n), *fds, MSG_WAITALL);
  if (got.bytes != sizeof(n)) return absl::InvalidArgumentError("no request came");
  if (got.too_many) return absl::InvalidArgumentError("too many fds came");
  for (int i = 0; i < 3; ++i) {
    if (!(*fds)[i]) return absl::InvalidArgumentError("the request came without fds 0-2");
  }
  if (static_cast<bool>((*fds)[3]) != static_cast<bool>((*fds)[4])) {
    return absl::InvalidArgumentError("one tee came without the other");
  }
  if (n > kMaxRequestBytes) return absl::InvalidArgumentError("the request is too large");
  std::string body(n, '\0');
  if (!ReadFull(sock, body.data(), n)) return absl::InvalidArgumentError("a truncated request");
  return body;
}

bool SendVerdict(int sock, bool accepted, const std::string& reason) {
  std::string m(1, accepted ? 'A' : 'R');
  if (!accepted) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(reason.size(), 4096));
    m.append(reinterpret_cast<const char*>(&n), sizeof(n));
    m.append(reason, 0, n);
  }
  return WriteFull(sock, m.data(), m.size());
}

bool ReceiveVerdict(int sock, std::string* reason) {
  char v;
  if (!ReadFull(sock, &v, 1)) {
    *reason = "the pool closed the connection";
    return false;
  }
  if (v == 'A') return true;
  uint32_t n = 0;
  if (v != 'R' || !ReadFull(sock, &n, sizeof(n)) || n > 4096) {
    *reason = "the pool sent a malformed answer";
    return false;
  }
  reason->assign(n, '\0');
  if (!ReadFull(sock, reason->data(), n)) *reason = "the pool closed the connection";
  return false;
}

}  // namespace sentry::pool
