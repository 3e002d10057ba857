#include "sentry/oci/bundle.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sentry/base/status_macros.h"
#include "sentry/base/unique_fd.h"
#include "sentry/net/netns_socket.h"
#include "sentry/run/spawn.h"

namespace sentry::oci {
namespace {

using nlohmann::json;

// The engines' usual mounts that sentry's own trees already are.
const std::set<std::string>& OwnTrees() {
  static const std::set<std::string> own = {"/proc",    "/dev", "/dev/pts",      "/dev/mqueue",
                                            "/dev/shm", "/sys", "/sys/fs/cgroup"};
  return own;
}

// A small regular file, read as the operator (engines bind their own files).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot read ", path));
  UniqueFd f(fd);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  if (static_cast<size_t>(st.st_size) > kMaxBoundFile) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is larger than 1 MiB"));
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

bool IsBind(const json& m) {
  if (m.value("type", "") == "bind") return true;
  if (m.contains("options") && m["options"].is_array()) {
    for (const json& o : m["options"]) {
      if (o.is_string() && (o == "bind" || o == "rbind")) return true;
    }
  }
  return false;
}

// A directory bind (podman -v HOST:GUEST[:ro]): a BindMount, as -v makes
// one. "ro" shows it read-only (EROFS); otherwise the guest's writes reach
// the host, confined beneath the source (vfs/vfs_host_rw.cc). The source is
// the engine's, resolved now to the path AddBindMount opens link by link.
bool MapDirectoryBind(const json& m, const std::string& src, const std::string& dst, Bundle& b) {
  char real[PATH_MAX];
  struct stat st;
  if (src.empty() || src[0] != '/' || !realpath(src.c_str(), real) || stat(real, &st) < 0 ||
      !S_ISDIR(st.st_mode)) {
    return false;
  }
  std::vector<std::string> comps = absl::StrSplit(dst, '/', absl::SkipEmpty());
  if (comps.empty()) return false;
  for (const std::string& c : comps) {
    if (c == "." || c == "..") return false;
  }
  if (comps[0] == "proc" || comps[0] == "dev" || comps[0] == "sys") return false;
  bool ro = false;
  if (m.contains("options") && m["options"].is_array()) {
    for (const json& o : m["options"]) {
      if (o.is_string() && o == "ro") ro = true;
      if (o.is_string() && o == "rw") ro = false;
    }
  }
  BindMount bm;
  bm.host_path = real;
  bm.guest_path = "/" + absl::StrJoin(comps, "/");
  bm.mode = ro ? BindMount::Mode::kReadOnly : BindMount::Mode::kReadWrite;
  b.run.mounts.push_back(std::move(bm));
  return true;
}

void MapMounts(const json& mounts, Bundle& b) {
  std::vector<std::string> own, unhonoured;
  for (const json& m : mounts) {
    std::string dst = m.value("destination", "");
    std::string type = m.value("type", "");
    std::string src = m.value("source", "");
    if (dst.empty() || dst[0] != '/') {
      b.notes.push_back(absl::StrCat("mount with a relative destination \"", dst, "\" ignored"));
      continue;
    }
    if (OwnTrees().count(dst)) {
      own.push_back(dst);
      continue;
    }
    if (IsBind(m)) {
      // The engine's resolv.conf names the host's servers, which the sandbox
      // cannot reach: the guest asks sentry's own DNS server (127.0.0.1).
      if (dst == "/etc/resolv.conf") {
        b.notes.push_back("/etc/resolv.conf is sentry's own (nameserver 127.0.0.1, sentry's DNS)");
        continue;
      }
      struct stat st;
      if (stat(src.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          static_cast<size_t>(st.st_size) <= kMaxBoundFile) {
        auto data = ReadSmallFile(src);
        if (data.ok()) {
          b.run.engine_files.emplace_back(dst, std::move(*data));
          continue;
        }
      }
      if (MapDirectoryBind(m, src, dst, b)) continue;
      unhonoured.push_back(absl::StrCat(src, ":", dst));
      continue;
    }
    if (type == "tmpfs") {
      // The guest's writes land in sentry's in-memory layer wherever they
      // go: the directory only has to be there.
      own.push_back(dst);
      b.run.dirs.push_back(dst);
      continue;
    }
    unhonoured.push_back(absl::StrCat(type, ":", dst));
  }
  if (!own.empty()) {
    b.notes.push_back(absl::StrCat("mounts served by sentry's own trees (in memory): ",
                                   absl::StrJoin(own, ", ")));
  }
  if (!unhonoured.empty()) {
    b.notes.push_back(
        absl::StrCat("mounts not honoured (a bind's source must be a directory or a "
                     "small file): ",
                     absl::StrJoin(unhonoured, ", ")));
  }
}

// The rlimits an OCI process may ask for, by their config.json names.
int RlimitByName(const std::string& name) {
  static const std::map<std::string, int> names = {{"RLIMIT_AS", RLIMIT_AS},
                                                   {"RLIMIT_CORE", RLIMIT_CORE},
                                                   {"RLIMIT_CPU", RLIMIT_CPU},
                                                   {"RLIMIT_DATA", RLIMIT_DATA},
                                                   {"RLIMIT_FSIZE", RLIMIT_FSIZE},
                                                   {"RLIMIT_LOCKS", RLIMIT_LOCKS},
                                                   {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
                                                   {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
                                                   {"RLIMIT_NICE", RLIMIT_NICE},
                                                   {"RLIMIT_NOFILE", RLIMIT_NOFILE},
                                                   {"RLIMIT_NPROC", RLIMIT_NPROC},
                                                   {"RLIMIT_RSS", RLIMIT_RSS},
                                                   {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
                                                   {"RLIMIT_RTTIME", RLIMIT_RTTIME},
                                                   {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
                                                   {"RLIMIT_STACK", RLIMIT_STACK}};
  auto it = names.find(name);
  return it == names.end() ? -1 : it->second;
}

// process.rlimits become the guest's, set by the loader before its execve.
// The kernel lets no one without CAP_SYS_RESOURCE raise a hard limit, and
// the guest gets its limits from the sentry: one above the host's hard limit
// is lowered to it (runc fails there); sentry's own limits (open files,
// processes, memory without a cgroup, no core files) hold where lower.
void MapRlimits(const json& rlimits, Bundle& b) {
  std::vector<std::string> unknown, lowered;
  for (const json& r : rlimits) {
    if (!r.is_object()) continue;
    std::string type = r.value("type", "");
    int resource = RlimitByName(type);
    if (resource < 0) {
      unknown.push_back(type);
      continue;
    }
    uint64_t hard = r.value("hard", uint64_t{0});
    uint64_t soft = std::min(r.value("soft", uint64_t{0}), hard);
    rlimit own;
    if (getrlimit(resource, &own) == 0 && own.rlim_max != RLIM_INFINITY && hard > own.rlim_max) {
      lowered.push_back(absl::StrCat(type, " ", hard, "->", own.rlim_max));
      hard = own.rlim_max;
      soft = std::min(soft, hard);
    }
    if (resource == RLIMIT_NOFILE) {
      // The sandbox's open-file cap (RunOptions::nofile) is the hard limit.
      b.run.nofile = std::max<uint64_t>(16, std::min<uint64_t>(hard, 1 << 20));
      hard = b.run.nofile;
      soft = std::min(soft, hard);
    }
    if (resource == RLIMIT_CORE && hard > 0) {
      // The kernel would write a core file where the host's core_pattern
      // says (or hand it to the host's helper): none.
      lowered.push_back("RLIMIT_CORE->0 (no core file leaves the sandbox)");
      hard = soft = 0;
    }
    auto same = std::find_if(b.run.rlimits.begin(), b.run.rlimits.end(),
                             [&](const RunOptions::Rlimit& l) { return l.resource == resource; });
    if (same != b.run.rlimits.end()) b.run.rlimits.erase(same);
    b.run.rlimits.push_back({resource, hard, soft});
  }
  if (!unknown.empty()) {
    b.notes.push_back(absl::StrCat("rlimits not honoured (unknown to this kernel's names): ",
                                   absl::StrJoin(unknown, ", ")));
  }
  if (!lowered.empty()) {
    b.notes.push_back(
        absl::StrCat("rlimits lowered (the guest cannot hold more than the host "
                     "lets sentry give): ",
                     absl::StrJoin(lowered, ", ")));
  }
}

absl::Status MapProcess(const json& p, Bundle& b) {
  RunOptions& o = b.run;
  if (!p.contains("args") || !p["args"].is_array() || p["args"].empty()) {
    return absl::InvalidArgumentError("process.args must name the program to run");
  }
  for (const json& a : p["args"]) o.argv.push_back(a.get<std::string>());
  if (p.contains("env")) {
    for (const json& e : p["env"]) o.env.push_back(e.get<std::string>());
  }
  o.exact_env = true;
  o.workdir = p.value("cwd", "/");
  if (o.workdir.empty() || o.workdir[0] != '/') {
    return absl::InvalidArgumentError("process.cwd must be an absolute path");
  }
  if (p.contains("user")) {
    const json& u = p["user"];
    o.uid = u.value("uid", int64_t{0});
    o.gid = u.value("gid", int64_t{0});
    if (o.uid < 0 || o.uid > 0xfffffffe || o.gid < 0 || o.gid > 0xfffffffe) {
      return absl::InvalidArgumentError("process.user: bad uid or gid");
    }
    if (u.contains("additionalGids")) {
      const json& a = u["additionalGids"];
      if (!a.is_array() || a.size() > kMaxGuestGroups) {
        return absl::InvalidArgumentError(absl::StrCat(
            "process.user.additionalGids must be an array of at most ", kMaxGuestGroups, " gids"));
      }
      for (const json& g : a) {
        if (!g.is_number_unsigned() || g.get<uint64_t>() >= 0xffffffffu) {
          return absl::InvalidArgumentError(
              "process.user.additionalGids must hold numbers below 2^32-1");
        }
        gid_t gid = g.get<gid_t>();
        if (std::find(o.groups.begin(), o.groups.end(), gid) == o.groups.end()) {
          o.groups.push_back(gid);
        }
      }
    }
    if (u.contains("umask") && !u["umask"].is_null()) {
      if (!u["umask"].is_number_unsigned() || u["umask"].get<uint64_t>() > 0777) {
        return absl::InvalidArgumentError("process.user.umask must be a number from 0 to 0777");
      }
      o.umask = u["umask"].get<mode_t>();
    }
    if (u.contains("username")) b.notes.push_back("process.user.username not honoured");
  } else {
    o.uid = o.gid = 0;
  }
  o.root = o.uid == 0;
  b.terminal = p.value("terminal", false);
  // All three of fds 0-2 on the guest's terminal, as runc's: the monitor's
  // fd 2 is its error pipe while the run reads its stdio, so a guess from
  // isatty() would give the guest a stderr pipe (podman run -t).
  if (b.terminal) o.tty = TtyMode::kOn;
  if (p.contains("rlimits") && p["rlimits"].is_array()) MapRlimits(p["rlimits"], b);
  if (!p.value("noNewPrivileges", true)) {
    b.notes.push_back("process.noNewPrivileges false not honoured (always set in sentry)");
  }
  if (p.contains("capabilities")) {
    b.notes.push_back(
        "process.capabilities recorded, not granted: the guest never holds a host capability");
  }
  for (const char* f : {"apparmorProfile", "selinuxLabel", "oomScoreAdj", "ioPriority", "scheduler",
                        "consoleSize"}) {
    if (p.contains(f)) b.notes.push_back(absl::StrCat("process.", f, " not honoured"));
  }
  return absl::OkStatus();
}

void MapResources(const json& r, Bundle& b) {
  RunOptions& o = b.run;
  if (r.contains("memory") && r["memory"].is_object()) {
    const json& m = r["memory"];
    int64_t limit = m.value("limit", int64_t{0});
    if (limit > 0) o.memory_bytes = std::max<uint64_t>(static_cast<uint64_t>(limit), 8 << 20);
    // sentry's cgroup caps memory and swap together at the limit, with
    // swappiness 0 (sentry/run/cgroups.cc): no other memory knob applies.
    if (m.contains("swap")) {
      b.notes.push_back(
          "linux.resources.memory.swap not honoured: memory and swap together are capped at "
          "memory.limit");
    }
    for (const char* f : {"swappiness", "reservation", "kernel", "kernelTCP", "disableOOMKiller"}) {
      if (m.contains(f)) {
        b.notes.push_back(absl::StrCat("linux.resources.memory.", f, " not honoured"));
      }
    }
  }
  if (r.contains("pids") && r["pids"].is_object()) {
    int64_t limit = r["pids"].value("limit", int64_t{0});
    if (limit > 0) o.pids = static_cast<uint64_t>(limit);
  }
  if (r.contains("cpu") && r["cpu"].is_object()) {
    const json& c = r["cpu"];
    int64_t quota = c.value("quota", int64_t{0});
    uint64_t period = c.value("period", uint64_t{0});
    if (quota > 0)
      o.cpus = static_cast<double>(quota) / static_cast<double>(period ? period : 100000);
    if (period > 0) o.cpu_period_us = std::clamp<uint64_t>(period, 1000, 1000000);
    // cgroup v1's range; the kernel would clamp the same way.
    uint64_t shares = c.value("shares", uint64_t{0});
    if (shares > 0) o.cpu_shares = std::clamp<uint64_t>(shares, 2, 262144);
    if (c.contains("cpus") || c.contains("mems")) {
      b.notes.push_back("linux.resources.cpu.cpus/mems not honoured");
    }
  }
  for (const char* f : {"blockIO", "hugepageLimits", "network", "rdma", "unified"}) {
    if (r.contains(f)) b.notes.push_back(absl::StrCat("linux.resources.", f, " not honoured"));
  }
  // The device cgroup: no host device node is ever opened for the guest but
  // sentry's own (/dev/null, zero, full, random, urandom, its ptys).
  if (r.contains("devices")) {
    b.notes.push_back(
        "linux.resources.devices not honoured: the guest reaches only sentry's own devices");
  }
}

// A network namespace the engine made (podman with a network, a CRI pod's
// sandbox): the guest keeps its own, loopback only, and the connections the
// policy allows leave from the engine's (its interfaces and routes). Checked
// now, so a wrong path fails create, not the first connection.
absl::Status MapNetworkNamespace(const std::string& path, Bundle& b) {
  SysResult<UniqueFd> ns = net::OpenNetns(path);
  if (!ns.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "linux.namespaces: the network namespace ", path, " cannot be used (",
        ns.error() == EINVAL ? "not a network namespace" : std::strerror(ns.error()), ")"));
  }
  b.run.outside_netns = path;
  b.notes.push_back(absl::StrCat("network namespace ", path,
                                 ": the guest has its own (loopback only); connections that "
                                 "dev.sentry.allow-net lets out leave from this one"));
  return absl::OkStatus();
}

absl::Status MapLinux(const json& l, Bundle& b) {
  if (l.contains("resources") && l["resources"].is_object()) MapResources(l["resources"], b);
  if (l.contains("namespaces") && l["namespaces"].is_array()) {
    for (const json& n : l["namespaces"]) {
      if (n.is_object() && n.value("type", "") == "network" && !n.value("path", "").empty()) {
        RETURN_IF_ERROR(MapNetworkNamespace(n.value("path", ""), b));
      }
    }
  }
  std::vector<std::string> others;
  for (const char* f : {"uidMappings", "gidMappings", "seccomp", "maskedPaths", "readonlyPaths",
                        "devices", "sysctl", "mountLabel", "intelRdt", "personality"}) {
    if (l.contains(f)) others.push_back(f);
  }
  if (!others.empty()) {
    b.notes.push_back(absl::StrCat("linux.{", absl::StrJoin(others, ","),
                                   "} not honoured: sentry's own policy applies"));
  }
  if (l.contains("rootfsPropagation")) {
    b.notes.push_back(
        "linux.rootfsPropagation not honoured: the sandbox's mounts are private to it");
  }
  if (l.contains("cgroupsPath")) {
    b.notes.push_back("linux.cgroupsPath not honoured: sentry makes its own cgroups (cgroupfs)");
  }
  return absl::OkStatus();
}

// dev.sentry.* annotations: the options an engine cannot pass as flags.
absl::Status MapAnnotations(Bundle& b) {
  RunOptions& o = b.run;
  std::string network;
  for (const auto& [k, v] : b.annotations) {
    if (k.rfind("dev.sentry.", 0) != 0) continue;
    std::string key = k.substr(11);
    if (key == "network") {
      if (v != "none" && v != "allow") {
        return absl::InvalidArgumentError("dev.sentry.network must be none or allow");
      }
      network = v;
    } else if (key == "allow-net") {
      for (absl::string_view item : absl::StrSplit(v, ',', absl::SkipEmpty())) {
        net::AllowRule rule;
        std::string why;
        if (!net::ParseAllowRule(std::string(absl::StripAsciiWhitespace(item)), &rule, &why)) {
          return absl::InvalidArgumentError(absl::StrCat("dev.sentry.allow-net: ", why));
        }
        o.net.allow.push_back(rule);
      }
    } else if (key == "unsafe-allow-private-address") {
      // As --unsafe-allow-private-address: IP literals on dev.sentry.allow-net
      // may then be loopback or private (the engine's network, a pod's
      // cluster services); names still never resolve to such addresses.
      o.net.allow_private = v == "true" || v == "1";
    } else if (key == "max-output") {
      if (!absl::SimpleAtoi(v, &o.max_output) || o.max_output < 16) {
        return absl::InvalidArgumentError("dev.sentry.max-output needs a number of bytes");
      }
      // A container's output is streamed to the engine: capped there.
      o.stream_max_output = o.max_output;
    } else if (key == "timeout") {
      if (!absl::SimpleAtod(v, &o.timeout_sec) || o.timeout_sec < 0) {
        return absl::InvalidArgumentError("dev.sentry.timeout needs a number of seconds");
      }
    } else if (key == "disk-mb") {
      uint64_t mb;
      if (!absl::SimpleAtoi(v, &mb) || mb == 0 || mb > (1 << 20)) {
        return absl::InvalidArgumentError("dev.sentry.disk-mb needs a number of MiB");
      }
      o.disk_bytes = mb << 20;
    } else if (key == "trace") {
      o.trace = v == "true" || v == "1";
    } else if (key == "log") {
      // A name, not a path: in Kubernetes a pod's author may set annotations,
      // and a path would let them have root append to any host file.
      bool plain = !v.empty() && v[0] != '.' && v.size() <= 128 &&
                   v.find_first_not_of(
                       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789._-") == std::string::npos;
      if (!plain) {
        return absl::InvalidArgumentError(
            "dev.sentry.log must be a file name (letters, digits, '.', '_', '-'): the log is "
            "written in " +
            std::string(kAnnotationLogDir));
      }
      if (mkdir(kAnnotationLogDir, 0700) < 0 && errno != EEXIST) {
        return absl::InternalError(absl::StrCat("cannot make ", kAnnotationLogDir));
      }
      o.log_path = absl::StrCat(kAnnotationLogDir, "/", v);
    } else {
      b.notes.push_back(absl::StrCat("annotation ", k, " is not one of sentry's"));
    }
  }
  if (network == "allow" && o.net.allow.empty()) {
    return absl::InvalidArgumentError("dev.sentry.network=allow needs dev.sentry.allow-net");
  }
  if (network == "none") o.net.allow.clear();
  for (const net::AllowRule& rule : o.net.allow) {
    if (std::string why = net::RefusePrivateRule(rule, o.net.allow_private); !why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dev.sentry.allow-net: ", why,
                       " (here the annotation dev.sentry.unsafe-allow-private-address=true)"));
    }
  }
  return absl::OkStatus();
}

// A pod's containers join the pod sandbox's pid, IPC and UTS namespaces (by
// path); sentry joins none (each container is a sandbox), and says so. They
// name no hostname either: the pod's is the one the engine wrote into the
// /etc/hostname it binds (containerd's CRI does), which such a container
// takes, if it is one. (Network namespaces: MapLinux.)
void MapJoinedNamespaces(const json& j, Bundle& b) {
  if (!j.contains("linux") || !j["linux"].is_object()) return;
  const json& l = j["linux"];
  if (!l.contains("namespaces") || !l["namespaces"].is_array()) return;
  bool joins_uts = false;
  for (const json& n : l["namespaces"]) {
    if (!n.is_object() || n.value("path", "").empty()) continue;
    std::string type = n.value("type", "");
    if (type == "network") continue;
    if (type == "uts") joins_uts = true;
    b.notes.push_back(absl::StrCat("the ", type, " namespace ", n.value("path", ""),
                                   " is not joined: the sandbox has its own"));
  }
  if (!joins_uts || !b.run.hostname.empty()) return;
  for (const auto& [dst, data] : b.run.engine_files) {
    if (dst != "/etc/hostname") continue;
    std::string name(absl::StripAsciiWhitespace(data));
    bool valid = !name.empty() && name.size() <= 64;  // HOST_NAME_MAX
    for (char c : name) valid = valid && (absl::ascii_isalnum(c) || c == '-' || c == '.');
    if (valid) {
      b.run.hostname = name;
    } else {
      b.notes.push_back("the joined UTS namespace's hostname (/etc/hostname) is not a hostname");
    }
  }
}

absl::Status Map(const json& j, Bundle& b) {
  if (!j.is_object()) return absl::InvalidArgumentError("config.json is not a JSON object");
  if (j.contains("hooks") && j["hooks"].is_object()) {
    for (auto& [name, list] : j["hooks"].items()) {
      if (list.is_array() && !list.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "config.json has ", name,
            " hooks, which sentry does not run (a hook runs on the host, outside the sandbox); "
            "remove them or use runc for this container"));
      }
    }
  }
  if (!j.contains("root") || !j["root"].is_object() || j["root"].value("path", "").empty()) {
    return absl::InvalidArgumentError("config.json has no root.path");
  }
  std::string root = j["root"].value("path", "");
  b.rootfs = root[0] == '/' ? root : b.dir + "/" + root;
  struct stat st;
  if (stat(b.rootfs.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("root.path ", b.rootfs, " is not a directory"));
  }
  b.run.rootfs = b.rootfs;
  if (j["root"].value("readonly", false)) {
    b.notes.push_back(
        "root.readonly: the guest's writes go to sentry's memory, never to the rootfs");
  }
  if (!j.contains("process") || !j["process"].is_object()) {
    return absl::InvalidArgumentError("config.json has no process");
  }
  RETURN_IF_ERROR(MapProcess(j["process"], b));
  b.run.hostname = j.value("hostname", "");
  if (j.contains("domainname")) b.notes.push_back("domainname not honoured");
  if (j.contains("annotations") && j["annotations"].is_object()) {
    for (auto& [k, v] : j["annotations"].items()) {
      if (v.is_string()) b.annotations[k] = v.get<std::string>();
    }
  }
  if (j.contains("mounts") && j["mounts"].is_array()) MapMounts(j["mounts"], b);
  if (j.contains("linux") && j["linux"].is_object()) RETURN_IF_ERROR(MapLinux(j["linux"], b));
  MapJoinedNamespaces(j, b);
  return MapAnnotations(b);
}

}  // namespace

absl::StatusOr<Bundle> ParseConfig(const std::string& text, const std::string& dir) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("config.json is not valid JSON");
  Bundle b;
  b.dir = dir;
  // The sandbox's defaults for a container: no wall-clock limit (a service
  // runs until stopped), stdin relayed, no script copied.
  b.run.timeout_sec = 0;
  b.run.stdin_path.assign(1, '-');  // (= "-" trips GCC 12's -Wrestrict)
  b.run.copy_script = false;
  try {
    RETURN_IF_ERROR(Map(j, b));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config.json: ", e.what()));
  }
  return b;
}

absl::StatusOr<Bundle> LoadBundle(const std::string& bundle_dir) {
  char resolved[PATH_MAX];
  if (!realpath(bundle_dir.c_str(), resolved)) {
    return ErrnoStatus(absl::StrCat("bundle ", bundle_dir));
  }
  std::string dir = resolved;
  std::ifstream f(dir + "/config.json");
  if (!f) return absl::NotFoundError(absl::StrCat("no config.json in the bundle ", dir));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return ParseConfig(text, dir);
}

}  // namespace sentry::oci
