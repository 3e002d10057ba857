// NdjsonSink: the live output of POST /v1/runs?stream=1 and of a session's
// cells and commands (?stream=1), as NDJSON lines in a chunked answer:
// {"stream": "stdout", "data": "..."} as the output comes, then the last
// line (the result). The headers go with the first line, so a request
// refused before its run gets an ordinary answer instead. Each stream sends
// at most max_per_stream bytes (the result keeps head and tail), cut only
// between whole UTF-8 sequences.
#ifndef SENTRY_AGENT_NDJSON_SINK_H_
#define SENTRY_AGENT_NDJSON_SINK_H_

#include <boost/beast/core/error.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "sentry/agent/fd_stream.h"
#include "sentry/agent/runner.h"

namespace sentry::agent {

class NdjsonSink final : public OutputSink {
 public:
  NdjsonSink(FdStream& s, uint64_t max_per_stream) : s_(s), max_(max_per_stream) {}

  // stream: 1 stdout, 2 stderr.
  void Chunk(int stream, std::string_view data) override;
  bool started() const { return started_; }
  // Sends last_line (with its newline) and ends the chunked answer.
  void Finish(const std::string& last_line);

 private:
  void Line(const std::string& line);

  FdStream& s_;
  uint64_t max_;
  uint64_t sent_[2] = {0, 0};
  std::string carry_[2];
  bool started_ = false;
  bool ok_ = true;
  boost::system::error_code ec_;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_NDJSON_SINK_H_
