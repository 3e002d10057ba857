#include "sentry/agent/ndjson_sink.h"

#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "sentry/base/json_out.h"

namespace sentry::agent {
namespace {

namespace http = boost::beast::http;

// Where the bytes of a UTF-8 text can be cut: before any incomplete
// sequence at its end (kept for the next chunk).
size_t CompleteUtf8(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xc0) == 0x80) continue;  // a continuation byte: look further back
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return len > back ? n - back : n;
  }
  return n;
}

}  // namespace

void NdjsonSink::Chunk(int stream, std::string_view data) {
  uint64_t& sent = sent_[stream - 1];
  std::string& carry = carry_[stream - 1];
  if (sent >= max_) return;  // the rest is in the result (head and tail)
  carry.append(data.substr(0, static_cast<size_t>(std::min<uint64_t>(data.size(), max_ - sent))));
  size_t cut = CompleteUtf8(carry);
  if (cut == 0) return;
  sent += cut;
  nlohmann::ordered_json line = {{"stream", stream == 1 ? "stdout" : "stderr"},
                                 {"data", JsonText(carry.substr(0, cut))}};
  Line(JsonDump(line) + "\n");
  carry.erase(0, cut);
}

void NdjsonSink::Finish(const std::string& last_line) {
  Line(last_line);
  if (ok_) boost::asio::write(s_, http::make_chunk_last(), ec_);
}

void NdjsonSink::Line(const std::string& line) {
  if (!ok_) return;  // the client left: the run goes on to its end
  if (!started_) {
    started_ = true;
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::server, "sentry");
    res.set(http::field::content_type, "application/x-ndjson");
    res.set(http::field::cache_control, "no-store");
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    http::write_header(s_, sr, ec_);
    ok_ = !ec_;
  }
  if (ok_) boost::asio::write(s_, http::make_chunk(boost::asio::buffer(line)), ec_);
  ok_ = ok_ && !ec_;
}

}  // namespace sentry::agent
