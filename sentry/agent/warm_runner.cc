#include "sentry/agent/warm_runner.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sentry/agent/cold_runner.h"
#include "sentry/base/log.h"
#include "sentry/pool/pool_wire.h"
#include "sentry/pool/warm_sweep.h"

namespace sentry::agent {

absl::StatusOr<std::unique_ptr<Runner>> MakeRunner(const RunOptions& base, const WarmFlags& warm) {
  // What a crashed server (this user's) left in /tmp goes first.
  SweepStaleWarmDirs();
  absl::StatusOr<std::unique_ptr<ColdRunner>> cold = ColdRunner::Start(base);
  if (!cold.ok()) return cold.status();
  if (warm.pool_size == 0) return std::unique_ptr<Runner>(std::move(*cold));
  if (pool::ShapeOf(base) != pool::ShapeOf(RunOptions{})) {
    log::Warn(
        "no warm pool: the server's --disk, --no-cgroups, namespace or network flags need a "
        "cold start for every run");
    return std::unique_ptr<Runner>(std::move(*cold));
  }
  WarmPythonOptions po;
  po.size = warm.pool_size;
  po.refill = warm.pool_refill;
  po.preload = warm.preload;
  po.accept_timeout_ms = warm.pool_wait_ms;
  absl::StatusOr<std::unique_ptr<WarmPythonPool>> pool = WarmPythonPool::Start(po);
  if (!pool.ok()) {
    log::Warn(absl::StrCat("no warm pool (every run starts cold): ", pool.status().message()));
    return std::unique_ptr<Runner>(std::move(*cold));
  }
  return std::unique_ptr<Runner>(new WarmRunner(std::move(*cold), std::move(*pool)));
}

std::string WarmRunner::WhyCold(const RunJob& job) {
  const RunOptions& o = job.options;
  if (o.argv.size() < 2 || o.argv[0] != "python3") return "not a python run";
  if (!o.tools.empty()) return "host tools (a warm interpreter has no tool channel)";
  if (o.merge_stderr) return "mergeStderr (a warm interpreter's stdout and stderr are two pipes)";
  for (const InlineFile& f : o.inline_files) {
    if (f.mode != 0644) return absl::StrCat("the file ", f.guest_path, " is not of mode 0644");
  }
  // The pool's sandboxes are made with the default shape (no network, the
  // default disk, cgroups, namespaces); a run of another shape is made cold.
  if (pool::ShapeOf(o) != pool::ShapeOf(RunOptions{})) return "not the pool's sandbox shape";
  return "";
}

absl::StatusOr<RunOutcome> WarmRunner::Run(const RunJob& job, OutputSink* sink) {
  if (WhyCold(job).empty()) {
    WarmRunRequest req;
    req.limits = job.options;
    // What the cold runner's child sets whatever the server's options: no
    // host file read, no trace or log of the sandbox's own.
    req.limits.inline_files.clear();
    req.limits.files.clear();
    req.limits.copies.clear();
    req.limits.copy_out.clear();
    req.limits.trace = req.limits.timings = false;
    req.limits.log_path.clear();
    req.argv = job.options.argv;
    for (const InlineFile& f : job.options.inline_files)
      req.files.emplace_back(f.guest_path, f.data);
    req.stdin_bytes = job.stdin_data;
    req.cancel_fd = job.cancel_fd;
    WarmPythonPool::OutputFn on_output;
    if (sink) on_output = [sink](int stream, std::string_view data) { sink->Chunk(stream, data); };
    std::string why;
    std::optional<std::string> result = pool_->Run(req, &why, on_output);
    if (!result && why == "cancelled") return absl::CancelledError("the call was cancelled");
    if (result) {
      RunOutcome out;
      try {
        out.exit_code = nlohmann::json::parse(*result).at("exitCode").get<int>();
      } catch (const nlohmann::json::exception& e) {
        return absl::InternalError(absl::StrCat("the warm run's result is not JSON: ", e.what()));
      }
      out.result_json = std::move(*result);
      ++warm_runs_;
      return out;
    }
    // None free, or the pool refused: the cold start below, never a failure.
  }
  return cold_->Run(job, sink);
}

uint64_t WarmRunner::Ready() const { return static_cast<uint64_t>(pool_->Ready()); }

}  // namespace sentry::agent
