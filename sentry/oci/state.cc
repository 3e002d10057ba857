#include "sentry/oci/state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/status_macros.h"

namespace sentry::oci {
namespace {

absl::Status MakeDirs(const std::string& path) {
  std::string at;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&at, "/", part);
    if (mkdir(at.c_str(), 0711) < 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("cannot make ", at));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> LockDir(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot open ", path));
  UniqueFd lock(fd);
  while (flock(fd, LOCK_EX) < 0) {
    if (errno != EINTR) return ErrnoStatus(absl::StrCat("cannot lock ", path));
  }
  return lock;
}

void RemoveTree(int parent, const char* name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    if (DIR* d = fdopendir(fd)) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        if (unlinkat(fd, n.c_str(), 0) < 0 && errno == EISDIR) RemoveTree(fd, n.c_str());
      }
      closedir(d);
    } else {
      close(fd);
    }
  }
  unlinkat(parent, name, AT_REMOVEDIR);
}

}  // namespace

const char* StatusName(Status s) {
  switch (s) {
    case Status::kCreated:
      return "created";
    case Status::kRunning:
      return "running";
    case Status::kStopped:
      return "stopped";
  }
  return "unknown";
}

bool ValidId(const std::string& id) {
  if (id.empty() || id == "." || id == ".." || id.size() > 1024) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

uint64_t ProcessStartTime(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // The command name may hold spaces and parentheses: the fields follow its last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  // fields[0] is field 3 (state); start time is field 22.
  if (fields.size() < 20 || fields[0] == "Z" || fields[0] == "X") return 0;
  uint64_t start = 0;
  return absl::SimpleAtoi(fields[19], &start) ? start : 0;
}

absl::StatusOr<StateDir> StateDir::Create(const std::string& root, const std::string& id) {
  RETURN_IF_ERROR(MakeDirs(root));
  // Without root the state is the caller's alone: a directory another user
  // made first (a /tmp default) is not used.
  struct stat rs;
  if (geteuid() != 0 && (lstat(root.c_str(), &rs) < 0 || !S_ISDIR(rs.st_mode) ||
                         rs.st_uid != geteuid() || (rs.st_mode & 022) != 0)) {
    return absl::PermissionDeniedError(absl::StrCat(root, " is not a directory of uid ", geteuid(),
                                                    "'s alone (owned by it, mode 0700 or 0711)"));
  }
  std::string path = absl::StrCat(root, "/", id);
  if (mkdir(path.c_str(), 0700) < 0) {
    if (errno == EEXIST)
      return absl::AlreadyExistsError(absl::StrCat("container with id exists: ", id));
    return ErrnoStatus(absl::StrCat("cannot make ", path));
  }
  ASSIGN_OR_RETURN(UniqueFd lock, LockDir(path));
  return StateDir(path, std::move(lock));
}

absl::StatusOr<StateDir> StateDir::Open(const std::string& root, const std::string& id) {
  if (!ValidId(id)) return absl::InvalidArgumentError(absl::StrCat("invalid container id: ", id));
  std::string path = absl::StrCat(root, "/", id);
  auto missing = [&] {
    return absl::NotFoundError(absl::StrCat("container ", id, " does not exist"));
  };
  auto lock = LockDir(path);
  if (!lock.ok()) return missing();
  // Deleted by the command that held the lock before us: gone.
  struct stat st;
  if (fstatat(lock->get(), "state.json", &st, 0) < 0) return missing();
  return StateDir(path, std::move(*lock));
}

std::vector<std::string> StateDir::List(const std::string& root) {
  std::vector<std::string> ids;
  DIR* d = opendir(root.c_str());
  if (!d) return ids;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    struct stat st;
    if (ValidId(n) && stat(absl::StrCat(root, "/", n, "/state.json").c_str(), &st) == 0) {
      ids.push_back(n);
    }
  }
  closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

absl::StatusOr<ContainerState> StateDir::Read() const {
  std::ifstream f(path_ + "/state.json");
  if (!f) return absl::NotFoundError("no state.json");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::DataLossError("bad state.json");
  ContainerState s;
  s.id = j.value("id", "");
  s.bundle = j.value("bundle", "");
  s.rootfs = j.value("rootfs", "");
  s.created = j.value("created", "");
  s.pid = j.value("pid", 0);
  s.pid_start = j.value("pidStart", uint64_t{0});
  s.init_pid = j.value("initPid", 0);
  s.init_start = j.value("initStart", uint64_t{0});
  s.guest_pid = j.value("guestPid", 0);
  s.started = j.value("started", false);
  if (j.contains("annotations") && j["annotations"].is_object()) {
    for (auto& [k, v] : j["annotations"].items()) {
      if (v.is_string()) s.annotations[k] = v.get<std::string>();
    }
  }
  return s;
}

absl::Status StateDir::Write(const ContainerState& s) const {
  nlohmann::json j = {{"id", s.id},
                      {"bundle", s.bundle},
                      {"rootfs", s.rootfs},
                      {"created", s.created},
                      {"pid", s.pid},
                      {"pidStart", s.pid_start},
                      {"initPid", s.init_pid},
                      {"initStart", s.init_start},
                      {"guestPid", s.guest_pid},
                      {"started", s.started},
                      {"annotations", s.annotations}};
  std::string tmp = path_ + "/state.json.tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!f) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (rename(tmp.c_str(), (path_ + "/state.json").c_str()) < 0) {
    return ErrnoStatus("cannot write state.json");
  }
  return absl::OkStatus();
}

void StateDir::Remove() {
  size_t slash = path_.rfind('/');
  std::string parent = path_.substr(0, slash);
  int fd = open(parent.empty() ? "/" : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  RemoveTree(fd, path_.substr(slash + 1).c_str());
  close(fd);
  lock_.Reset();
}

Status StatusOf(const ContainerState& s) {
  if (s.pid <= 0 || ProcessStartTime(s.pid) != s.pid_start) return Status::kStopped;
  return s.started ? Status::kRunning : Status::kCreated;
}

std::string StateJson(const ContainerState& s, bool pretty) {
  Status st = StatusOf(s);
  nlohmann::ordered_json j = {
      {"ociVersion", "1.0.2"},    {"id", s.id},         {"pid", st == Status::kStopped ? 0 : s.pid},
      {"status", StatusName(st)}, {"bundle", s.bundle}, {"rootfs", s.rootfs},
      {"created", s.created},     {"owner", ""}};
  if (!s.annotations.empty()) j["annotations"] = s.annotations;
  return j.dump(pretty ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sentry::oci
