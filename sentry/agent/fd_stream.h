// FdStream: a connected socket as Beast's SyncReadStream/SyncWriteStream,
// with a timeout on every wait: a client that stalls (slowloris) gets
// net::error::timed_out and its connection ends, which asio's own blocking
// sockets cannot do (they ignore SO_RCVTIMEO).
#ifndef SENTRY_AGENT_FD_STREAM_H_
#define SENTRY_AGENT_FD_STREAM_H_

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>

namespace sentry::agent {

class FdStream final {
 public:
  FdStream(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}

  // A deadline for all the waits from now on, however many: ms from now
  // (0: none). Each wait is still at most the timeout.
  void SetDeadline(int ms) {
    deadline_ = ms > 0 ? Clock::now() + std::chrono::milliseconds(ms) : Clock::time_point::max();
  }

  template <class Buffers>
  size_t read_some(const Buffers& buffers, boost::system::error_code& ec) {
    iovec iov[kMaxIov];
    int n = Gather(buffers, iov);
    if (n == 0) return Done(ec, 0);
    while (true) {
      ssize_t r = readv(fd_, iov, n);
      if (r > 0) return Done(ec, static_cast<size_t>(r));
      if (r == 0) {
        ec = boost::asio::error::eof;
        return 0;
      }
      if (!Wait(POLLIN, ec)) return 0;
    }
  }

  template <class Buffers>
  size_t write_some(const Buffers& buffers, boost::system::error_code& ec) {
    iovec iov[kMaxIov];
    int n = Gather(buffers, iov);
    if (n == 0) return Done(ec, 0);
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    while (true) {
      ssize_t r = sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (r >= 0) return Done(ec, static_cast<size_t>(r));
      if (!Wait(POLLOUT, ec)) return 0;
    }
  }

  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    boost::system::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers) {
    boost::system::error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  static constexpr int kMaxIov = 16;

  template <class Buffers>
  static int Gather(const Buffers& buffers, iovec* iov) {
    int n = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && n < kMaxIov; ++it) {
      auto b = *it;
      if (b.size() == 0) continue;
      iov[n++] = {const_cast<void*>(static_cast<const void*>(b.data())), b.size()};
    }
    return n;
  }
  static size_t Done(boost::system::error_code& ec, size_t n) {
    ec = {};
    return n;
  }
  // After a failed call: waits for the fd if it would block (false, with ec
  // set, on a timeout or another error).
  bool Wait(short events, boost::system::error_code& ec) {
    if (errno == EINTR) return true;
    if (errno != EAGAIN) {
      ec = boost::system::error_code(errno, boost::system::system_category());
      return false;
    }
    pollfd p{fd_, events, 0};
    int r;
    do {
      int wait = timeout_ms_;
      if (deadline_ != Clock::time_point::max()) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
        wait = static_cast<int>(std::clamp<int64_t>(left, 0, timeout_ms_));
      }
      r = wait > 0 ? poll(&p, 1, wait) : 0;
    } while (r < 0 && errno == EINTR);
    if (r > 0) return true;
    ec = boost::asio::error::timed_out;
    return false;
  }

  using Clock = std::chrono::steady_clock;
  int fd_;
  int timeout_ms_;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_FD_STREAM_H_
