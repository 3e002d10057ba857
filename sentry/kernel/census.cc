#include "sentry/kernel/census.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "syscalls/table.h"

namespace sentry {
namespace {

std::string SyscallName(int nr, bool namespaces) {
  const SyscallRow* row = namespaces ? FindSyscall(nr) : FindSyscallWithoutNamespaces(nr);
  return row ? row->name : "syscall_" + std::to_string(nr);
}

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : std::to_string(err);
}

constexpr const char* kCounting =
    "Every syscall of the guest went to the sentry: the census filter turns the ordinary "
    "filter's ALLOW and ERRNO answers into SECCOMP_RET_USER_NOTIF. For each notification the "
    "sentry ran the ordinary filter on its registers and answered as an ordinary run would: a "
    "native call was let run by the kernel (SECCOMP_USER_NOTIF_FLAG_CONTINUE) with no guest "
    "memory read, so its result is not seen; a refused one got the table's errno from the "
    "sentry; a trapped one its handler's answer. execve and execveat stop in ptrace "
    "(SECCOMP_RET_TRACE); the sentry sees their result only when it refuses them. Times are "
    "the sentry's, from receiving a call to answering it. Counting starts at the guest's first "
    "execve.";

}  // namespace

void Census::OnSyscall(const SyscallEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  // The guest's program starts at its first execve: what the loader does
  // before (read its command, set rlimits) is not the guest's.
  if (!started_ && e.action != EventAction::kTrace) return;
  started_ = true;
  Row& r = rows_[e.nr];
  ++r.calls;
  switch (e.action) {
    case EventAction::kNative:
      ++r.native;
      r.native_ns += e.duration_ns;
      break;
    case EventAction::kTrap:
      ++r.trapped;
      r.trap_ns += e.duration_ns;
      r.max_trap_ns = std::max(r.max_trap_ns, e.duration_ns);
      break;
    case EventAction::kTrace:
      ++r.traced;
      break;
    case EventAction::kRefused:
      ++r.refused;
      r.refuse_ns += e.duration_ns;
      break;
  }
  if (!e.result_known) {
    ++r.unknown_result;
  } else if (e.value < 0 && e.value > -4096) {
    ++r.errnos[static_cast<int>(-e.value)];
  }
  if (e.arrival) {
    if (*e.arrival >= 0 && static_cast<size_t>(*e.arrival) < phases_.size())
      ++phases_[static_cast<size_t>(*e.arrival)].calls[e.nr];
  } else if (auto it = phase_of_.find(e.tid); it != phase_of_.end()) {
    ++phases_[it->second].calls[e.nr];
  }
}

int64_t Census::Arrival(pid_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = phase_of_.find(tid);
  return it == phase_of_.end() ? -1 : static_cast<int64_t>(it->second);
}

void Census::OnMark(pid_t tid, const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_of_.erase(tid);
  if (label.empty()) return;
  if (phases_.size() >= kMaxPhases) {
    ++dropped_marks_;
    return;
  }
  phases_.push_back({label, {}});
  phase_of_[tid] = phases_.size() - 1;
}

void Census::OnNewTask(pid_t parent, pid_t child) {
  std::lock_guard<std::mutex> lock(mu_);
  // A host tid is reused once its task is gone: the new task starts afresh.
  phase_of_.erase(child);
  if (auto it = phase_of_.find(parent); it != phase_of_.end()) phase_of_[child] = it->second;
}

void Census::OnTaskGone(pid_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_of_.erase(tid);
}

std::string Census::ToJson(const std::vector<std::string>& argv) const {
  using nlohmann::json;
  std::lock_guard<std::mutex> lock(mu_);
  json rows = json::array();
  json totals = {{"calls", 0},  {"native", 0},  {"trapped", 0},
                 {"traced", 0}, {"refused", 0}, {"trapNs", 0}};
  for (const auto& [nr, r] : rows_) {
    json errnos = json::object();
    for (const auto& [err, n] : r.errnos) errnos[ErrnoName(err)] = n;
    rows.push_back({{"nr", nr},
                    {"name", SyscallName(nr, namespaces_)},
                    {"calls", r.calls},
                    {"native", r.native},
                    {"trapped", r.trapped},
                    {"traced", r.traced},
                    {"refused", r.refused},
                    {"resultNotSeen", r.unknown_result},
                    {"errnos", errnos},
                    {"trapNs", r.trap_ns},
                    {"maxTrapNs", r.max_trap_ns},
                    {"refuseNs", r.refuse_ns},
                    {"nativeNs", r.native_ns}});
    totals["calls"] = totals["calls"].get<uint64_t>() + r.calls;
    totals["native"] = totals["native"].get<uint64_t>() + r.native;
    totals["trapped"] = totals["trapped"].get<uint64_t>() + r.trapped;
    totals["traced"] = totals["traced"].get<uint64_t>() + r.traced;
    totals["refused"] = totals["refused"].get<uint64_t>() + r.refused;
    totals["trapNs"] = totals["trapNs"].get<uint64_t>() + r.trap_ns;
  }
  json phases = json::array();
  for (const Phase& p : phases_) {
    json calls = json::object();
    for (const auto& [nr, n] : p.calls) calls[SyscallName(nr, namespaces_)] = n;
    phases.push_back({{"label", p.label}, {"calls", calls}});
  }
  json out = {{"format", "sentry-census/1"},
              {"command", argv},
              {"table", namespaces_ ? "namespaces" : "seccomp wall alone"},
              {"counting", kCounting},
              {"totals", totals},
              {"syscalls", rows}};
  if (!phases.empty()) {
    out["phases"] = phases;
    out["phasesDropped"] = dropped_marks_;
  }
  return out.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string Census::Write(const std::string& path, const std::vector<std::string>& argv) const {
  std::string text = ToJson(argv);
  FILE* f = std::fopen(path.c_str(), "we");
  if (!f) return std::strerror(errno);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  return ok ? "" : std::strerror(errno);
}

}  // namespace sentry
