// OutputBuffer: keeps the first and last part of a stream that may be endless,
// so a run that prints 10 GB returns its beginning, its end (where errors and
// tracebacks are) and the count of what was dropped, in bounded memory.
#ifndef SENTRY_RUN_OUTPUT_BUFFER_H_
#define SENTRY_RUN_OUTPUT_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace sentry {

class OutputBuffer final {
 public:
  // Keeps at most max_bytes: the first half and the last half.
  explicit OutputBuffer(size_t max_bytes) : max_(max_bytes) {}

  void Append(const char* data, size_t n);
  // head + (a marker naming the dropped count, if any) + tail.
  std::string Text() const;
  uint64_t dropped() const { return dropped_; }
  uint64_t total() const { return total_; }

 private:
  size_t max_;
  std::string head_;
  std::string tail_;  // a ring kept in order by trimming from the front
  uint64_t dropped_ = 0;
  uint64_t total_ = 0;
};

}  // namespace sentry

#endif  // SENTRY_RUN_OUTPUT_BUFFER_H_
