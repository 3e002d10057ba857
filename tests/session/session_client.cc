#include "tests/session/session_client.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "sentry/base/small_file.h"

namespace sentry::testing {

TenantTokens::TenantTokens() {
  char tmpl[] = "/tmp/sentry-tenants-XXXXXX";
  int fd = mkstemp(tmpl);
  path_ = tmpl;
  std::string text = std::string("# two tenants\nalice ") + kAlice + "\nbob " + kBob + "\n";
  (void)!write(fd, text.data(), text.size());
  close(fd);
}

TenantTokens::~TenantTokens() { unlink(path_.c_str()); }

HttpReply SessionClient::Call(const std::string& method, const std::string& target,
                              const std::string& body) const {
  std::vector<std::string> headers;
  if (!token_.empty()) headers.push_back("Authorization: Bearer " + token_);
  return server_.Request(method, target, body, token_.empty(), headers);
}

std::string SessionClient::Create(const nlohmann::json& request, HttpReply* reply) const {
  HttpReply r =
      Call("POST", "/v1/sessions", request.is_null() ? std::string("{}") : request.dump());
  if (reply) *reply = r;
  nlohmann::json j = r.Json();
  return r.status == 201 && j.contains("id") ? j["id"].get<std::string>() : "";
}

HttpReply SessionClient::Cell(const std::string& id, const std::string& code,
                              double timeout_ms) const {
  nlohmann::json body = {{"code", code}};
  if (timeout_ms > 0) body["timeoutMs"] = timeout_ms;
  return Call("POST", "/v1/sessions/" + id + "/cells", body.dump());
}

HttpReply SessionClient::Command(const std::string& id, const nlohmann::json& request) const {
  return Call("POST", "/v1/sessions/" + id + "/commands", request.dump());
}

std::string SessionClient::Eval(const std::string& id, const std::string& code) const {
  nlohmann::json j = Cell(id, code).Json();
  if (!j.is_object() || !j.contains("results") || j["results"].empty()) return "";
  return j["results"].back().value("text/plain", "");
}

std::vector<std::string> ForkedIds(const HttpReply& r) {
  std::vector<std::string> ids;
  nlohmann::json j = r.Json();
  if (j.is_object() && j["sessions"].is_array()) {
    for (const nlohmann::json& s : j["sessions"]) ids.push_back(s.get<std::string>());
  }
  return ids;
}

std::set<pid_t> Descendants(pid_t root) {
  std::map<pid_t, pid_t> parent;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0) continue;
    // Not an ifstream: a process that ends while it is read makes read(2)
    // fail (ESRCH), which libstdc++'s filebuf throws.
    std::string stat = ReadFileText(std::string("/proc/") + e->d_name + "/stat");
    size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(close_paren + 2));
    char state;
    pid_t ppid;
    if (rest >> state >> ppid) parent[pid] = ppid;
  }
  if (d) closedir(d);
  std::set<pid_t> out;
  for (const auto& [pid, pp] : parent) {
    pid_t p = pp;
    for (int hops = 0; p > 1 && hops < 64; ++hops) {
      if (p == root) {
        out.insert(pid);
        break;
      }
      auto it = parent.find(p);
      p = it == parent.end() ? 0 : it->second;
    }
  }
  return out;
}

std::vector<pid_t> ProcessesWith(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmd = ReadFileText(std::string("/proc/") + e->d_name + "/cmdline");
    for (char& c : cmd) c = c ? c : ' ';
    if (cmd.find(marker) != std::string::npos) out.push_back(pid);
  }
  if (d) closedir(d);
  return out;
}

bool SentryCgroupExists(pid_t pid) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (path == "/") path.clear();
    std::string first = controllers.substr(0, controllers.find(','));
    std::string dir =
        controllers.empty() ? "/sys/fs/cgroup" + path : "/sys/fs/cgroup/" + first + path;
    struct stat st;
    if (stat((dir + "/sentry-" + std::to_string(pid)).c_str(), &st) == 0) return true;
  }
  return false;
}

}  // namespace sentry::testing
