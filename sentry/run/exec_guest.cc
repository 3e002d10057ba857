// A second guest process in a live sandbox (`sentry exec`, runc's exec):
// the monitor's side. `sentry exec` makes the process itself (it enters the
// sandbox's namespaces and forks; the child joins the cgroups, drops every
// capability, takes the sandbox's ids and installs the same seccomp filter
// with a listener of its own, then waits for its go, as the first guest
// does at its execve). The monitor answers two requests on its exec socket:
//
//   prepare: the process checked against the sandbox (its cwd and program
//            found in the VFS as the first guest's are), answered with what
//            the child needs: the sandbox's ids, the program's path, argv,
//            env and the first guest's rlimits, and the cgroups' join files;
//   attach:  the child (stopped at its go) seized by this tracer with every
//            option, its listener taken (pidfd_getfd) and answered by a
//            notify loop of its own over the same kernel, its task entered
//            with the requested identity and cwd.
//
// Both run on the supervising thread, the tracer's: a seize must come from
// it. The child's execve is then traced and answered like any other.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "sentry/base/fd_passing.h"
#include "sentry/base/fs_identity.h"
#include "sentry/kernel/fast_meta.h"
#include "sentry/run/exec_wire.h"
#include "sentry/run/guest_program.h"
#include "sentry/run/run_internal.h"

namespace sentry::run_internal {
namespace {

constexpr size_t kMaxGroups = 64;

struct ExecRequest {
  std::string op;
  std::vector<std::string> args, env;
  std::string cwd = "/";
  vfs::Creds creds;
  pid_t pid = 0;
  int listener = -1;
  int umask = -1;  // the process's (user.umask); -1: the container's
};

// Checks every field and its bounds; "" or what is wrong.
std::string ParseRequest(const std::string& text, ExecRequest* r) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "the request is not a JSON object";
  auto strings = [&](const char* key, std::vector<std::string>* out) -> std::string {
    if (!j.contains(key)) return "";
    const nlohmann::json& a = j[key];
    if (!a.is_array() || a.size() > kMaxLaunchStrings) {
      return absl::StrCat(key, " must be an array of strings");
    }
    for (const nlohmann::json& s : a) {
      if (!s.is_string()) return absl::StrCat(key, " must be an array of strings");
      out->push_back(s.get<std::string>());
    }
    return "";
  };
  if (!j.contains("op") || !j["op"].is_string()) return "the request names no op";
  r->op = j["op"].get<std::string>();
  if (std::string e = strings("args", &r->args); !e.empty()) return e;
  if (std::string e = strings("env", &r->env); !e.empty()) return e;
  if (r->args.empty() || r->args[0].empty()) return "args must name the program";
  if (r->args.size() + r->env.size() > kMaxLaunchStrings) return "too many args and env strings";
  if (j.contains("cwd")) {
    if (!j["cwd"].is_string()) return "cwd must be a string";
    r->cwd = j["cwd"].get<std::string>();
    if (r->cwd.empty() || r->cwd[0] != '/') return "cwd must be an absolute path";
  }
  auto id = [&](const char* key, uint32_t* out) -> bool {
    if (!j.contains(key)) return true;
    if (!j[key].is_number_unsigned() || j[key].get<uint64_t>() > 0xfffffffeu) return false;
    *out = j[key].get<uint32_t>();
    return true;
  };
  uint32_t uid = 0, gid = 0;
  if (!id("uid", &uid) || !id("gid", &gid)) return "uid and gid must be numbers below 2^32-1";
  r->creds.uid = uid;
  r->creds.gid = gid;
  if (j.contains("groups")) {
    if (!j["groups"].is_array() || j["groups"].size() > kMaxGroups) {
      return absl::StrCat("groups must be an array of at most ", kMaxGroups, " numbers");
    }
    for (const nlohmann::json& g : j["groups"]) {
      if (!g.is_number_unsigned() || g.get<uint64_t>() > 0xfffffffeu) {
        return "groups must hold numbers below 2^32-1";
      }
      r->creds.groups.push_back(g.get<uint32_t>());
    }
  }
  if (j.contains("umask")) {
    if (!j["umask"].is_number_unsigned() || j["umask"].get<uint64_t>() > 0777) {
      return "umask must be a number from 0 to 0777";
    }
    r->umask = j["umask"].get<int>();
  }
  if (r->op == "attach") {
    if (!j.contains("pid") || !j["pid"].is_number_unsigned() || !j.contains("listener") ||
        !j["listener"].is_number_unsigned()) {
      return "attach needs pid and listener";
    }
    uint64_t pid = j["pid"].get<uint64_t>(), fd = j["listener"].get<uint64_t>();
    if (pid == 0 || pid > 0x3fffffff || fd > 0x7fffffff) return "pid or listener out of range";
    r->pid = static_cast<pid_t>(pid);
    r->listener = static_cast<int>(fd);
  } else if (r->op != "prepare") {
    return absl::StrCat("unknown op ", r->op);
  }
  return "";
}

void Answer(int conn, const nlohmann::json& reply, std::span<const int> fds = {}) {
  (void)SendExecMessage(conn, reply.dump(), fds);
}

void Refuse(int conn, const std::string& why) { Answer(conn, {{"ok", false}, {"error", why}}); }

}  // namespace

void Run::ServeExec(int conn) {
  SetExecWireTimeouts(conn);
  // stdio, and the fds the engine preserved for the process.
  std::array<UniqueFd, kMaxPassedFds> stdio;
  auto text = ReceiveExecMessage(conn, stdio);
  if (!text.ok()) return;  // the engine's client went away: nothing to answer
  ExecRequest req;
  if (std::string why = ParseRequest(*text, &req); !why.empty()) return Refuse(conn, why);
  if (seccomp_only() || census_ || !spawned_ || !tracer_ || tracer_->leader_done()) {
    return Refuse(conn, seccomp_only() ? "exec needs the sandbox's namespaces, which it has not"
                                       : "the container is not running");
  }
  vfs::NodeRef cwd;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    vfs::Vfs& v = kernel_->vfs();
    auto found = v.Lookup(v.root(), req.cwd, {}, req.creds);
    if (!found.ok() || !*found || !(*found)->IsDir()) {
      return Refuse(conn, absl::StrCat("the working directory ", req.cwd,
                                       " is not a directory in the container"));
    }
    cwd = *found;
    ProgramLookup program = FindProgram(v, cwd, req.creds, req.args[0]);
    if (program.exit_code) {
      // runc's words, which the engines read to tell "not found" (127).
      return Answer(
          conn, {{"ok", false},
                 {"code", program.exit_code},
                 {"error", absl::StrCat(program.error, program.exit_code == 127
                                                           ? " (executable file not found in $PATH)"
                                                           : "")}});
    }
    path = program.path;
  }
  // The ids run natively in the sandbox's user namespace, which maps three
  // of each (root, the container's own and nobody), and the container's
  // supplementary groups.
  auto mapped = [](uint32_t id, uint32_t own) { return id == 0 || id == own || id == kNobodyId; };
  auto group_mapped = [&](uint32_t g) {
    return mapped(g, spec_.gid) ||
           std::find(spec_.groups.begin(), spec_.groups.end(), g) != spec_.groups.end();
  };
  if (!mapped(req.creds.uid, spec_.uid) || !group_mapped(req.creds.gid)) {
    return Refuse(conn, absl::StrCat("user ", req.creds.uid, ":", req.creds.gid,
                                     " has no id in the sandbox (it maps 0, ", spec_.uid, ":",
                                     spec_.gid, " and ", kNobodyId, ")"));
  }
  for (gid_t g : req.creds.groups) {
    if (!group_mapped(g)) {
      return Refuse(conn, absl::StrCat("group ", g, " has no id in the sandbox (it maps 0, ",
                                       spec_.gid, " and ", kNobodyId, ")"));
    }
  }
  if (req.op == "prepare") {
    nlohmann::json rlimits = nlohmann::json::array();
    for (const GuestLaunch::Rlimit& r : launch_.rlimits)
      rlimits.push_back({r.resource, r.value, r.Soft()});
    // Opened as the operator (this thread reaches host files as the guest's
    // file identity while it supervises).
    DropFsIdentity(0, 0);
    std::array<UniqueFd, kMaxLoaderCgroups> files = cgroups_.OpenJoinFiles();
    DropFsIdentity(GuestFsId(), GuestFsGid());
    std::vector<int> fds;
    for (const UniqueFd& f : files) {
      if (f) fds.push_back(f.get());
    }
    return Answer(conn,
                  {{"ok", true},
                   {"uid", req.creds.uid},
                   {"gid", req.creds.gid},
                   {"groups", req.creds.groups},
                   {"init", spawned_->init_pid()},
                   {"path", path},
                   {"rlimits", rlimits},
                   // The run's guest domain, for the new process too.
                   {"landlock", LandlockJson(spec_.landlock)}},
                  fds);
  }
  // attach: the child must be a process of this sandbox that no task names yet.
  struct stat want, got;
  if (stat(absl::StrCat("/proc/", spawned_->init_pid(), "/ns/pid").c_str(), &want) < 0 ||
      stat(absl::StrCat("/proc/", req.pid, "/ns/pid").c_str(), &got) < 0 ||
      want.st_ino != got.st_ino || want.st_dev != got.st_dev || req.pid == spawned_->init_pid()) {
    return Refuse(conn, absl::StrCat("process ", req.pid, " is not in the sandbox"));
  }
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, req.pid, 0)));
  if (!pidfd) return Refuse(conn, absl::StrCat("pidfd_open: ", std::strerror(errno)));
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    if (kernel_->tasks().Find(req.pid)) {
      return Refuse(conn, absl::StrCat("process ", req.pid, " is a guest already"));
    }
  }
  UniqueFd listener(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), req.listener, 0)));
  if (!listener) return Refuse(conn, absl::StrCat("cannot take the listener: ", strerror(errno)));
  if (int r = tracer_->Seize(req.pid); r < 0) {
    return Refuse(conn, absl::StrCat("cannot trace the process: ", std::strerror(-r)));
  }
  auto unotify = std::make_unique<Unotify>(std::move(listener));
  unotify->SetSyncWakeup();
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    // Another uid than the run's: the answers only the run's uid may see
    // are wiped before this process can trap (fast_meta.h EndSoleUid).
    if (FastMeta* fm = kernel_->fast_meta(); fm && req.creds.uid != creds_.uid) fm->EndSoleUid();
    // Its stdio and preserved fds are the engine's (pipes, a pty, sockets):
    // the guest's own to fstat.
    for (const UniqueFd& fd : stdio) {
      struct stat st;
      if (fd && fstat(fd.get(), &st) == 0) kernel_->fds().TrustCallerObject(st);
    }
    Task t;
    t.tid = req.pid;
    t.ns_tid = ReadNsPid(t.tid);
    t.pidfd = std::move(pidfd);
    t.fs = std::make_shared<FsContext>();
    t.fs->cwd = cwd;
    t.fs->umask = static_cast<mode_t>(req.umask >= 0 ? req.umask : o_.umask) & 0777;
    t.process = std::make_shared<Process>();
    t.process->tgid = t.tid;
    t.process->ns_pid = t.ns_tid;
    t.process->creds = req.creds;
    t.started = true;
    kernel_->tasks().Add(std::move(t));
  }
  // The loops of exec'd processes that are gone (with all they forked)
  // ended by themselves: joined here, so that repeated execs (a probe every
  // few seconds) do not pile threads and listeners up.
  std::erase_if(exec_loops_, [](ExecLoop& l) {
    if (!l.loop->done()) return false;
    l.loop->Stop();
    return true;
  });
  auto loop = std::make_unique<NotifyLoop>(*kernel_, *unotify, *dispatcher_, GuestFsId());
  loop->set_cpu_share(&cpu_share_);
  loop->Start();
  exec_loops_.push_back({std::move(unotify), std::move(loop)});
  Answer(conn, {{"ok", true}});
}

}  // namespace sentry::run_internal
