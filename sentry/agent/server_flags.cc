#include "sentry/agent/server_flags.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sentry/cli/limits_file.h"
#include "sentry/tools/host_tool.h"

namespace sentry::agent {
namespace {

// "256" (MiB), "256m", "1g", "512k", as `sentry run` reads a SIZE.
bool ParseSize(std::string v, uint64_t* out) {
  if (v.empty()) return false;
  uint64_t unit = 1 << 20;
  char last = static_cast<char>(absl::ascii_tolower(static_cast<unsigned char>(v.back())));
  if (last == 'k' || last == 'm' || last == 'g') {
    unit = last == 'k' ? 1 << 10 : last == 'm' ? 1 << 20 : 1 << 30;
    v.pop_back();
  }
  uint64_t n;
  if (!absl::SimpleAtoi(v, &n) || n == 0 || n > (1ull << 44) / unit) return false;
  *out = n * unit;
  return true;
}

}  // namespace

const char* const kServerFlagsHelp =
    R"(Server-wide limits (a request may only lower them; SIZE as 256m or 1g):
  --timeout SECONDS   each run's wall-clock cap (default 30)
  --memory SIZE       memory per run (default 1g)
  --pids-limit N      processes + threads per run (default 128)
  --cpus N            CPU quota per run (default none)
  --disk SIZE         in-memory files per run (default 512m)
  --max-output BYTES  stdout/stderr kept per stream (default 65536)
  --nofile N          open files per process (default 1024)
  --limits-file FILE  the limits as JSON (see `sentry run --help`); flags win
  --allow-net HOST[:PORT]  hosts a run may reach (repeatable); a request may
                      name a subset with "network": {"allow": [...]}
  --add-host NAME:IP  resolve NAME to IP for the allowlist
  --net-bytes SIZE    cap on the bytes that cross a run's edge
  --tool NAME=HOST_COMMAND  a host tool every run may call (repeatable; as for
                      `sentry run`)
  --no-cgroups, --no-namespaces, --require-namespaces   as for `sentry run`
Server:
  --log FILE          append one JSON line per run (argv, code, limits, result)
  --max-concurrent N  runs at once (default 4)
  --max-queue N       requests that wait for a run slot (default 16; past it, busy)
  --max-request-bytes SIZE  largest request (default 8m)
  --return-file-max SIZE    bytes returned of each returnFiles entry (default 1m)
)";

std::string ParseServerFlags(
    const std::vector<std::string>& args, ServerFlags* out,
    const std::function<int(const std::string&, const std::function<bool(std::string*)>&,
                            std::string*)>& own) {
  RunOptions& o = out->policy.base;
  std::string limits_file, network;
  // The limits file first, so that flags win over it wherever they stand.
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--limits-file") limits_file = args[i + 1];
  }
  if (!limits_file.empty()) {
    if (std::string why = cli::ApplyLimitsFile(limits_file, &o); !why.empty()) return why;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v, why;
    auto value = [&](std::string* into) {
      if (i + 1 >= args.size()) return false;
      *into = args[++i];
      return true;
    };
    int taken = own(a, value, &why);
    if (taken < 0) return why;
    if (taken > 0) continue;
    uint64_t size = 0;
    if (a == "--limits-file") {
      ++i;
    } else if (a == "--timeout") {
      if (!value(&v) || !absl::SimpleAtod(v, &o.timeout_sec) || o.timeout_sec < 0) {
        return "--timeout needs a number of seconds (0 for none)";
      }
    } else if (a == "--memory") {
      if (!value(&v) || !ParseSize(v, &o.memory_bytes) || o.memory_bytes < (8 << 20)) {
        return "--memory needs a size of at least 8m";
      }
    } else if (a == "--pids-limit") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.pids) || o.pids < 1) {
        return "--pids-limit needs a positive number";
      }
    } else if (a == "--cpus") {
      if (!value(&v) || !absl::SimpleAtod(v, &o.cpus) || o.cpus <= 0 || o.cpus > 1024) {
        return "--cpus needs a positive number";
      }
    } else if (a == "--disk") {
      if (!value(&v) || !ParseSize(v, &o.disk_bytes)) return "--disk needs a size";
    } else if (a == "--max-output") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.max_output) || o.max_output < 16) {
        return "--max-output needs a number of bytes (at least 16)";
      }
    } else if (a == "--nofile") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.nofile) || o.nofile < 16 || o.nofile > (1 << 20)) {
        return "--nofile needs 16 to 1048576";
      }
    } else if (a == "--allow-net") {
      net::AllowRule rule;
      if (!value(&v) || !net::ParseAllowRule(v, &rule, &why)) {
        return "--allow-net needs HOST[:PORT] (" + why + ")";
      }
      o.net.allow.push_back(rule);
    } else if (a == "--add-host") {
      size_t colon = value(&v) ? v.find(':') : std::string::npos;
      std::optional<net::IpAddr> ip;
      if (colon != std::string::npos) ip = net::IpAddr::Parse(v.substr(colon + 1));
      if (colon == std::string::npos || colon == 0 || !ip) return "--add-host needs NAME:IP";
      o.net.static_hosts[absl::AsciiStrToLower(v.substr(0, colon))] = *ip;
    } else if (a == "--unsafe-allow-private-address") {
      o.net.allow_private = true;
    } else if (a == "--net-bytes") {
      if (!value(&v) || !ParseSize(v, &o.net_bytes)) return "--net-bytes needs a size";
    } else if (a == "--network") {
      if (!value(&network) || (network != "none" && network != "allow")) {
        return "--network needs none or allow";
      }
    } else if (a == "--tool") {
      tools::HostTool tool;
      if (!value(&v)) return "--tool needs NAME=HOST_COMMAND";
      if (std::string bad = tools::ParseToolFlag(v, &tool); !bad.empty()) {
        return "--tool " + v + ": " + bad;
      }
      if (std::string bad = tools::AddTool(o.tools, std::move(tool)); !bad.empty()) return bad;
    } else if (a == "--no-cgroups") {
      o.cgroups = false;
    } else if (a == "--no-namespaces") {
      o.namespaces = NamespaceMode::kOff;
    } else if (a == "--require-namespaces") {
      o.namespaces = NamespaceMode::kRequire;
    } else if (a == "--log") {
      if (!value(&out->log_path) || out->log_path.empty()) return "--log needs a file";
    } else if (a == "--max-concurrent") {
      if (!value(&v) || !absl::SimpleAtoi(v, &out->max_concurrent) || out->max_concurrent < 1 ||
          out->max_concurrent > 1024) {
        return "--max-concurrent needs 1 to 1024";
      }
    } else if (a == "--max-queue") {
      if (!value(&v) || !absl::SimpleAtoi(v, &out->max_queue) || out->max_queue < 0 ||
          out->max_queue > 65536) {
        return "--max-queue needs 0 to 65536";
      }
    } else if (a == "--max-request-bytes") {
      if (!value(&v) || !ParseSize(v, &size) || size > (1ull << 30)) {
        return "--max-request-bytes needs a size up to 1g";
      }
      out->policy.max_request_bytes = size;
    } else if (a == "--return-file-max") {
      if (!value(&v) || !ParseSize(v, &out->policy.return_file_max) ||
          out->policy.return_file_max > (64 << 20)) {
        return "--return-file-max needs a size up to 64m";
      }
    } else {
      return "unknown flag " + a;
    }
  }
  if (network == "none" && !o.net.allow.empty()) return "--network none and --allow-net contradict";
  if (network == "allow" && o.net.allow.empty()) return "--network allow needs --allow-net";
  if (o.namespaces == NamespaceMode::kOff && !o.net.allow.empty()) {
    return "--no-namespaces leaves runs no network: no --allow-net";
  }
  return "";
}

}  // namespace sentry::agent
