#include "sentry/session/session_manager.h"

#include <sys/random.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sentry/base/json_out.h"
#include "sentry/base/log.h"
#include "sentry/base/sha256.h"
#include "sentry/run/audit_log.h"

namespace sentry::session {
namespace {

using nlohmann::json;
using Ordered = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// A spare waits at most this long for its owner, then is made again (its
// supervisor's backstop clock runs from its start).
constexpr double kSpareMaxAgeSec = 600;

// A duration field in ms: > 0 and at most ceiling_sec; *out in seconds.
bool Duration(const json& request, const char* key, double ceiling_sec, double* out, Answer* err) {
  auto it = request.find(key);
  if (it == request.end()) return true;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0) {
    *err = ErrorAnswer(400, "a positive number of milliseconds", key);
    return false;
  }
  double sec = it->get<double>() / 1000;
  if (sec > ceiling_sec) {
    *err = ErrorAnswer(403, absl::StrCat("above the server's limit (", ceiling_sec * 1000, " ms)"),
                       key);
    return false;
  }
  *out = sec;
  return true;
}

}  // namespace

std::string NewSessionId() {
  unsigned char bytes[12];
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    log::Error("getrandom failed");
    abort();  // an id that could repeat must never be handed out
  }
  std::string hex;
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return "ses_" + hex;
}

Answer ErrorAnswer(int status, const std::string& message, const std::string& field) {
  Answer a;
  a.status = status;
  a.body = {{"error", {{"message", message}}}};
  if (!field.empty()) a.body["error"]["field"] = field;
  return a;
}

SessionManager::SessionManager(ManagerOptions options, std::unique_ptr<SandboxLauncher> launcher)
    : options_(std::move(options)), launcher_(std::move(launcher)) {
  fork_spares_ = std::make_unique<ForkSpares>(*launcher_, SpecFor(options_.policy.base, false, {}),
                                              options_.fork_spares);
}

SessionManager::~SessionManager() { Shutdown(); }

void SessionManager::Start() {
  reaper_ = std::thread([this] { Reap(); });
  refill_ = std::thread([this] { Refill(); });
}

SandboxSpec SessionManager::SpecFor(const RunOptions& o, bool network_none,
                                    const std::vector<std::string>& allow) const {
  SandboxSpec spec;
  spec.argv = options_.kernel_argv;
  spec.memory_bytes = o.memory_bytes;
  spec.pids = o.pids;
  spec.disk_bytes = o.disk_bytes;
  spec.nofile = o.nofile;
  spec.cpus = o.cpus;
  spec.network_none = network_none;
  spec.allow = allow;
  // At most 8 malloc arenas in the kernel (glibc's default: 8 a CPU, 64 MiB
  // of address space each). A forked kernel keeps every arena its parent
  // made, and its new threads would make more: down a chain of forks each
  // level added ~300 MiB of address space, and without root --memory is
  // RLIMIT_AS (a chain stopped at 3 levels under 1 GiB). With a cap the
  // arenas inherited are reused. The kernel drops it from its environment.
  spec.env = {"MALLOC_ARENA_MAX=8"};
  // The backstop if the server is gone: the longest a session or a spare lives.
  spec.timeout_sec = options_.max_lifetime_sec + kSpareMaxAgeSec + 60;
  return spec;
}

void SessionManager::Refill() {
  std::unique_lock<std::mutex> lock(mu_);
  int failures = 0;
  while (true) {
    cv_.wait(lock, [&] {
      return stopping_ || static_cast<int>(spares_.size()) + spares_starting_ < options_.spares;
    });
    if (stopping_) return;
    ++spares_starting_;
    lock.unlock();
    std::shared_ptr<Session> s;
    auto launched = Session::Launch(*launcher_, SpecFor(options_.policy.base, false, {}));
    std::string why;
    if (!launched.ok()) {
      why = std::string(launched.status().message());
    } else if ((*launched)->WaitReady(options_.ready_timeout_sec, &why)) {
      s = std::move(*launched);
      SessionTerms spare;
      spare.max_lifetime_sec = kSpareMaxAgeSec;
      spare.idle_timeout_sec = kSpareMaxAgeSec;
      s->Claim(spare);
    }
    lock.lock();
    --spares_starting_;
    if (s) {
      failures = 0;
      spares_.push_back(std::move(s));
      cv_.notify_all();
    } else {
      if (failures++ == 0) log::Warn(absl::StrCat("a spare session could not start: ", why));
      // Not in a tight loop: a kernel that cannot start fails the same way again.
      cv_.wait_for(lock, std::chrono::seconds(std::min(failures, 10)), [&] { return stopping_; });
    }
  }
}

std::shared_ptr<Session> SessionManager::TakeSpare() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!spares_.empty()) {
    std::shared_ptr<Session> s = std::move(spares_.front());
    spares_.pop_front();
    cv_.notify_all();  // the refill makes the next
    if (!s->ended()) return s;
  }
  return nullptr;
}

void SessionManager::Retire(const std::shared_ptr<Session>& s) {
  std::optional<Ended> e = s->ended();
  if (!e || s->id().empty()) return;
  live_.erase(s->id());
  // Its forked sessions are tracked while it lingers for them, never after
  // (the address may be another session's later).
  if (std::find(lingering_.begin(), lingering_.end(), s) == lingering_.end()) {
    children_of_.erase(s.get());
  }
  if (ended_.emplace(s->id(), EndedRecord{s->tenant(), *e}).second) {
    ++ended_by_reason_[ReasonName(e->reason)];
    ended_order_.push_back(s->id());
    while (ended_order_.size() > kEndedKept) {
      ended_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
}

void SessionManager::Reap() {
  std::vector<std::shared_ptr<Session>> dying;  // ended, their sandboxes going
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
    auto now = Clock::now();
    std::vector<std::shared_ptr<Session>> all;
    for (const auto& [id, s] : live_) all.push_back(s);
    for (const std::shared_ptr<Session>& s : all) {
      if (EndReason r = s->Expired(now); r != EndReason::kNone) EndOrLinger(s, r);
      if (s->ended()) {
        Retire(s);
        dying.push_back(s);
      }
    }
    for (auto it = spares_.begin(); it != spares_.end();) {
      if ((*it)->Expired(now) != EndReason::kNone || (*it)->ended()) {
        (*it)->End(EndReason::kShutdown);
        dying.push_back(*it);
        it = spares_.erase(it);
        cv_.notify_all();
      } else {
        ++it;
      }
    }
    // A parent kept for its forked sessions: stopped once they have ended.
    for (auto it = lingering_.begin(); it != lingering_.end();) {
      if (HasLiveChildren(it->get())) {
        ++it;
        continue;
      }
      (*it)->End(EndReason::kShutdown);  // the reason stays the first one
      children_of_.erase(it->get());
      dying.push_back(*it);
      it = lingering_.erase(it);
    }
    // Dropped once gone: the destructor joins a reader that has finished.
    lock.unlock();
    std::erase_if(dying, [](const std::shared_ptr<Session>& s) { return s->gone(); });
    lock.lock();
  }
}

void SessionManager::Shutdown() {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !reaper_.joinable() && !refill_.joinable() && live_.empty() &&
        spares_.empty()) {
      return;
    }
    stopping_ = true;
    cv_.notify_all();
  }
  if (reaper_.joinable()) reaper_.join();
  if (refill_.joinable()) refill_.join();
  fork_spares_->Shutdown();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : live_) all.push_back(s);
    for (const auto& s : spares_) all.push_back(s);
    for (const auto& s : lingering_) all.push_back(s);
    spares_.clear();
    lingering_.clear();
    children_of_.clear();
  }
  for (const auto& s : all) s->End(EndReason::kShutdown);
  for (const auto& s : all) s->WaitGone(30);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : all) Retire(s);
}

size_t SessionManager::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

size_t SessionManager::spares_ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spares_.size();
}

size_t SessionManager::fork_spares_ready() const { return fork_spares_->ready(); }

std::string SessionManager::MetricsText() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Ended sessions the reaper has yet to retire (it runs every 100 ms) count
  // as ended already: a client that saw a session end finds it counted.
  auto by_reason = ended_by_reason_;
  size_t open = 0;
  for (const auto& [id, s] : live_) {
    if (std::optional<Ended> e = s->ended()) {
      ++by_reason[ReasonName(e->reason)];
    } else {
      ++open;
    }
  }
  std::string t = absl::StrCat(
      "# HELP sentry_sessions_open Sessions open now.\n# TYPE sentry_sessions_open gauge\n",
      "sentry_sessions_open ", open,
      "\n# HELP sentry_session_spares_ready Sessions started ahead, waiting for an owner.\n"
      "# TYPE sentry_session_spares_ready gauge\nsentry_session_spares_ready ",
      spares_.size(),
      "\n# HELP sentry_session_fork_spares_ready Fork children's supervisors started ahead.\n"
      "# TYPE sentry_session_fork_spares_ready gauge\nsentry_session_fork_spares_ready ",
      fork_spares_->ready(),
      "\n# HELP sentry_session_cells_total Cells and commands run in sessions.\n"
      "# TYPE sentry_session_cells_total counter\nsentry_session_cells_total ",
      cells_.load(),
      "\n# HELP sentry_sessions_ended_total Sessions ended, by reason.\n"
      "# TYPE sentry_sessions_ended_total counter\n");
  for (const auto& [reason, n] : by_reason) {
    absl::StrAppend(&t, "sentry_sessions_ended_total{reason=\"", reason, "\"} ", n, "\n");
  }
  return t;
}

Answer SessionManager::EndedAnswer(const Ended& e) const {
  Answer a;
  a.status = 410;
  a.body = {{"error", e.Json()}};
  a.body["error"]["message"] = absl::StrCat("the session has ended: ", ReasonName(e.reason));
  return a;
}

std::shared_ptr<Session> SessionManager::Find(const std::string& tenant, const std::string& id,
                                              Answer* refusal) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(id);
  if (it != live_.end() && it->second->tenant() == tenant) {
    if (std::optional<Ended> e = it->second->ended()) {
      *refusal = EndedAnswer(*e);
      return nullptr;
    }
    return it->second;
  }
  auto gone = ended_.find(id);
  if (gone != ended_.end() && gone->second.tenant == tenant) {
    *refusal = EndedAnswer(gone->second.ended);
    return nullptr;
  }
  if (stopping_) {
    *refusal = ErrorAnswer(503, "the server is shutting down");
    return nullptr;
  }
  *refusal = ErrorAnswer(404, "no such session");
  return nullptr;
}

Answer SessionManager::Create(const std::string& tenant, const json& request) {
  if (!request.is_object()) return ErrorAnswer(400, "the body must be a JSON object");
  double idle = options_.idle_timeout_sec, lifetime = options_.max_lifetime_sec;
  Answer err;
  if (!Duration(request, "idleTimeoutMs", options_.idle_timeout_sec, &idle, &err) ||
      !Duration(request, "maxLifetimeMs", options_.max_lifetime_sec, &lifetime, &err)) {
    return err;
  }
  // limits, network and files are checked as a run request's are.
  json run = {{"argv", {"true"}}};
  for (const auto& [key, value] : request.items()) {
    if (key == "limits" || key == "network" || key == "files") {
      run[key] = value;
    } else if (key != "idleTimeoutMs" && key != "maxLifetimeMs") {
      return ErrorAnswer(400,
                         "unknown field (known: limits, network, files, idleTimeoutMs, "
                         "maxLifetimeMs)",
                         key);
    }
  }
  agent::RunJob job;
  agent::RequestError rerr;
  bool parsed = false;
  try {
    parsed = agent::ParseRunRequest(run, options_.policy, false, &job, &rerr);
  } catch (const json::exception& e) {
    rerr = agent::RequestError{400, "", absl::StrCat("malformed request: ", e.what())};
  }
  if (!parsed) {
    Answer a = ErrorAnswer(rerr.http_status, rerr.message, rerr.field);
    return a;
  }
  const RunOptions& o = job.options;
  const RunOptions& base = options_.policy.base;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return ErrorAnswer(503, "the server is shutting down");
    int mine = ReservedFor(tenant);
    for (const auto& [id, s] : live_) mine += s->tenant() == tenant;
    if (mine >= options_.max_sessions_per_tenant) {
      return ErrorAnswer(429, absl::StrCat("this token has ", mine,
                                           " sessions open, its cap "
                                           "(--max-sessions-per-token); delete one first"));
    }
    if (static_cast<int>(live_.size()) + reserved_total_ >= options_.max_sessions) {
      return ErrorAnswer(429, "the server holds as many sessions as it allows (--max-sessions)");
    }
  }
  // A spare has the server's limits and network; other sessions start now.
  bool spare_shape = o.memory_bytes == base.memory_bytes && o.pids == base.pids &&
                     o.disk_bytes == base.disk_bytes && o.nofile == base.nofile &&
                     o.cpus == base.cpus && job.allow.empty() &&
                     !(job.network_none && !base.net.allow.empty());
  std::shared_ptr<Session> s = spare_shape ? TakeSpare() : nullptr;
  if (!s) {
    auto launched = Session::Launch(*launcher_, SpecFor(o, job.network_none, job.allow));
    if (!launched.ok()) return ErrorAnswer(500, std::string(launched.status().message()));
    std::string why;
    if (!(*launched)->WaitReady(options_.ready_timeout_sec, &why)) return ErrorAnswer(500, why);
    s = std::move(*launched);
  }
  SessionTerms terms;
  terms.id = NewSessionId();
  terms.tenant = tenant;
  terms.idle_timeout_sec = idle;
  terms.max_lifetime_sec = lifetime;
  terms.max_output = o.max_output;
  terms.cell_timeout_sec = o.timeout_sec > 0 ? o.timeout_sec : lifetime;
  terms.max_cell_timeout_sec = base.timeout_sec > 0 ? base.timeout_sec : lifetime;
  terms.interrupt_grace_sec = options_.interrupt_grace_sec;
  terms.limits = LimitsJson(o);
  s->Claim(terms);
  for (const InlineFile& f : o.inline_files) {
    json reply;
    Status st = s->FileOp({{"op", "write_file"},
                           {"path", f.guest_path},
                           {"data", absl::Base64Escape(f.data)},
                           {"mode", f.mode}},
                          kFileTimeoutSec, &reply);
    if (st != Status::kOk || reply.value("op", "") == "file_error") {
      s->End(EndReason::kCrashed);
      return ErrorAnswer(500, absl::StrCat("could not write ", f.guest_path, " into the session: ",
                                           reply.value("message", json("")).dump()));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      s->End(EndReason::kShutdown);
      return ErrorAnswer(503, "the server is shutting down");
    }
    live_[terms.id] = s;
  }
  Answer a;
  a.status = 201;
  a.body = {{"id", terms.id}, {"expiresAt", s->ExpiresAt()}};
  return a;
}

Answer SessionManager::Execute(const std::string& tenant, const std::string& id,
                               const json& request, Kind kind, const Session::LiveFn& live) {
  Answer refusal;
  std::shared_ptr<Session> s = Find(tenant, id, &refusal);
  if (!s) return refusal;
  if (!request.is_object()) return ErrorAnswer(400, "the body must be a JSON object");
  json op;
  double timeout = 0;
  for (const auto& [key, value] : request.items()) {
    if (key == "timeoutMs") {
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
        return ErrorAnswer(400, "a positive number of milliseconds", key);
      }
      timeout = value.get<double>() / 1000;
    } else if (kind == Kind::kCell && key == "code") {
      if (!value.is_string()) return ErrorAnswer(400, "must be a string", key);
      op = {{"op", "cell"}, {"code", value}};
    } else if (kind == Kind::kCommand && key == "argv") {
      if (!value.is_array() || value.empty() || value.size() > options_.policy.max_argv) {
        return ErrorAnswer(400, "a non-empty list of strings", key);
      }
      for (const json& a : value) {
        if (!a.is_string()) return ErrorAnswer(400, "a non-empty list of strings", key);
      }
      op = {{"op", "command"}, {"argv", value}};
    } else if (kind == Kind::kCommand && key == "bash") {
      if (!value.is_string()) return ErrorAnswer(400, "must be a string", key);
      op = {{"op", "command"}, {"bash", value}};
    } else {
      return ErrorAnswer(400,
                         kind == Kind::kCell ? "unknown field (known: code, timeoutMs)"
                                             : "unknown field (known: argv or bash, timeoutMs)",
                         key);
    }
  }
  if (op.is_null()) {
    return ErrorAnswer(400, kind == Kind::kCell ? "needs \"code\"" : "needs \"argv\" or \"bash\"");
  }
  if (timeout > s->terms().max_cell_timeout_sec) {
    return ErrorAnswer(
        403,
        absl::StrCat("above the server's limit (", s->terms().max_cell_timeout_sec * 1000, " ms)"),
        "timeoutMs");
  }
  Ordered result;
  Status st = s->Execute(op, timeout, live, &result);
  if (st == Status::kBusy) {
    return ErrorAnswer(409, "a cell or command is already running in this session (one at a time)");
  }
  if (st == Status::kEnded) return EndedAnswer(*s->ended());
  ++cells_;
  LogCell(*s, op, result);
  Answer a;
  a.body = std::move(result);
  return a;
}

Answer SessionManager::Interrupt(const std::string& tenant, const std::string& id) {
  Answer refusal;
  std::shared_ptr<Session> s = Find(tenant, id, &refusal);
  if (!s) return refusal;
  if (s->Interrupt() == Status::kEnded) return EndedAnswer(*s->ended());
  Answer a;
  a.body = {{"id", id}, {"interrupted", true}};
  return a;
}

Answer SessionManager::Delete(const std::string& tenant, const std::string& id) {
  Answer refusal;
  std::shared_ptr<Session> s = Find(tenant, id, &refusal);
  if (!s) return refusal;
  bool kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    EndOrLinger(s, EndReason::kDeleted);
    kept = HasLiveChildren(s.get());
  }
  // Answered once nothing of it is left (processes, cgroup, files), unless
  // its sandbox is kept for the sessions forked from it.
  if (!kept) s->WaitGone(30);
  std::optional<Ended> e = s->ended();
  {
    std::lock_guard<std::mutex> lock(mu_);
    Retire(s);
  }
  Answer a;
  a.body = {{"id", id}, {"ended", e->Json()}, {"gone", s->gone()}};
  return a;
}

Answer SessionManager::Get(const std::string& tenant, const std::string& id) {
  Answer a;
  std::shared_ptr<Session> s = Find(tenant, id, &a);
  if (s) a.body = s->Info();
  return a;
}

Answer SessionManager::List(const std::string& tenant) {
  std::vector<std::shared_ptr<Session>> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : live_) {
      if (s->tenant() == tenant) mine.push_back(s);
    }
  }
  Ordered list = Ordered::array();
  for (const auto& s : mine) list.push_back(s->Info());
  Answer a;
  a.body = {{"sessions", std::move(list)}};
  return a;
}

void SessionManager::LogCell(const Session& s, const json& op, const Ordered& result) {
  if (options_.log_path.empty()) return;
  AuditRecord rec;
  rec.run_id = absl::StrCat(s.id(), "/", logged_++);
  if (op.contains("code")) {
    rec.argv = {"cell"};
    const std::string& code = op["code"].get_ref<const std::string&>();
    rec.code = code.substr(0, 64 << 10);
    rec.code_hash = Sha256Hex(code);
  } else if (op.contains("bash")) {
    rec.argv = {"bash", "-c", op["bash"].get<std::string>()};
  } else {
    rec.argv = op["argv"].get<std::vector<std::string>>();
  }
  rec.limits = s.terms().limits;
  Ordered logged = result;
  logged["tenant"] = s.tenant();
  rec.result_json = JsonDump(logged);
  if (absl::Status st = AppendAuditRecord(options_.log_path, rec); !st.ok()) {
    log::Error(std::string(st.message()));
  }
}

}  // namespace sentry::session
