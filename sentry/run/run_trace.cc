// --trace, --trace-file and --trace-timestamps: the run's trace writer, given
// to the tracer, the dispatcher and (with --census) the loop.
#include <memory>

#include "absl/strings/str_cat.h"
#include "sentry/base/log.h"
#include "sentry/run/run_internal.h"
#include "sentry/trace/trace_writer.h"

namespace sentry::run_internal {

std::optional<RunError> Run::StartTrace() {
  if (!o_.trace) return std::nullopt;
  trace::Timestamps ts =
      trace::ParseTimestamps(o_.trace_timestamps.empty() ? "none" : o_.trace_timestamps)
          .value_or(trace::Timestamps::kNone);
  std::shared_ptr<trace::TraceWriter> trace;
  if (o_.trace_file.empty()) {
    trace = std::make_shared<trace::TraceWriter>(stderr, ts);
  } else {
    auto opened = trace::TraceWriter::OpenFile(o_.trace_file, ts);
    if (!opened.ok()) {
      return RunError{kExitSentryError, absl::StrCat("--trace-file ", opened.status().message())};
    }
    trace = *std::move(opened);
  }
  if (!sync_wakeup_) log::Notice("notice: no synchronous wake-up (Linux < 6.6): slower traps");
  tracer_->set_trace(trace);
  dispatcher_->set_trace(trace);
  if (census_) loop_->set_trace(trace);  // the native and refused calls too
  return std::nullopt;
}

}  // namespace sentry::run_internal
