#include "sentry/tools/tool_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "sentry/tools/tool_runner.h"

namespace sentry::tools {
namespace {

using Json = nlohmann::json;

std::string ErrorAnswer(const std::string& message) {
  return Json{{"error", message}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

struct ToolChannel::Conn {
  UniqueFd fd;
  std::string in;  // a frame as it arrives, its 4-byte length first
};

ToolChannel::ToolChannel(std::vector<HostTool> tools) : tools_(std::move(tools)) {}

ToolChannel::~ToolChannel() { Stop(); }

bool ToolChannel::Start() {
  wake_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  cancel_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_ || !cancel_) return false;
  thread_ = std::thread([this] { Serve(); });
  return true;
}

SysResult<UniqueFd> ToolChannel::Open(int flags) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || open_now_ >= kMaxOpenChannels || opens_ >= kMaxOpens) return Errno{EBUSY};
  int type = SOCK_STREAM | SOCK_CLOEXEC | (flags & O_NONBLOCK ? SOCK_NONBLOCK : 0);
  int sv[2];
  if (socketpair(AF_UNIX, type, 0, sv) != 0) return Errno{ENFILE};
  UniqueFd guest(sv[0]), ours(sv[1]);
  fcntl(ours.get(), F_SETFL, O_NONBLOCK);
  ++open_now_;
  ++opens_;
  pending_.push_back(std::move(ours));
  uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof(one));
  return guest;
}

void ToolChannel::Stop() {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  if (cancel_) (void)!write(cancel_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

std::vector<ToolCall> ToolChannel::Calls() {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void ToolChannel::Record(ToolCall call) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back(std::move(call));
}

std::string ToolChannel::Answer(const std::string& frame) {
  ToolCall call;
  double start = NowMs();
  auto refuse = [&](const std::string& message) {
    call.error = message;
    call.ms = static_cast<uint64_t>(NowMs() - start);
    Record(call);
    return ErrorAnswer(message);
  };
  if (++requests_ > kMaxCalls) {
    return ErrorAnswer(absl::StrCat("this run made its ", kMaxCalls, " tool calls"));
  }
  if (!JsonDepthAtMost(frame, kMaxJsonDepth)) {
    return refuse(absl::StrCat("the request nests deeper than ", kMaxJsonDepth));
  }
  Json request = Json::parse(frame, nullptr, false);
  if (request.is_discarded() || !request.is_object() || !request.contains("tool") ||
      !request["tool"].is_string()) {
    return refuse("the request is not {\"tool\": NAME, \"args\": {...}}");
  }
  call.name = request["tool"].get<std::string>().substr(0, 64);
  Json args = request.value("args", Json::object());
  if (!args.is_object()) return refuse("args must be an object of keyword arguments");
  std::string args_json = args.dump(-1, ' ', false, Json::error_handler_t::replace);
  call.arg_bytes = args_json.size();
  if (args_json.size() > kMaxArgBytes) {
    return refuse(absl::StrCat("the arguments are larger than ", kMaxArgBytes, " bytes"));
  }
  const HostTool* tool = nullptr;
  for (const HostTool& t : tools_) {
    if (t.name == call.name) tool = &t;
  }
  if (!tool) return refuse(absl::StrCat("no tool is named ", call.name));
  ToolOutcome outcome = RunHostTool(*tool, args_json, kCallTimeoutMs, cancel_.get());
  call.ms = static_cast<uint64_t>(NowMs() - start);
  if (!outcome.ok) {
    call.error = outcome.error;
    Record(call);
    return ErrorAnswer(outcome.error);
  }
  std::string answer =
      Json{{"ok", std::move(outcome.value)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  // The value's own bytes: the answer but its envelope, {"ok":...}.
  call.result_bytes = answer.size() - std::string_view(R"({"ok":})").size();
  Record(call);
  return answer;
}

void ToolChannel::Serve() {
  // A tool that closes its stdin early makes the write EPIPE, not a signal.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  std::vector<Conn> conns;
  auto send_all = [this](int fd, const std::string& answer) {
    uint32_t n = htonl(static_cast<uint32_t>(answer.size()));
    std::string out(reinterpret_cast<const char*>(&n), 4);
    out += answer;
    size_t sent = 0;
    double deadline = NowMs() + kCallTimeoutMs;
    while (sent < out.size() && !stopping_) {
      ssize_t put = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (put > 0) {
        sent += put;
        continue;
      }
      if (put < 0 && errno != EAGAIN && errno != EINTR) return false;
      int left = static_cast<int>(deadline - NowMs());
      if (left <= 0) return false;  // a guest that reads no answer loses its connection
      pollfd p[2] = {{fd, POLLOUT, 0}, {cancel_.get(), POLLIN, 0}};
      poll(p, 2, left);
    }
    return sent == out.size();
  };
  while (!stopping_) {
    std::vector<pollfd> p;
    p.push_back({wake_.get(), POLLIN, 0});
    p.push_back({cancel_.get(), POLLIN, 0});
    for (const Conn& c : conns) p.push_back({c.fd.get(), POLLIN, 0});
    if (poll(p.data(), p.size(), -1) < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    if (p[0].revents) {
      uint64_t n;
      (void)!read(wake_.get(), &n, sizeof(n));
      std::lock_guard<std::mutex> lock(mu_);
      for (UniqueFd& fd : pending_) conns.push_back({std::move(fd), {}});
      pending_.clear();
    }
    for (size_t i = 0; i < conns.size(); ++i) {
      if (i + 2 >= p.size() || !p[i + 2].revents) continue;
      Conn& c = conns[i];
      bool close_it = false;
      // Only what the frame still needs is read: the header, then its body.
      size_t want = 4;
      if (c.in.size() >= 4) {
        uint32_t n;
        memcpy(&n, c.in.data(), 4);
        want = 4 + ntohl(n);
      }
      char buf[65536];
      ssize_t got = recv(c.fd.get(), buf, std::min(sizeof(buf), want - c.in.size()), 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        close_it = true;
      } else if (got > 0) {
        c.in.append(buf, got);
        if (c.in.size() == 4) {
          uint32_t n;
          memcpy(&n, c.in.data(), 4);
          n = ntohl(n);
          if (n == 0 || n > kMaxFrameBytes) {
            send_all(c.fd.get(), ErrorAnswer(absl::StrCat("a request frame of ", n,
                                                          " bytes: at most ", kMaxFrameBytes)));
            close_it = true;
          }
        } else if (c.in.size() == want && want > 4) {
          std::string answer = Answer(c.in.substr(4));
          c.in.clear();
          bool past_cap = requests_ > kMaxCalls;
          if (!send_all(c.fd.get(), answer) || past_cap) close_it = true;
        }
      }
      if (close_it) {
        c.fd.Reset();
        std::lock_guard<std::mutex> lock(mu_);
        --open_now_;
      }
    }
    std::erase_if(conns, [](const Conn& c) { return !c.fd; });
  }
}

}  // namespace sentry::tools
