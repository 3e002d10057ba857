#include "tests/agent/agent_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "tests/util/subprocess.h"

namespace sentry::testing {
namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int Connect(const std::string& address) {
  if (address.rfind("unix:", 0) == 0) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::string path = address.substr(5);
    memcpy(sa.sun_path, path.data(), path.size());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(atoi(address.c_str() + colon + 1)));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

nlohmann::json HttpReply::Json() const {
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

std::string RawExchange(const std::string& address, const std::string& bytes, double timeout_sec) {
  int fd = Connect(address);
  if (fd < 0) return "";
  for (size_t off = 0; off < bytes.size();) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string out;
  char buf[1 << 16];
  double deadline = Now() + timeout_sec;
  while (Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

std::vector<int> HostProcessesWith(const std::string& marker) {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    int pid = atoi(e->d_name);
    if (pid <= 0) continue;
    // read(2), not a stream: a process that ends between the open and the
    // read makes the read fail with ESRCH, which libstdc++'s filebuf throws.
    int fd = open((std::string("/proc/") + e->d_name + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmd;
    char buf[4096];
    ssize_t got;
    while ((got = read(fd, buf, sizeof(buf))) > 0) cmd.append(buf, static_cast<size_t>(got));
    close(fd);
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find(marker) != std::string::npos) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

HttpReply ParseHttpReply(const std::string& raw) {
  HttpReply r;
  size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
  r.status = atoi(raw.c_str() + 9);
  size_t line = raw.find("\r\n") + 2;
  while (line < end) {
    size_t eol = raw.find("\r\n", line);
    std::string h = raw.substr(line, eol - line);
    size_t colon = h.find(':');
    if (colon != std::string::npos) {
      size_t v = h.find_first_not_of(' ', colon + 1);
      r.headers[Lower(h.substr(0, colon))] = v == std::string::npos ? "" : h.substr(v);
    }
    line = eol + 2;
  }
  std::string body = raw.substr(end + 4);
  if (Lower(r.headers["transfer-encoding"]) == "chunked") {
    std::string plain;
    size_t pos = 0;
    while (pos < body.size()) {
      size_t eol = body.find("\r\n", pos);
      if (eol == std::string::npos) break;
      size_t len = strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
      if (len == 0) break;
      plain += body.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    body = plain;
  }
  r.body = body;
  return r;
}

ServeProcess::ServeProcess(const std::vector<std::string>& extra, const std::string& listen) {
  char tmpl[] = "/tmp/sentry-token-XXXXXX";
  int tfd = mkstemp(tmpl);
  token_file_ = tmpl;
  std::string line = std::string(kToken) + "\n";
  (void)!write(tfd, line.data(), line.size());
  close(tfd);
  std::vector<std::string> argv = {SentryBinary(), "serve",        "--listen",
                                   listen,         "--token-file", token_file_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  int err[2];
  if (pipe2(err, O_CLOEXEC) < 0) std::abort();
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(err[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err[1]);
  err_fd_ = err[0];
  fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  double deadline = Now() + 20;
  const std::string kMark = "listening on ";
  while (Now() < deadline && address_.empty()) {
    Stderr();
    size_t at = err_.find(kMark);
    size_t eol = at == std::string::npos ? at : err_.find('\n', at);
    if (eol != std::string::npos) {
      address_ = err_.substr(at + kMark.size(), eol - at - kMark.size());
      break;
    }
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    usleep(10000);
  }
}

std::string ServeProcess::Stderr() {
  char buf[4096];
  ssize_t n;
  while ((n = read(err_fd_, buf, sizeof(buf))) > 0) err_.append(buf, static_cast<size_t>(n));
  return err_;
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (err_fd_ >= 0) close(err_fd_);
  unlink(token_file_.c_str());
}

int ServeProcess::Stop(double timeout_sec) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  double deadline = Now() + timeout_sec;
  int status;
  while (Now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    usleep(10000);
  }
  return -1;
}

HttpReply ServeProcess::Request(const std::string& method, const std::string& target,
                                const std::string& body, bool auth,
                                const std::vector<std::string>& headers) const {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: sentry\r\nConnection: close\r\n";
  if (auth) req += std::string("Authorization: Bearer ") + kToken + "\r\n";
  for (const std::string& h : headers) req += h + "\r\n";
  if (!body.empty() || method == "POST") {
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  return ParseHttpReply(RawExchange(address_, req));
}

McpProcess::McpProcess(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {SentryBinary(), "mcp"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) std::abort();
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  in_ = in[1];
  out_ = out[0];
  signal(SIGPIPE, SIG_IGN);
}

McpProcess::~McpProcess() {
  if (in_ >= 0) close(in_);
  if (out_ >= 0) close(out_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void McpProcess::Send(const std::string& line) {
  std::string l = line + "\n";
  (void)!write(in_, l.data(), l.size());
}

std::optional<std::string> McpProcess::ReadLine(double timeout_sec) {
  double deadline = Now() + timeout_sec;
  while (true) {
    size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    double left = deadline - Now();
    if (left <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char buf[1 << 16];
    ssize_t n = read(out_, buf, sizeof(buf));
    if (n <= 0) return std::nullopt;
    buf_.append(buf, static_cast<size_t>(n));
  }
}

nlohmann::json McpProcess::Call(int id, const std::string& method, const nlohmann::json& params) {
  SendJson(nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  while (auto line = ReadLine(60)) {
    auto j = nlohmann::json::parse(*line, nullptr, false);
    if (j.is_object() && j.value("id", nlohmann::json()) == id) return j;
  }
  return nullptr;
}

int McpProcess::Finish() {
  close(in_);
  in_ = -1;
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace sentry::testing
