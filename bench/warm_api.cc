// The in-process warm pool (WarmPythonPool, what serve and mcp call) against
// native cold starts: N requests 100 ms apart, each a native
// `python3 -c CODE` (posix_spawn and wait) and then the same through
// WarmPythonPool::Run, interleaved. Prints p50 and p99 of each as
// markdown rows for bench/warm.sh.
//
// usage: bench_warm_api SENTRY N [PRELOAD CODE]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "sentry/pool/warm_python.h"

extern char** environ;

namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double NativeMs(const std::string& code) {
  const char* argv[] = {"/usr/bin/python3", "-c", code.c_str(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  double s = NowMs();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, const_cast<char**>(argv), environ) != 0) return -1;
  waitpid(pid, nullptr, 0);
  posix_spawn_file_actions_destroy(&fa);
  return NowMs() - s;
}

double Pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_warm_api SENTRY N [PRELOAD CODE]\n");
    return 2;
  }
  sentry::WarmPythonOptions o;
  o.sentry_binary = argv[1];
  int n = std::atoi(argv[2]);
  std::string code = argc > 4 ? argv[4] : "print(48271*6933)";
  if (argc > 3 && argv[3][0]) o.preload = {"numpy", "pandas"};
  o.size = 4;
  o.refill = static_cast<int>(std::thread::hardware_concurrency());
  o.accept_timeout_ms = 60000;  // measured: a request waits for its interpreter
  auto pool = sentry::WarmPythonPool::Start(o);
  if (!pool.ok()) {
    std::fprintf(stderr, "%s\n", std::string(pool.status().message()).c_str());
    return 1;
  }
  sentry::WarmRunRequest req;
  req.argv = {"python3", "-c", code};
  // Until the first interpreters are made.
  while (!(*pool)->Run(req)) {
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.preload.empty() ? 2 : 15));
  std::vector<double> native, warm;
  for (int i = 0; i < n; ++i) {
    native.push_back(NativeMs(code));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    double s = NowMs();
    std::string why;
    if (!(*pool)->Run(req, &why)) {
      std::fprintf(stderr, "a run went cold: %s\n", why.c_str());
      return 1;
    }
    warm.push_back(NowMs() - s);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const char* what = o.preload.empty() ? "print(48271*6933)" : "numpy+pandas DataFrame sum";
  for (double q : {0.5, 0.99}) {
    double a = Pct(native, q), b = Pct(warm, q);
    std::printf("| %s via WarmPythonPool::Run, p%d ms | %.1f | %.1f | %.2fx |\n", what,
                static_cast<int>(q * 100), a, b, b / a);
  }
  return 0;
}
