// Loopback TCP inside one process: connect latency and throughput. Run
// natively, as a sentry guest (its own loopback, connect trapped) and under
// runsc (gVisor's netstack); see bench/README.md.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"

namespace {

int Listener(sockaddr_in* addr) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  *addr = {};
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, reinterpret_cast<sockaddr*>(addr), sizeof(*addr)) < 0 || listen(l, 128) < 0) {
    return -1;
  }
  socklen_t len = sizeof(*addr);
  getsockname(l, reinterpret_cast<sockaddr*>(addr), &len);
  return l;
}

// One iteration: socket, connect, accept, close both ends.
void BM_LoopbackConnect(benchmark::State& state) {
  sockaddr_in addr;
  int l = Listener(&addr);
  if (l < 0) {
    state.SkipWithError("no loopback listener");
    return;
  }
  for (auto _ : state) {
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
      state.SkipWithError("connect failed");
      close(c);
      break;
    }
    int a = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    close(a);
    close(c);
  }
  close(l);
}
BENCHMARK(BM_LoopbackConnect)->UseRealTime();

// One iteration: 1 MiB written through a loopback connection that a second
// thread drains.
void BM_LoopbackThroughput(benchmark::State& state) {
  sockaddr_in addr;
  int l = Listener(&addr);
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    state.SkipWithError("no loopback connection");
    return;
  }
  int a = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  std::thread reader([a] {
    std::vector<char> buf(1 << 20);
    while (read(a, buf.data(), buf.size()) > 0) {
    }
  });
  std::vector<char> chunk(1 << 20, 'x');
  for (auto _ : state) {
    size_t sent = 0;
    while (sent < chunk.size()) {
      ssize_t n = write(c, chunk.data() + sent, chunk.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * (1 << 20));
  close(c);
  reader.join();
  close(a);
  close(l);
}
BENCHMARK(BM_LoopbackThroughput)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
