#include "sentry/run/guest_program.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "loader/pool_caps.h"
#include "syscalls/sys_exec.h"

namespace sentry {

std::vector<std::string> GuestEnv(const RunOptions& o, const TreeConfig& tree, bool terminal) {
  if (o.exact_env) return o.env;
  std::vector<std::string> env = {
      "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
      "HOME=" + (o.root ? std::string("/root") : tree.home),
      "USER=" + (o.root ? std::string("root") : tree.user),
      "LOGNAME=" + (o.root ? std::string("root") : tree.user),
      "LANG=C.UTF-8",
      "LC_ALL=C.UTF-8",
      "HOSTNAME=" + tree.hostname,
      "TMPDIR=/tmp",
  };
  if (terminal) {
    const char* term = getenv("TERM");
    env.push_back(absl::StrCat("TERM=", term && *term ? term : "xterm"));
  }
  for (const std::string& kv : o.env) env.push_back(kv);
  return env;
}

namespace {

bool IsForeignImage(vfs::Vfs& v, vfs::Node& node) {
  auto fd = v.OpenData(node, O_RDONLY);
  if (!fd.ok()) return false;
  char head[64];
  ssize_t n = pread(fd->get(), head, sizeof(head), 0);
  return n > 0 && sys::IsForeignElf(std::string_view(head, n));
}

}  // namespace

ProgramLookup FindProgram(vfs::Vfs& v, const vfs::NodeRef& cwd, const vfs::Creds& creds,
                          const std::string& argv0, const std::string& copy_hint) {
  ProgramLookup out;
  vfs::NodeRef node;
  if (argv0.find('/') == std::string::npos) {
    for (const char* dir :
         {"/usr/local/bin/", "/usr/bin/", "/bin/", "/usr/local/sbin/", "/usr/sbin/", "/sbin/"}) {
      auto n = v.Lookup(v.root(), dir + argv0, {}, creds);
      if (n.ok() && (*n)->kind() == vfs::NodeKind::kFile) {
        out.path = dir + argv0;
        node = *n;
        break;
      }
    }
    if (!node) {
      out.exit_code = kExitNotFound;
      // Only the caller knows how files get in (sentry run's --copy, a
      // request's files): a flag another caller lacks is never suggested.
      out.error = absl::StrCat(argv0,
                               ": command not found in the sandbox (not in /usr/local/bin, "
                               "/usr/bin, /bin, /usr/local/sbin, /usr/sbin or /sbin",
                               copy_hint.empty() ? "" : "; ", copy_hint, ")");
      return out;
    }
  } else {
    auto n = v.Lookup(cwd, argv0, {}, creds);
    if (!n.ok()) {
      out.exit_code = n.error() == ENOENT ? kExitNotFound : kExitCannotExec;
      out.error = absl::StrCat(argv0, ": ", std::strerror(n.error()), " in the sandbox");
      return out;
    }
    out.path = argv0;
    node = *n;
  }
  if (node->IsDir()) {
    out.exit_code = kExitCannotExec;
    out.error = absl::StrCat(out.path, ": is a directory, not a program");
  } else if (node->kind() != vfs::NodeKind::kFile) {
    // A generated file (/etc/passwd), a device or a fifo: execve says EACCES.
    out.exit_code = kExitCannotExec;
    out.error = absl::StrCat(out.path, ": not executable");
  } else if (!v.Permission(*node, X_OK, creds).ok()) {
    out.exit_code = kExitCannotExec;
    out.error = absl::StrCat(out.path, ": permission denied (not executable in the sandbox)");
  } else if (IsForeignImage(v, *node)) {
    // The exec would fail with ENOEXEC (sys_exec.h): said here, as a shell says it.
    out.exit_code = kExitCannotExec;
    out.error = absl::StrCat(out.path,
                             ": Exec format error (an i386, x32 or other machine's program: the "
                             "sandbox runs x86-64 programs only, as a kernel without IA32 "
                             "emulation)");
  }
  return out;
}

std::vector<GuestLaunch::Rlimit> GuestRlimits(const RunOptions& o, bool memory_cgroup,
                                              bool cpu_cgroup,
                                              std::vector<GuestLaunch::Rlimit> base,
                                              std::string* error) {
  std::vector<GuestLaunch::Rlimit> out = std::move(base);
  // Where no cgroup holds, rlimits in the guest still do (per process).
  if (o.memory_bytes && !memory_cgroup) out.push_back({RLIMIT_AS, o.memory_bytes});
  if (o.cpus > 0 && !cpu_cgroup && o.timeout_sec > 0) {
    out.push_back({RLIMIT_CPU, static_cast<uint64_t>(o.timeout_sec * o.cpus) + 1});
  }
  // RLIMIT_NPROC is counted per user namespace and uid (the kernel's ucounts),
  // so it is this sandbox's own task count, threads included: the pids cap
  // holds without the pids cgroup too (which also counts the sandbox's init).
  // Without root the run sets its own from the caller's budget (a wall
  // rlimit in base: nproc_budget.h), which stands.
  bool nproc_set = std::any_of(out.begin(), out.end(), [](const GuestLaunch::Rlimit& r) {
    return r.resource == RLIMIT_NPROC;
  });
  if (o.pids && !nproc_set) out.push_back({RLIMIT_NPROC, o.pids});
  out.push_back({RLIMIT_NOFILE, o.nofile});
  // The guest's share of the kernel's per-user pools (loader/pool_caps.h);
  // without namespaces these are the only ceiling on them.
  out.push_back({RLIMIT_MSGQUEUE, kSandboxMsgQueueBytes});
  out.push_back({RLIMIT_SIGPENDING, kSandboxSigPending});
  // The bundle's own: where sentry sets one too, the lower of the two.
  for (const RunOptions::Rlimit& want : o.rlimits) {
    auto same = std::find_if(out.begin(), out.end(), [&](const GuestLaunch::Rlimit& r) {
      return r.resource == want.resource;
    });
    if (same == out.end()) {
      out.push_back({want.resource, want.hard, std::min(want.soft, want.hard)});
      continue;
    }
    uint64_t soft = std::min(same->Soft(), want.soft);
    same->value = std::min(same->value, want.hard);
    same->soft = std::min(soft, same->value);
  }
  for (const GuestLaunch::Rlimit& r : out) {
    rlimit own;
    if (getrlimit(r.resource, &own) == 0 && own.rlim_max != RLIM_INFINITY &&
        r.value > own.rlim_max) {
      *error = absl::StrCat("a limit of ", r.value, " is above this host's hard limit of ",
                            own.rlim_max, " (resource ", r.resource, "); ask for at most that");
    }
  }
  return out;
}

}  // namespace sentry
