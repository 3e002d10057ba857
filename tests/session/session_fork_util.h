// What the session fork tests share (session_fork_test.cc,
// session_fork_chain_test.cc): the server's flags, the fork call, the
// guest's wall probes, and the host's view of the kernels' ids.
#ifndef SENTRY_TESTS_SESSION_SESSION_FORK_UTIL_H_
#define SENTRY_TESTS_SESSION_SESSION_FORK_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "sentry/base/small_file.h"
#include "tests/session/session_client.h"

namespace sentry::testing {

// The server's flags, and --userns=MODE where SENTRY_TEST_SERVE_USERNS
// names one (the rootless ctest entries: a fallback from a range to
// single-id mode must not pass for the range).
inline std::vector<std::string> ServerArgs(std::vector<std::string> args) {
  if (const char* mode = getenv("SENTRY_TEST_SERVE_USERNS")) {
    args.push_back(std::string("--userns=") + mode);
  }
  return args;
}

inline HttpReply Fork(const SessionClient& c, const std::string& id, const nlohmann::json& body) {
  return c.Call("POST", "/v1/sessions/" + id + "/fork", body.dump());
}

// Whether the session sees the file (a relative path: under its home).
inline std::string Exists(const SessionClient& c, const std::string& id, const std::string& path) {
  return c.Eval(id, "import os\nos.path.exists('" + path + "')");
}

// Defined in the parent, so its children have them too. walls(): each
// attempt to become another id (raw calls on one thread: glibc's set*id
// signals every thread it knows, and a forked kernel's glibc still lists
// its parent's) or to write its own id maps, then whether kill(-1) finds
// any other process. listen(name): a 127.0.0.1 listener and an abstract
// unix one; reach(port, name): whether each connects.
inline constexpr const char* kWallsCode = R"(import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def walls():
    out = []
    zero = (ctypes.c_uint * 1)(0)
    for nr, args in ((105, (0,)), (106, (0,)), (116, (1, zero)), (105, (65534,))):
        out.append('changed' if libc.syscall(nr, *args) == 0 else 'refused')
    for n in ('uid_map', 'gid_map', 'setgroups'):
        try:
            with open('/proc/self/' + n, 'w') as fh:
                fh.write('allow' if n == 'setgroups' else '0 0 1')
            out.append('wrote')
        except OSError:
            out.append('refused')
    try:
        os.kill(-1, 0)
        out.append('signalled')
    except ProcessLookupError:
        out.append('alone')
    return ' '.join(out)
def listen(name):
    t = socket.socket()
    t.bind(('127.0.0.1', 0))
    t.listen()
    u = socket.socket(socket.AF_UNIX)
    u.bind(name)
    u.listen()
    return t, u, t.getsockname()[1]
def reach(port, name):
    out = []
    for fam, addr in ((socket.AF_INET, ('127.0.0.1', port)), (socket.AF_UNIX, name)):
        s = socket.socket(fam)
        try:
            s.connect(addr)
            out.append('reached')
        except OSError:
            out.append('unreached')
        s.close()
    return ' '.join(out)
ids = lambda: str((os.getresuid(), os.getresgid(), os.getgroups()))
'walls'
)";
inline constexpr const char* kWallsHeld =
    "'refused refused refused refused refused refused refused alone'";

// What the host says of a process's ids: its status's id and capability
// lines and its user namespace's maps (as the host reads them: host ids).
inline std::string HostIds(pid_t pid) {
  // ReadFileText, not an ifstream: a read of a process that ends meanwhile
  // fails (ESRCH), which libstdc++'s filebuf throws.
  std::string out, line;
  std::istringstream status(ReadFileText("/proc/" + std::to_string(pid) + "/status"));
  while (std::getline(status, line)) {
    for (const char* key :
         {"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapAmb:"}) {
      if (line.rfind(key, 0) == 0) out += line + "\n";
    }
  }
  for (const char* file : {"uid_map", "gid_map", "setgroups"}) {
    out += ReadFileText("/proc/" + std::to_string(pid) + "/" + file);
  }
  return out;
}

// The server's python processes: the sessions' kernels.
inline std::vector<pid_t> Kernels(pid_t server) {
  std::vector<pid_t> out;
  for (pid_t p : Descendants(server)) {
    std::string comm = ReadFileText("/proc/" + std::to_string(p) + "/comm");
    if (comm.rfind("python", 0) == 0) out.push_back(p);
  }
  return out;
}

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_SESSION_SESSION_FORK_UTIL_H_
