// sentry syscalls: prints the syscall table, the one answer to "what can a
// guest do?". Numbers the table has no row for fail with ENOSYS.
#include <seccomp.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "sentry/cli/commands.h"
#include "syscalls/table.h"

namespace sentry::cli {
namespace {

std::string ActionText(const SyscallRow& row) {
  std::string out;
  switch (row.action) {
    case Action::kNative:
      out = "native";
      break;
    case Action::kTrap:
      out = "trap";
      break;
    case Action::kTrace:
      out = "trace";
      break;
    case Action::kErrno:
      out = std::string("errno ") + strerrorname_np(row.err);
      break;
  }
  if (row.filter == ArgFilter::kNativeWithoutAddr) {
    out = "native; trap with an address";
  } else if (row.filter != ArgFilter::kNone) {
    out += std::string(" (filtered; else ") + strerrorname_np(row.err) + ")";
  }
  return out;
}

const char* WallName(Wall w) {
  switch (w) {
    case Wall::kNone:
      return "none";
    case Wall::kSelf:
      return "self";
    case Wall::kPidNs:
      return "pid namespace";
    case Wall::kIpcNs:
      return "ipc namespace";
    case Wall::kNetNs:
      return "network namespace";
    case Wall::kUserNs:
      return "user namespace";
    case Wall::kUtsNs:
      return "uts namespace";
  }
  return "?";
}

// A JSON string's body for text the table holds (quotes only; no control bytes).
std::string JsonText(const char* s) {
  std::string out;
  for (; s && *s; ++s) {
    if (*s == '"' || *s == '\\') out += '\\';
    out += *s;
  }
  return out;
}

}  // namespace

int SyscallsCommand(const std::vector<std::string>& args) {
  bool json = false, namespaces = true;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--no-namespaces") {
      namespaces = false;  // the table of a run on the seccomp wall alone
    } else {
      std::fputs(
          "usage: sentry syscalls [--json] [--no-namespaces]\n"
          "  --no-namespaces  the table of a run without namespaces (the seccomp wall alone)\n",
          stderr);
      return 125;
    }
  }
  auto find = namespaces ? &FindSyscall : &FindSyscallWithoutNamespaces;
  int counts[4] = {};
  if (json) std::puts("[");
  bool first = true;
  for (int nr = 0; nr < 512; ++nr) {
    const SyscallRow* row = find(nr);
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
    if (!row && !name) continue;
    std::string n = row ? row->name : name;
    std::string action = row ? ActionText(*row) : "errno ENOSYS (no row)";
    if (row) ++counts[static_cast<int>(row->action)];
    // Native rows: the wall that confines what their arguments name, and why.
    const char* why = row ? row->why : nullptr;
    if (json) {
      std::printf("%s  {\"nr\": %d, \"name\": \"%s\", \"action\": \"%s\"", first ? "" : ",\n", nr,
                  n.c_str(), action.c_str());
      if (why) {
        std::printf(", \"wall\": \"%s\", \"why\": \"%s\"", WallName(row->wall),
                    JsonText(why).c_str());
      }
      std::printf("}");
    } else if (why) {
      std::printf("%4d  %-24s %s: %s\n", nr, n.c_str(), action.c_str(), why);
    } else {
      std::printf("%4d  %-24s %s\n", nr, n.c_str(), action.c_str());
    }
    first = false;
    free(name);
  }
  if (json) {
    std::puts("\n]");
  } else {
    std::printf("\n%d native, %d trap, %d trace, %d errno; anything else: ENOSYS\n", counts[0],
                counts[1], counts[2], counts[3]);
  }
  return 0;
}

}  // namespace sentry::cli
