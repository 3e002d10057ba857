// The values of sentry run's flags: sizes, durations, variables, mounts.
#include "sentry/cli/flag_values.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sentry::cli {

// -e K=V adds a variable; -e K passes the caller's K through if it is set
// (and nothing if not), as docker does. The rest of the host's environment
// never enters.
std::string AddEnv(const std::string& v, std::vector<std::string>* env) {
  size_t eq = v.find('=');
  std::string key = v.substr(0, eq);
  if (key.empty()) return "needs K=V, or K to pass the caller's K through";
  if (key.find_first_of(" \t") != std::string::npos) return "a variable's name has no blanks";
  if (eq != std::string::npos) {
    env->push_back(v);
  } else if (const char* host = getenv(key.c_str())) {
    env->push_back(absl::StrCat(key, "=", host));
  }
  return "";
}

// docker's --env-file: one K=V or K a line; blank lines and # comments
// skipped; no quoting (a value is everything after the first '=').
std::string AddEnvFile(const std::string& path, std::vector<std::string>* env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::StrCat("cannot read it: ", std::strerror(errno));
  constexpr size_t kMax = 1 << 20;
  std::string text(kMax + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMax) return "larger than 1 MiB";
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    if (std::string why = AddEnv(std::string(trimmed), env); !why.empty()) {
      return absl::StrCat("line ", line_no, ": ", why);
    }
  }
  return "";
}

// -v HOST:GUEST[:ro|:rw]. HOST is an existing host directory (absolute or
// ./relative, resolved now); GUEST an absolute sandbox path outside /proc
// and /dev.
std::string AddMount(const std::string& v, std::vector<BindMount>* mounts) {
  std::vector<std::string> parts = absl::StrSplit(v, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty()) {
    return "needs HOST:GUEST, HOST:GUEST:ro or HOST:GUEST:rw";
  }
  BindMount m;
  if (parts.size() == 3) {
    if (parts[2] == "ro") {
      m.mode = BindMount::Mode::kReadOnly;
    } else if (parts[2] == "rw") {
      m.mode = BindMount::Mode::kReadWrite;
    } else {
      return absl::StrCat("sentry knows the modes ro and rw, not \"", parts[2], "\"");
    }
  }
  const std::string& host = parts[0];
  if (host[0] != '/' && host[0] != '.') {
    return "sentry has no named volumes: HOST is a directory path (absolute, or ./relative)";
  }
  char real[PATH_MAX];
  if (!realpath(host.c_str(), real)) {
    return absl::StrCat(host, ": ", std::strerror(errno),
                        " (sentry does not make a missing HOST, docker -v would)");
  }
  struct stat st;
  if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
    return "HOST must be a directory; --copy HOST:GUEST copies a single file in";
  }
  m.host_path = real;
  const std::string& guest = parts[1];
  if (guest[0] != '/') return "GUEST must be an absolute path in the sandbox";
  std::vector<std::string> comps = absl::StrSplit(guest, '/', absl::SkipEmpty());
  if (comps.empty()) return "GUEST cannot be /";
  for (const std::string& c : comps) {
    if (c == "." || c == "..") return "GUEST must not hold . or ..";
  }
  if (comps[0] == "proc" || comps[0] == "dev") return "GUEST cannot be under /proc or /dev";
  m.guest_path = "/" + absl::StrJoin(comps, "/");
  for (const BindMount& other : *mounts) {
    if (other.guest_path == m.guest_path) return "GUEST is mounted twice";
  }
  mounts->push_back(std::move(m));
  return "";
}

std::string AddCopy(const std::string& v, RunOptions* o) {
  size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) {
    return "needs HOST:GUEST, e.g. --copy data.csv:/home/sandbox/data.csv";
  }
  o->copies.emplace_back(v.substr(0, colon), v.substr(colon + 1));
  return "";
}

std::string AddHost(const std::string& v, RunOptions* o) {
  size_t colon = v.find(':');
  std::optional<net::IpAddr> ip;
  if (colon != std::string::npos) ip = net::IpAddr::Parse(v.substr(colon + 1));
  if (colon == std::string::npos || colon == 0 || !ip) {
    return "needs NAME:IP, e.g. api.internal:203.0.113.7";
  }
  o->net.static_hosts[absl::AsciiStrToLower(v.substr(0, colon))] = *ip;
  return "";
}

bool ParseSize(const std::string& text, uint64_t bare_unit, uint64_t* out, std::string* why) {
  std::string s = absl::AsciiStrToLower(text);
  size_t end = s.find_first_not_of("0123456789.");
  std::string number = s.substr(0, end);
  std::string unit = end == std::string::npos ? "" : s.substr(end);
  double n;
  if (number.empty() || !absl::SimpleAtod(number, &n) || !std::isfinite(n) || n < 0) return false;
  static const std::pair<const char*, int> kUnits[] = {
      {"b", 0}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}};
  double bytes;
  if (unit.empty()) {
    if (bare_unit == 0) {
      *why = "needs a unit: docker reads a bare number as bytes, sentry as MiB (512m, 2g)";
      return false;
    }
    bytes = n * static_cast<double>(bare_unit);
  } else {
    int shift = -1;
    for (const auto& [name, s] : kUnits) {
      // "k", "kb", "kib" (and "b" alone) all name the same binary unit.
      if (unit == name ||
          (unit[0] == name[0] && s > 0 && (unit.substr(1) == "b" || unit.substr(1) == "ib"))) {
        shift = s;
      }
    }
    if (shift < 0) return false;
    bytes = std::ldexp(n, shift);
  }
  if (bytes < 1 || bytes > std::ldexp(1, 50)) return false;
  *out = static_cast<uint64_t>(bytes);
  return true;
}

bool ParseDuration(const std::string& text, double* seconds) {
  std::string s = absl::AsciiStrToLower(text);
  double scale = 1;
  for (const auto& [suffix, factor] : std::initializer_list<std::pair<const char*, double>>{
           {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}}) {
    std::string sfx = suffix;
    if (s.size() > sfx.size() && s.compare(s.size() - sfx.size(), sfx.size(), sfx) == 0 &&
        std::isdigit(static_cast<unsigned char>(s[s.size() - sfx.size() - 1]))) {
      scale = factor;
      s.resize(s.size() - sfx.size());
      break;
    }
  }
  double n;
  if (!absl::SimpleAtod(s, &n) || !std::isfinite(n) || n < 0 || n * scale > 1e9) return false;
  *seconds = n * scale;
  return true;
}

std::string CheckAgainstHost(const RunOptions& o, const RunOptions* file) {
  RunOptions defaults;
  cpu_set_t set;
  if (o.cpus > 0 && sched_getaffinity(0, sizeof(set), &set) == 0 && o.cpus > CPU_COUNT(&set)) {
    std::string name = file && file->cpus == o.cpus ? "limits file: \"cpus\"" : "--cpus";
    return absl::StrFormat("%s %g: this host gives sentry %d CPUs; ask for at most that", name,
                           o.cpus, CPU_COUNT(&set));
  }
  struct sysinfo si;
  if (o.memory_bytes != defaults.memory_bytes && sysinfo(&si) == 0) {
    uint64_t total = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    if (o.memory_bytes > total) {
      if (file && file->memory_bytes == o.memory_bytes) {
        return absl::StrFormat(
            "limits file: \"memoryMb\" %d: this host has %d MiB of memory; ask for at most that",
            o.memory_bytes >> 20, total >> 20);
      }
      return absl::StrFormat("--memory %.1fg: this host has %.1fg of memory; ask for at most that",
                             std::ldexp(static_cast<double>(o.memory_bytes), -30),
                             std::ldexp(static_cast<double>(total), -30));
    }
  }
  return "";
}

std::string CheckAllowRules(const RunOptions& o, const RunOptions* file) {
  for (const net::AllowRule& rule : o.net.allow) {
    std::string why = net::RefusePrivateRule(rule, o.net.allow_private);
    if (why.empty()) continue;
    bool from_file = file && std::any_of(file->net.allow.begin(), file->net.allow.end(),
                                         [&](const net::AllowRule& r) {
                                           return r.host == rule.host && r.port == rule.port;
                                         });
    std::string text = rule.port ? absl::StrCat(rule.host, ":", rule.port) : rule.host;
    if (rule.literal && rule.literal->family == AF_INET6 && rule.port) {
      text = absl::StrCat("[", rule.host, "]:", rule.port);
    }
    return absl::StrCat(from_file ? "limits file: \"network\" allow " : "--allow-net ", text, ": ",
                        why);
  }
  return "";
}

std::string ParseIdMode(const std::string& v, IdMode* out) {
  if (v == "auto") {
    *out = IdMode::kAuto;
  } else if (v == "range") {
    *out = IdMode::kRange;
  } else if (v == "single") {
    *out = IdMode::kSingle;
  } else {
    return "needs auto, range or single";
  }
  return "";
}

}  // namespace sentry::cli
