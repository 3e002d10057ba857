#include "sentry/run/output_buffer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sentry {

void OutputBuffer::Append(const char* data, size_t n) {
  total_ += n;
  size_t head_cap = max_ / 2;
  size_t tail_cap = max_ - head_cap;
  if (head_.size() < head_cap) {
    size_t take = std::min(n, head_cap - head_.size());
    head_.append(data, take);
    data += take;
    n -= take;
  }
  if (n == 0) return;
  if (n >= tail_cap) {
    dropped_ += tail_.size() + (n - tail_cap);
    tail_.assign(data + (n - tail_cap), tail_cap);
    return;
  }
  tail_.append(data, n);
  if (tail_.size() > tail_cap) {
    size_t excess = tail_.size() - tail_cap;
    dropped_ += excess;
    // Trimming in bulk keeps appends amortized O(1).
    if (tail_.capacity() > 2 * tail_cap) tail_.shrink_to_fit();
    tail_.erase(0, excess);
  }
}

std::string OutputBuffer::Text() const {
  if (dropped_ == 0) return head_ + tail_;
  return absl::StrCat(head_, "\n[... ", dropped_, " bytes dropped by sentry ...]\n", tail_);
}

}  // namespace sentry
