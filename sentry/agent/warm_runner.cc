#include "sentry/agent/warm_runner.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "sentry/agent/cold_runner.h"
#include "sentry/run/pool_wire.h"

namespace sentry::agent {

const char* const kWarmFlagsHelp =
    R"(Warm interpreters (python runs without a network):
  --pool-size N       Python interpreters kept started, each for one run
                      (default 4; 0: every run starts cold)
  --pool-refill N     interpreters made at once in the background, at a lower
                      priority than the runs (default 2)
  --pool-wait MS      how long a run waits for a free interpreter before it
                      starts cold (default 100)
  --preload MODULES   modules imported ahead in each, e.g. numpy,pandas
)";

int ParseWarmFlag(const std::string& flag, const std::function<bool(std::string*)>& value,
                  WarmFlags* out, std::string* why) {
  std::string v;
  if (flag == "--pool-size") {
    if (!value(&v) || !absl::SimpleAtoi(v, &out->pool_size) || out->pool_size < 0 ||
        out->pool_size > 64) {
      return *why = "--pool-size needs 0 to 64", -1;
    }
  } else if (flag == "--pool-refill") {
    if (!value(&v) || !absl::SimpleAtoi(v, &out->pool_refill) || out->pool_refill < 1 ||
        out->pool_refill > 64) {
      return *why = "--pool-refill needs 1 to 64", -1;
    }
  } else if (flag == "--pool-wait") {
    if (!value(&v) || !absl::SimpleAtoi(v, &out->pool_wait_ms) || out->pool_wait_ms < 0 ||
        out->pool_wait_ms > 60000) {
      return *why = "--pool-wait needs 0 to 60000 (ms)", -1;
    }
  } else if (flag == "--preload") {
    if (!value(&v)) return *why = "--preload needs module names, e.g. numpy,pandas", -1;
    for (absl::string_view m : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      out->preload.emplace_back(m);
    }
  } else {
    return 0;
  }
  return 1;
}

absl::StatusOr<std::unique_ptr<Runner>> MakeRunner(const RunOptions& base, const WarmFlags& warm) {
  absl::StatusOr<std::unique_ptr<ColdRunner>> cold = ColdRunner::Start(base);
  if (!cold.ok()) return cold.status();
  if (warm.pool_size == 0) return std::unique_ptr<Runner>(std::move(*cold));
  if (pool::ShapeOf(base) != pool::ShapeOf(RunOptions{})) {
    std::fprintf(stderr,
                 "sentry: no warm pool: the server's --disk, --no-cgroups, namespace or network "
                 "flags need a cold start for every run\n");
    return std::unique_ptr<Runner>(std::move(*cold));
  }
  WarmPythonOptions po;
  po.size = warm.pool_size;
  po.refill = warm.pool_refill;
  po.preload = warm.preload;
  po.accept_timeout_ms = warm.pool_wait_ms;
  absl::StatusOr<std::unique_ptr<WarmPythonPool>> pool = WarmPythonPool::Start(po);
  if (!pool.ok()) {
    std::fprintf(stderr, "sentry: no warm pool (every run starts cold): %s\n",
                 std::string(pool.status().message()).c_str());
    return std::unique_ptr<Runner>(std::move(*cold));
  }
  return std::unique_ptr<Runner>(new WarmRunner(std::move(*cold), std::move(*pool)));
}

std::string WarmRunner::WhyCold(const RunJob& job) {
  const RunOptions& o = job.options;
  if (o.argv.size() < 2 || o.argv[0] != "python3") return "not a python run";
  if (!o.tools.empty()) return "host tools (a warm interpreter has no tool channel)";
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
    req.limits.trace = req.limits.timings = false;
    req.limits.log_path.clear();
    req.argv = job.options.argv;
    for (const InlineFile& f : job.options.inline_files)
      req.files.emplace_back(f.guest_path, f.data);
    req.stdin_bytes = job.stdin_data;
    WarmPythonPool::OutputFn on_output;
    if (sink) on_output = [sink](int stream, std::string_view data) { sink->Chunk(stream, data); };
    std::optional<std::string> result = pool_->Run(req, nullptr, on_output);
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
