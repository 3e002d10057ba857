// CellRecord: what one cell (or command) of a session gave, gathered from
// the kernel's frames as they come, bounded as a `--json` result is: each
// output stream keeps its head and tail (OutputBuffer) and counts what it
// dropped, the interleaved `streams` list and the MIME bundles have byte
// budgets of their own. The result object is built once, at the cell's end.
#ifndef SENTRY_SESSION_CELL_RECORD_H_
#define SENTRY_SESSION_CELL_RECORD_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "nlohmann/json.hpp"
#include "sentry/run/output_buffer.h"

namespace sentry::session {

class CellRecord final {
 public:
  // max_output: bytes kept per stream (head and tail), as --max-output.
  CellRecord(uint64_t id, uint64_t max_output, bool live);

  uint64_t id() const { return id_; }
  // A frame of this cell; false if it is not one the kernel may send for a
  // cell (the caller then ends the session: a bad frame).
  bool OnFrame(const nlohmann::json& frame);
  bool done() const { return done_; }

  // With live: the stream chunks not yet taken (name, text), in order.
  std::deque<std::pair<std::string, std::string>> TakeLive();
  bool has_live() const { return !live_chunks_.empty(); }

  // The result object: executionCount, stdout, stderr, streams, results,
  // error, exitCode, timedOut, limit, denied, durationMs and the counts of
  // what was dropped.
  nlohmann::ordered_json Result(bool timed_out, const char* limit, double duration_ms) const;

 private:
  void Stream(const std::string& name, const std::string& text);

  uint64_t id_;
  uint64_t max_output_;
  bool live_;
  OutputBuffer out_, err_;
  nlohmann::ordered_json streams_ = nlohmann::ordered_json::array();
  uint64_t streams_bytes_ = 0, streams_dropped_ = 0;
  nlohmann::ordered_json results_ = nlohmann::ordered_json::array();
  uint64_t results_bytes_ = 0, results_dropped_ = 0;
  std::deque<std::pair<std::string, std::string>> live_chunks_;
  uint64_t live_bytes_ = 0;
  bool done_ = false;
  int64_t execution_count_ = 0;
  nlohmann::ordered_json error_;
  nlohmann::ordered_json exit_code_;
};

}  // namespace sentry::session

#endif  // SENTRY_SESSION_CELL_RECORD_H_
