// /proc/PID/net (and /proc/net, a link to self/net): the socket tables and
// interfaces of the sandbox's own network namespace, read by the sentry from
// /proc/<host pid>/net of the process asked about (procfs_internal.h).
//
// A row is shown only if it is the sandbox's: a socket a sandbox process
// holds (its inode among theirs), or, in the sandbox's own namespace, one no
// process holds any more (inode 0: closing, TIME_WAIT). So sockets the sentry
// or the loader made there (the egress proxy's, the DNS server's) and every
// host socket (a sandbox without a network namespace reads the host's tables)
// stay hidden. Kernel pointers read as 0 (kptr_restrict), owners as the
// sandbox's uids; unix socket paths are the guest's own (store_socket.cc
// binds them under the guest's name).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fs_identity.h"
#include "sentry/kernel/procfs_internal.h"

namespace sentry::procfs {
namespace {

// Whether p lives in the sandbox's own network namespace.
bool InSandboxNetns(Kernel& k, const Process& p) {
  const KernelConfig& c = k.config();
  if (!c.namespaces || c.net_ns_ino == 0) return false;
  UniqueFd proc = OpenHostProcDir(k, p);
  if (!proc) return false;
  SentryFsIdentity as_sentry;
  struct stat st;
  return fstatat(proc.get(), "ns/net", &st, 0) == 0 && st.st_ino == c.net_ns_ino;
}

// Token i of a whitespace-separated line, as [begin, end) offsets.
bool TokenAt(const std::string& line, size_t i, size_t* begin, size_t* end) {
  size_t pos = 0;
  for (size_t n = 0;; ++n) {
    pos = line.find_first_not_of(' ', pos);
    if (pos == std::string::npos) return false;
    size_t stop = line.find(' ', pos);
    if (stop == std::string::npos) stop = line.size();
    if (n == i) {
      *begin = pos;
      *end = stop;
      return true;
    }
    pos = stop;
  }
}

// Puts value in token i's place, right-aligned in the columns it had (the
// kernel pads these with spaces on the left), taking blanks on its left if
// value is longer.
void ReplaceToken(std::string& line, size_t i, const std::string& value) {
  size_t b, e;
  if (!TokenAt(line, i, &b, &e)) return;
  size_t width = e - b;
  if (value.size() <= width) {
    line.replace(b, width, std::string(width - value.size(), ' ') + value);
    return;
  }
  size_t extra = value.size() - width;
  size_t blanks = 0;
  while (blanks < extra && b - blanks > 0 && line[b - blanks - 1] == ' ') ++blanks;
  line.replace(b - blanks, width + blanks, value);
}

std::string Zeros(const std::string& line, size_t i, bool colon) {
  size_t b, e;
  if (!TokenAt(line, i, &b, &e)) return "";
  return std::string(e - b - (colon ? 1 : 0), '0') + (colon ? ":" : "");
}

struct Layout {
  size_t inode;    // which token holds the socket's inode
  int uid;         // which holds its owner (-1: none)
  int pointer;     // which holds a kernel address (-1: none)
  bool colon_ptr;  // the address ends with ':' (unix's "Num")
};

Layout LayoutOf(const std::string& name) {
  if (name == "unix") return {6, -1, 0, true};
  return {9, 7, 11, false};  // tcp, tcp6, udp, udp6, raw, raw6
}

std::string NoNamespaceDev() {
  return "Inter-|   Receive                                                |  Transmit\n"
         " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
         "errs drop fifo colls carrier compressed\n"
         "    lo:       0       0    0    0    0     0          0         0        0       0    "
         "0    0    0     0       0          0\n";
}

}  // namespace

const std::vector<std::string>& NetFileNames() {
  static const std::vector<std::string> names = {"dev",  "raw", "raw6", "tcp",
                                                 "tcp6", "udp", "udp6", "unix"};
  return names;
}

std::string NetFile(Kernel& k, const Process& p, const std::string& name) {
  bool own = InSandboxNetns(k, p);
  if (name == "dev") return own ? HostProcFile(k, p, "net/dev") : NoNamespaceDev();
  std::string host = HostProcFile(k, p, absl::StrCat("net/", name).c_str());
  if (host.empty()) return "";
  std::set<ino_t> held = GuestSocketInodes(k.tasks(), k.proc_opener());
  Layout lay = LayoutOf(name);
  const KernelConfig& c = k.config();
  std::string out;
  bool header = true;
  for (absl::string_view row : absl::StrSplit(host, '\n', absl::SkipEmpty())) {
    std::string line(row);
    if (header) {  // column names only
      header = false;
      absl::StrAppend(&out, line, "\n");
      continue;
    }
    size_t b, e;
    uint64_t ino = 0;
    if (!TokenAt(line, lay.inode, &b, &e) ||
        !absl::SimpleAtoi(absl::string_view(line).substr(b, e - b), &ino)) {
      continue;
    }
    if (ino == 0 ? !own : held.count(ino) == 0) continue;
    if (lay.uid >= 0 && TokenAt(line, lay.uid, &b, &e)) {
      uint32_t uid = 0;
      if (absl::SimpleAtoi(absl::string_view(line).substr(b, e - b), &uid)) {
        ReplaceToken(line, lay.uid, std::to_string(c.GuestUid(uid)));
      }
    }
    if (lay.pointer >= 0) {
      std::string zeros = Zeros(line, lay.pointer, lay.colon_ptr);
      if (!zeros.empty()) ReplaceToken(line, lay.pointer, zeros);
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace sentry::procfs
