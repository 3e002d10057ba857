#include "sentry/agent/run_request.h"

#include <cmath>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/net/net_policy.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

constexpr size_t kMaxPathBytes = 4095;
constexpr size_t kMaxNameBytes = 255;

struct Checker {
  const ServerPolicy& policy;
  RequestError* error;
  bool Fail(int status, std::string field, std::string message) {
    error->http_status = status;
    error->field = std::move(field);
    error->message = std::move(message);
    return false;
  }
  bool Bad(std::string field, std::string message) {
    return Fail(400, std::move(field), std::move(message));
  }
};

// Text, or {"base64": "..."} (files also take "text" and "executable").
bool Content(Checker& c, const std::string& field, const json& v, std::string* out,
             bool* executable) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return true;
  }
  if (!v.is_object()) return c.Bad(field, "must be a string or {\"base64\": \"...\"}");
  bool have = false;
  for (const auto& [key, item] : v.items()) {
    if ((key == "text" || key == "base64") && item.is_string()) {
      if (have) return c.Bad(field, "give one of \"text\" and \"base64\"");
      have = true;
      if (key == "text") {
        *out = item.get<std::string>();
      } else if (!absl::Base64Unescape(item.get<std::string>(), out)) {
        return c.Bad(field, "\"base64\" is not valid base64");
      }
    } else if (key == "executable" && executable && item.is_boolean()) {
      *executable = item.get<bool>();
    } else {
      return c.Bad(field, absl::StrCat("unknown or mistyped key \"", key, "\""));
    }
  }
  if (!have) return c.Bad(field, "needs \"text\" or \"base64\"");
  return true;
}

// A number in [lo, hi] (an integer unless fraction), as the limits file reads it.
bool Number(const json& v, double lo, double hi, bool fraction, double* out) {
  if (!v.is_number()) return false;
  double n = v.get<double>();
  if (!std::isfinite(n) || n < lo || n > hi) return false;
  if (!fraction && n != std::floor(n)) return false;
  *out = n;
  return true;
}

bool Limits(Checker& c, const json& v, RunOptions* o) {
  if (!v.is_object()) return c.Bad("limits", "must be an object");
  const RunOptions& s = c.policy.base;
  for (const auto& [key, item] : v.items()) {
    std::string field = "limits." + key;
    double n = 0;
    auto above = [&](const std::string& server) {
      return c.Fail(403, field, absl::StrCat("above the server's limit (", server, ")"));
    };
    if (key == "timeoutMs") {
      if (!Number(item, 1, 1e12, false, &n)) return c.Bad(field, "a positive number of ms");
      if (s.timeout_sec > 0 && n > s.timeout_sec * 1000) {
        return above(absl::StrCat(s.timeout_sec * 1000, " ms"));
      }
      o->timeout_sec = n / 1000;
    } else if (key == "memoryMb") {
      if (!Number(item, 8, 1 << 24, false, &n)) return c.Bad(field, "a number of MiB, at least 8");
      if (static_cast<uint64_t>(n) << 20 > s.memory_bytes) {
        return above(absl::StrCat(s.memory_bytes >> 20, " MiB"));
      }
      o->memory_bytes = static_cast<uint64_t>(n) << 20;
    } else if (key == "maxProcesses") {
      if (!Number(item, 1, 1 << 22, false, &n)) return c.Bad(field, "a positive number");
      if (n > static_cast<double>(s.pids)) return above(absl::StrCat(s.pids));
      o->pids = static_cast<uint64_t>(n);
    } else if (key == "cpus") {
      if (!Number(item, 0.01, 1024, true, &n)) return c.Bad(field, "a positive number, e.g. 0.5");
      if (s.cpus > 0 && n > s.cpus) return above(absl::StrCat(s.cpus));
      o->cpus = n;
    } else if (key == "diskMb") {
      if (!Number(item, 1, 1 << 24, false, &n)) return c.Bad(field, "a positive number of MiB");
      if (static_cast<uint64_t>(n) << 20 > s.disk_bytes) {
        return above(absl::StrCat(s.disk_bytes >> 20, " MiB"));
      }
      o->disk_bytes = static_cast<uint64_t>(n) << 20;
    } else if (key == "maxOutputBytes") {
      if (!Number(item, 16, 1ull << 40, false, &n)) return c.Bad(field, "at least 16 bytes");
      if (n > static_cast<double>(s.max_output)) return above(absl::StrCat(s.max_output));
      o->max_output = static_cast<uint64_t>(n);
    } else if (key == "nofile") {
      if (!Number(item, 16, 1 << 20, false, &n)) return c.Bad(field, "16 to 1048576");
      if (n > static_cast<double>(s.nofile)) return above(absl::StrCat(s.nofile));
      o->nofile = static_cast<uint64_t>(n);
    } else {
      return c.Bad(field,
                   "unknown limit (known: timeoutMs, memoryMb, maxProcesses, cpus, diskMb, "
                   "maxOutputBytes, nofile)");
    }
  }
  return true;
}

// Whether the server's rule lets everything the request's rule names.
bool Covers(const net::AllowRule& server, const net::AllowRule& want) {
  if (server.port != 0 && server.port != want.port) return false;
  if (server.host == want.host) return true;
  if (server.host.rfind("*.", 0) == 0) {
    std::string suffix = server.host.substr(1);  // ".example.com"
    std::string host = want.host.rfind("*.", 0) == 0 ? want.host.substr(1) : want.host;
    return host.size() > suffix.size() &&
           host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return false;
}

bool Network(Checker& c, const json& v, RunJob* job) {
  RunOptions& o = job->options;
  if (v.is_string() && v.get<std::string>() == "none") {
    o.net.allow.clear();
    o.net.secrets.clear();
    job->network_none = true;
    return true;
  }
  if (!v.is_object() || v.size() != 1 || !v.contains("allow") || !v["allow"].is_array()) {
    return c.Bad("network", "\"none\" or {\"allow\": [\"HOST[:PORT]\", ...]}");
  }
  std::vector<net::AllowRule> rules;
  for (const json& item : v["allow"]) {
    net::AllowRule rule;
    std::string why;
    if (!item.is_string() || !net::ParseAllowRule(item.get<std::string>(), &rule, &why)) {
      return c.Bad("network.allow", absl::StrCat("a list of HOST[:PORT] (", why, ")"));
    }
    if (std::string why = net::RefusePrivateRule(rule, c.policy.base.net.allow_private);
        !why.empty()) {
      return c.Bad("network.allow", absl::StrCat(why,
                                                 " (a flag of the server: sentry serve/mcp "
                                                 "--unsafe-allow-private-address)"));
    }
    bool covered = false;
    for (const net::AllowRule& s : c.policy.base.net.allow) covered = covered || Covers(s, rule);
    if (!covered) {
      return c.Fail(403, "network.allow",
                    absl::StrCat(item.get<std::string>(),
                                 " is not within the server's allowlist (sentry serve/mcp "
                                 "--allow-net)"));
    }
    rules.push_back(rule);
    job->allow.push_back(item.get<std::string>());
  }
  o.net.allow = std::move(rules);
  return true;
}

bool Argv(Checker& c, const json& v, RunOptions* o) {
  if (!v.is_array() || v.empty()) return c.Bad("argv", "must be a non-empty list of strings");
  if (v.size() > c.policy.max_argv) {
    return c.Fail(413, "argv", absl::StrCat("more than ", c.policy.max_argv, " arguments"));
  }
  size_t total = 0;
  for (const json& a : v) {
    if (!a.is_string()) return c.Bad("argv", "must be a list of strings");
    const std::string& s = a.get_ref<const std::string&>();
    if (s.find('\0') != std::string::npos) return c.Bad("argv", "an argument holds a NUL byte");
    total += s.size() + 1;
    o->argv.push_back(s);
  }
  if (o->argv[0].empty()) return c.Bad("argv", "the program name is empty");
  if (total > c.policy.max_argv_bytes) {
    return c.Fail(413, "argv", absl::StrCat("more than ", c.policy.max_argv_bytes, " bytes"));
  }
  return true;
}

bool Files(Checker& c, const json& v, RunOptions* o) {
  if (!v.is_object()) return c.Bad("files", "must map guest paths to contents");
  if (v.size() > c.policy.max_files) {
    return c.Fail(413, "files", absl::StrCat("more than ", c.policy.max_files, " files"));
  }
  std::set<std::string> seen;
  for (const auto& [path, item] : v.items()) {
    std::string field = absl::StrCat("files[", nlohmann::json(path).dump(), "]");
    std::string why;
    std::string guest = ConfineGuestPath(path, &why);
    if (guest.empty()) return c.Bad(field, why);
    if (!seen.insert(guest).second) return c.Bad(field, "names the same file as another entry");
    InlineFile f;
    f.guest_path = guest;
    bool executable = false;
    if (!Content(c, field, item, &f.data, &executable)) return false;
    f.mode = executable ? 0755 : 0644;
    o->inline_files.push_back(std::move(f));
  }
  return true;
}

bool ReturnFiles(Checker& c, const json& v, RunOptions* o) {
  if (!v.is_array()) {
    return c.Bad("returnFiles", "must be a list of guest paths (files, directories or patterns)");
  }
  if (v.size() > c.policy.max_return_files) {
    return c.Fail(413, "returnFiles",
                  absl::StrCat("more than ", c.policy.max_return_files, " files"));
  }
  std::set<std::string> seen;
  for (const json& p : v) {
    std::string why;
    std::string guest = p.is_string() ? ConfineGuestPath(p.get<std::string>(), &why) : "";
    if (guest.empty()) return c.Bad("returnFiles", p.is_string() ? why : "paths are strings");
    // The name as asked is the result's key; the run expands it (relative
    // names from the guest's cwd).
    if (seen.insert(guest).second) o->return_files.push_back(p.get<std::string>());
  }
  o->return_file_max = c.policy.return_file_max;
  // A directory or a pattern may give many files: in all, as many bytes as
  // the names would give as files (a name counted with its bytes).
  o->return_total_max = o->return_files.size() * (c.policy.return_file_max + kMaxPathBytes + 1);
  return true;
}

}  // namespace

std::string RequestError::Json() const {
  return nlohmann::json{{"error", {{"field", field}, {"message", message}}}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ConfineGuestPath(const std::string& path, std::string* why) {
  if (path.empty()) {
    *why = "a guest path is empty";
    return "";
  }
  if (path.size() > kMaxPathBytes) {
    *why = "a guest path is longer than 4095 bytes";
    return "";
  }
  if (path.find('\0') != std::string::npos) {
    *why = "a guest path holds a NUL byte";
    return "";
  }
  std::string full = path[0] == '/' ? path : absl::StrCat(kHome, "/", path);
  std::vector<std::string> parts = absl::StrSplit(full, '/', absl::SkipEmpty());
  if (parts.empty()) {
    *why = "a guest path names / itself";
    return "";
  }
  for (const std::string& p : parts) {
    if (p == "." || p == "..") {
      *why = "a guest path may not hold \".\" or \"..\"";
      return "";
    }
    if (p.size() > kMaxNameBytes) {
      *why = "a name in a guest path is longer than 255 bytes";
      return "";
    }
  }
  if (parts[0] == "proc" || parts[0] == "dev" || parts[0] == "sys") {
    *why = absl::StrCat("/", parts[0], " is the sandbox's own (generated), not for files");
    return "";
  }
  std::string out;
  for (const std::string& p : parts) absl::StrAppend(&out, "/", p);
  if (out.size() > kMaxPathBytes) {
    *why = "a guest path is longer than 4095 bytes";
    return "";
  }
  return out;
}

bool ParseRunRequest(const json& request, const ServerPolicy& policy, bool stream, RunJob* job,
                     RequestError* error) {
  Checker c{policy, error};
  if (!request.is_object()) return c.Bad("", "the request must be a JSON object");
  *job = RunJob();
  RunOptions& o = job->options;
  o = policy.base;
  // Nothing of a request names a host file: no script argument copied from
  // the server's cwd, no --copy, stdin from the request alone.
  o.copy_script = false;
  o.copy_hint = "a request's \"files\" put files in";
  o.copies.clear();
  o.copy_out.clear();
  o.stdin_path = "-";
  o.json = true;
  o.trace = o.timings = false;
  o.argv.clear();
  std::string language;
  bool has_code = false;
  for (const auto& [key, v] : request.items()) {
    if (key == "language") {
      if (!v.is_string() || (v != "python" && v != "bash")) {
        return c.Bad(key, "\"python\" or \"bash\"");
      }
      language = v.get<std::string>();
    } else if (key == "code") {
      if (!v.is_string()) return c.Bad(key, "must be a string");
      job->code = v.get<std::string>();
      has_code = true;
    } else if (key == "argv") {
      if (!Argv(c, v, &o)) return false;
    } else if (key == "stdin") {
      if (!Content(c, key, v, &job->stdin_data, nullptr)) return false;
    } else if (key == "files") {
      if (!Files(c, v, &o)) return false;
    } else if (key == "limits") {
      if (!Limits(c, v, &o)) return false;
    } else if (key == "network") {
      if (!Network(c, v, job)) return false;
    } else if (key == "returnFiles") {
      if (!ReturnFiles(c, v, &o)) return false;
    } else if (key == "mergeStderr") {
      if (!v.is_boolean()) return c.Bad(key, "must be true or false");
      o.merge_stderr = v.get<bool>();
    } else {
      return c.Bad(key,
                   "unknown field (known: language, code, argv, stdin, files, limits, network, "
                   "returnFiles, mergeStderr)");
    }
  }
  if (has_code == !o.argv.empty()) return c.Bad("code", "give either \"code\" or \"argv\"");
  if (!has_code && !language.empty()) {
    return c.Bad("language", "goes with \"code\"; \"argv\" names its program itself");
  }
  if (has_code) {
    bool bash = language == "bash";
    std::string script = bash ? kBashScript : kPythonScript;
    for (const InlineFile& f : o.inline_files) {
      if (f.guest_path == script) {
        return c.Bad(absl::StrCat("files[\"", script, "\"]"), "that path holds the request's code");
      }
    }
    o.inline_files.push_back(InlineFile{script, job->code, 0644});
    if (bash) {
      o.argv = {"bash", "main.sh"};
    } else if (stream) {
      o.argv = {"python3", "-u", "main.py"};  // each print reaches the stream at once
    } else {
      o.argv = {"python3", "main.py"};
    }
  }
  return true;
}

}  // namespace sentry::agent
