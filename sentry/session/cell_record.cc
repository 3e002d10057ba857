#include "sentry/session/cell_record.h"

#include "sentry/base/json_out.h"

namespace sentry::session {
namespace {

using nlohmann::json;
using Ordered = nlohmann::ordered_json;

// The MIME bundles of one cell, all together: a figure is ~50 KiB, a
// DataFrame's HTML a few; past this they are counted, not kept.
constexpr uint64_t kMaxResultsBytes = 32 << 20;

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A MIME bundle as the kernel sent it: an object of MIME type to value.
bool Bundle(const json& j, Ordered* out, uint64_t* bytes) {
  if (!j.is_object()) return false;
  *out = Ordered(j);
  *bytes = j.dump(-1, ' ', false, json::error_handler_t::replace).size();
  return true;
}

}  // namespace

CellRecord::CellRecord(uint64_t id, uint64_t max_output, bool live)
    : id_(id),
      max_output_(max_output),
      live_(live),
      out_(static_cast<size_t>(max_output)),
      err_(static_cast<size_t>(max_output)) {}

void CellRecord::Stream(const std::string& name, const std::string& text) {
  (name == "stderr" ? err_ : out_).Append(text.data(), text.size());
  // The interleaved list keeps as much as both streams do, then counts.
  if (streams_bytes_ + text.size() > 2 * max_output_) {
    streams_dropped_ += text.size();
  } else {
    streams_bytes_ += text.size();
    if (!streams_.empty() && streams_.back()["name"] == name) {
      streams_.back()["text"].get_ref<std::string&>() += text;
    } else {
      streams_.push_back({{"name", name}, {"text", text}});
    }
  }
  // What the client has not taken yet is bounded too (it may read slowly).
  if (live_ && live_bytes_ + text.size() <= 2 * max_output_) {
    live_bytes_ += text.size();
    live_chunks_.emplace_back(name, text);
  }
}

bool CellRecord::OnFrame(const json& frame) {
  std::string op = Str(frame, "op");
  if (op == "stream") {
    std::string name = Str(frame, "name");
    if (name != "stdout" && name != "stderr") return false;
    auto text = frame.find("text");
    if (text == frame.end() || !text->is_string()) return false;
    Stream(name, text->get<std::string>());
    return true;
  }
  if (op == "display") {
    Ordered bundle;
    uint64_t bytes = 0;
    auto data = frame.find("data");
    if (data == frame.end() || !Bundle(*data, &bundle, &bytes)) return false;
    if (results_bytes_ + bytes > kMaxResultsBytes) {
      ++results_dropped_;
    } else {
      results_bytes_ += bytes;
      results_.push_back(std::move(bundle));
    }
    return true;
  }
  if (op != "done") return false;
  done_ = true;
  auto count = frame.find("executionCount");
  if (count != frame.end() && count->is_number_integer()) execution_count_ = count->get<int64_t>();
  auto result = frame.find("result");
  if (result != frame.end() && !result->is_null()) {
    Ordered bundle;
    uint64_t bytes = 0;
    if (!Bundle(*result, &bundle, &bytes)) return false;
    if (results_bytes_ + bytes > kMaxResultsBytes) {
      ++results_dropped_;
    } else {
      results_.push_back(std::move(bundle));
    }
  }
  auto error = frame.find("error");
  if (error != frame.end() && error->is_object()) {
    Ordered e = Ordered::object();
    e["name"] = Str(*error, "name");
    e["value"] = Str(*error, "value");
    Ordered tb = Ordered::array();
    auto lines = error->find("traceback");
    if (lines != error->end() && lines->is_array()) {
      for (const json& l : *lines) {
        if (l.is_string()) tb.push_back(l.get<std::string>());
      }
    }
    e["traceback"] = std::move(tb);
    error_ = std::move(e);
  }
  auto code = frame.find("exitCode");
  if (code != frame.end() && code->is_number_integer()) exit_code_ = code->get<int64_t>();
  return true;
}

std::deque<std::pair<std::string, std::string>> CellRecord::TakeLive() {
  live_bytes_ = 0;
  return std::exchange(live_chunks_, {});
}

Ordered CellRecord::Result(bool timed_out, const char* limit, double duration_ms) const {
  return Ordered{{"executionCount", execution_count_},
                 {"stdout", JsonText(out_.Text())},
                 {"stderr", JsonText(err_.Text())},
                 {"streams", streams_},
                 {"results", results_},
                 {"error", error_},
                 {"exitCode", exit_code_},
                 {"timedOut", timed_out},
                 {"limit", limit ? Ordered(limit) : Ordered(nullptr)},
                 {"denied", Ordered::array()},
                 {"durationMs", JsonNumber(duration_ms)},
                 {"stdoutDroppedBytes", out_.dropped()},
                 {"stderrDroppedBytes", err_.dropped()},
                 {"streamsDroppedBytes", streams_dropped_},
                 {"resultsDropped", results_dropped_}};
}

}  // namespace sentry::session
