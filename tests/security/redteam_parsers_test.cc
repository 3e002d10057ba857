// Red team: the sentry's parsers of guest bytes (its DNS server, the
// credentials proxy) and the pool's socket (another uid, garbage requests,
// what a pooled guest holds).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/redteam_util.h"

namespace sentry::security {
namespace {

// --- the DNS server (127.0.0.1:53 in every namespaced sandbox) ---

TEST(RtParsers, DnsServerAnswersAfterMalformedQueries) {
  if (SeccompOnly()) GTEST_SKIP() << "no network (no DNS server) without namespaces";
  ProcessResult r = RunPy(R"PY(
import random, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.1)
def hdr(id=0x1234, flags=0x0100, qd=1): return struct.pack(">HHHHHH", id, flags, qd, 0, 0, 0)
def q(name=b"\x07example\x03com\x00", qtype=1, qclass=1): return name + struct.pack(">HH", qtype, qclass)
bad = {
    "empty": b"", "one byte": b"\x00", "eleven": b"\x00" * 11,
    "no question": hdr(qd=0) + q(), "two questions": hdr(qd=2) + q() + q(),
    "response bit": hdr(flags=0x8100) + q(),
    "pointer loop": hdr() + b"\xc0\x0c" + struct.pack(">HH", 1, 1),
    "label 64": hdr() + bytes([64]) + b"a" * 64 + b"\x00" + struct.pack(">HH", 1, 1),
    "name 300": hdr() + (bytes([63]) + b"a" * 63) * 5 + b"\x00" + struct.pack(">HH", 1, 1),
    "no qtype": hdr() + b"\x07example\x03com\x00\x00",
    "label past end": hdr() + b"\x3fabc",
    "opcode 5": hdr(flags=0x2900) + q(), "class CH": hdr() + q(qclass=3),
    "type ANY": hdr() + q(qtype=255), "nul label": hdr() + q(name=b"\x03a\x00b\x00"),
    "big": hdr() + q() + b"\xff" * 60000,
}
random.seed(7)
for i in range(300):
    bad["random %d" % i] = bytes(random.getrandbits(8) for _ in range(random.randint(0, 600)))
answered = 0
for name, pkt in bad.items():
    try:
        s.sendto(pkt, ("127.0.0.1", 53))
        s.recvfrom(2048)
        answered += 1
    except socket.timeout:
        pass
    except OSError as e:
        print("send " + name + "=" + errno.errorcode.get(e.errno, "?"))
print("answered_bad=OK", answered)
s.settimeout(3)
s.sendto(hdr(id=0x4242) + q(), ("127.0.0.1", 53))
reply, _ = s.recvfrom(2048)
print("good id=OK", hex(struct.unpack(">H", reply[:2])[0]))
print("good rcode=OK", reply[3] & 0xf)
)PY");
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "good id"), "OK") << Describe(r);
  EXPECT_EQ(Value(res, "good id"), "0x4242");
  EXPECT_EQ(Value(res, "good rcode"), "3");  // NXDOMAIN: no network
  EXPECT_GT(std::atoi(Value(res, "answered_bad").c_str()), 0)
      << Describe(r);  // parsed, not dropped
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
}

TEST(RtParsers, DnsQueryFloodKeepsTheDenialListBounded) {
  if (SeccompOnly()) GTEST_SKIP() << "no network (no DNS server) without namespaces";
  Background run(SentryArgv({"--json"}, {"/usr/bin/python3", "-c", R"PY(
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
sent = 0
for i in range(10000):
    name = b"".join(bytes([len(l)]) + l for l in [b"x%08d" % i, b"leak", b"example"]) + b"\x00"
    try:
        s.sendto(struct.pack(">HHHHHH", i & 0xffff, 0x100, 1, 0, 0, 0) + name + b"\x00\x01\x00\x01", ("127.0.0.1", 53))
        sent += 1
    except BlockingIOError:
        pass
    try:
        while True: s.recv(2048)
    except BlockingIOError:
        pass
print("sent", sent)
)PY"}));
  Sampler sampler(run.pid());
  ProcessResult r = run.Wait(60);
  Peaks p = sampler.Stop();
  ASSERT_NE(r.out.find("sent"), std::string::npos) << Describe(r);
  size_t listed = 0;
  for (size_t at = 0; (at = r.out.find("dns A x", at)) != std::string::npos; ++at) ++listed;
  EXPECT_GT(listed, 0u) << "the lookups were not even recorded";
  EXPECT_LE(listed, 512u) << "the result lists every denied lookup";
  EXPECT_LT(r.out.size(), 512u << 10) << "the --json result grows with the flood";
  EXPECT_LT(p.rss_kb, 256 * 1024) << "sentry peak RSS " << p.rss_kb << " kB";
}

// --trace decodes every trapped call's arguments from guest memory: the same
// bad pointers, unterminated strings and huge sizes as the efault probe.
TEST(RtParsers, TraceDecoderSurvivesHostileArguments) {
  ProcessResult plain = RunProbe({"efault"}, {}, 30);
  ProcessResult traced = RunProbe({"efault"}, {"--trace"}, 30);
  ASSERT_EQ(plain.exit_code, 0) << Describe(plain);
  EXPECT_EQ(traced.exit_code, 0) << Describe(traced);
  EXPECT_EQ(ParseResults(traced.out), ParseResults(plain.out)) << Describe(traced);
  EXPECT_NE(traced.err.find("open"), std::string::npos) << "no trace was written";
  EXPECT_LT(traced.err.size(), 1u << 20) << "the trace copies whole guest buffers";
}

// --- the credentials proxy (--secret) ---

// A raw HTTP upstream on the host's loopback: records each connection's bytes.
class RawUpstream {
 public:
  RawUpstream() : dir_("/tmp/rt-upstream-") {
    WriteFileOrDie(dir_.path() + "/up.py", R"PY(
import json, socket, sys, threading
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(64)
open(sys.argv[1] + "/port", "w").write(str(l.getsockname()[1]))
def serve(c):
    data = b""
    c.settimeout(2)
    try:
        while b"\r\n\r\n" not in data:
            b = c.recv(65536)
            if not b: break
            data += b
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass
    with open(sys.argv[1] + "/log", "a") as f:
        f.write(json.dumps(data.decode("latin-1")) + "\n")
    c.close()
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
)PY");
    pid_ = fork();
    if (pid_ == 0) {
      execl("/usr/bin/python3", "python3", (dir_.path() + "/up.py").c_str(), dir_.path().c_str(),
            nullptr);
      _exit(127);
    }
    for (int i = 0; i < 100 && port_ == 0; ++i) {
      usleep(30 * 1000);
      port_ = std::atoi(ReadFile(dir_.path() + "/port").value_or("0").c_str());
    }
  }
  ~RawUpstream() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  std::string Log() const { return ReadFile(dir_.path() + "/log").value_or(""); }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

std::vector<std::string> SecretFlags(int port) {
  return {"--secret", "http://api.test:" + std::to_string(port) + "=X-Key:env:RT_PROXY_SECRET",
          "--add-host", "api.test:127.0.0.1", "--unsafe-allow-private-address"};
}

constexpr const char* kSecretValue = "rt-proxy-secret-3141";

TEST(RtParsers, ProxyRefusesMalformedHeadsAndNeverRetargets) {
  if (SeccompOnly()) GTEST_SKIP() << "no network without namespaces";
  RawUpstream up;
  ASSERT_NE(up.port(), 0);
  setenv("RT_PROXY_SECRET", kSecretValue, 1);
  ProcessResult r = RunPy("port = " + std::to_string(up.port()) + R"PY(
import socket
heads = {
    "host override": b"GET /a HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "absolute uri": b"GET http://evil.example/b HTTP/1.1\r\nHost: api.test\r\n\r\n",
    "connect": b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "own key": b"GET /c HTTP/1.1\r\nX-Key: guest\r\nx-key: guest2\r\n\r\n",
    "cr in target": b"GET /d\rX-Key: x HTTP/1.1\r\n\r\n",
    "nul header": b"GET /e HTTP/1.1\r\nX-A: a\x00b\r\n\r\n",
    "obs fold": b"GET /f HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n",
    "chunked": b"POST /g HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "two lengths": b"POST /h HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "space name": b"GET /i HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
    "http 2": b"GET /j HTTP/2.0\r\n\r\n",
    "huge head": b"GET /k HTTP/1.1\r\n" + b"X-Pad: " + b"p" * 200000 + b"\r\n\r\n",
    "smuggle": b"POST /l HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /smuggled HTTP/1.1\r\n\r\n",
}
for name, head in heads.items():
    s = socket.create_connection(("api.test", 80), timeout=5)
    try:
        s.sendall(head)
        reply = b""
        while True:
            b = s.recv(65536)
            if not b: break
            reply += b
        print(name + "=OK " + reply.split(b"\r\n")[0].decode("latin-1"))
        if b"rt-proxy" in reply: print("LEAK in reply to " + name)
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, "?"))
    s.close()
)PY",
                          SecretFlags(up.port()));
  unsetenv("RT_PROXY_SECRET");
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "host override"), "<missing>") << Describe(r);
  EXPECT_EQ(r.out.find("LEAK"), std::string::npos) << Describe(r);
  auto status = [&](const std::string& n) { return Value(res, n); };
  EXPECT_NE(status("host override").find("200"), std::string::npos) << Describe(r);
  for (const char* n : {"connect", "cr in target", "nul header", "obs fold", "two lengths",
                        "space name", "http 2"}) {
    EXPECT_NE(status(n).find("400"), std::string::npos) << n << ": " << status(n);
  }
  EXPECT_NE(status("chunked").find("411"), std::string::npos) << status("chunked");
  // The head cap is checked before each read (64 KiB + one 16 KiB read may
  // pass); far past it, 431 (or a reset while the guest is still sending).
  std::string huge = Code(res, "huge head");
  EXPECT_TRUE(status("huge head").find("431") != std::string::npos || huge == "ECONNRESET" ||
              huge == "EPIPE")
      << res["huge head"];
  std::string log = up.Log();
  EXPECT_EQ(log.find("evil.example"), std::string::npos) << log;
  EXPECT_EQ(log.find("smuggled"), std::string::npos) << log;
  EXPECT_EQ(log.find("X-Key: guest"), std::string::npos) << log;
  // Every request that reached the upstream carries the secret exactly once.
  size_t requests = 0;
  for (size_t at = 0, nl; (nl = log.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = log.substr(at, nl - at);
    ++requests;
    size_t first = line.find(kSecretValue);
    EXPECT_NE(first, std::string::npos) << line;
    if (first != std::string::npos) {
      EXPECT_EQ(line.find(kSecretValue, first + 1), std::string::npos) << line;
    }
    EXPECT_NE(line.find("Host: api.test"), std::string::npos) << line;
  }
  EXPECT_GE(requests, 4u) << log;  // host override, absolute uri, own key, smuggle
}

// The proxy serves each connection on a thread of its own, and an idle
// connection lives 60 s. Was an ESCAPE (weakness: threads), no cap: 400 idle
// connections gave the sentry 409 threads (`sentry run --secret
// http://api.test=X:env:V -- python3 -c "import socket;c=[socket.
// create_connection(('api.test',80)) for _ in range(500)];import time;
// time.sleep(60)"`). Now at most 64 at once (kMaxConnections), 503 past it.
TEST(RtParsers, ProxyConnectionFloodKeepsTheSentrysThreadsBounded) {
  if (SeccompOnly()) GTEST_SKIP() << "no network without namespaces";
  RawUpstream up;
  ASSERT_NE(up.port(), 0);
  setenv("RT_PROXY_SECRET", kSecretValue, 1);
  std::vector<std::string> flags = SecretFlags(up.port());
  Background run(
      SentryArgv(flags, {"/usr/bin/python3", "-c", "port = " + std::to_string(up.port()) + R"PY(
import socket, time
held = []
for i in range(400):
    try:
        held.append(socket.create_connection(("api.test", 80), timeout=5))
    except OSError as e:
        print("stopped at", i, e); break
print("held=OK", len(held), flush=True)
time.sleep(1.5)
)PY"}));
  unsetenv("RT_PROXY_SECRET");
  Sampler sampler(run.pid());
  ProcessResult r = run.Wait(60);
  Peaks p = sampler.Stop();
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "held"), "OK") << Describe(r);
  long held = std::atol(Value(res, "held").c_str());
  EXPECT_GT(held, 100) << Describe(r);
  EXPECT_LE(p.threads, 64 + 16) << held << " idle connections to a --secret host gave the "
                                << "sentry " << p.threads << " threads";
}

// --- the pool's socket ---

class Pool {
 public:
  Pool() : dir_("/tmp/rt-pool-") {
    chmod(dir_.path().c_str(), 0755);
    socket_ = dir_.path() + "/p.sock";
    daemon_ = std::make_unique<Background>(std::vector<std::string>{
        sentry::testing::SentryBinary(), "pool", "--socket", socket_, "--size", "1"});
    for (int i = 0; i < 200 && !Listening(); ++i) usleep(20 * 1000);
  }
  ~Pool() {
    kill(daemon_->pid(), SIGTERM);
    daemon_->Wait(10);
  }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return daemon_->pid(); }
  bool Listening() const {
    struct stat st;
    return stat(socket_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
  }
  // Connects (as the current uid) and sends bytes; returns what came back.
  std::string Send(const std::string& bytes, int* err) const {
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_.c_str(), sizeof(a.sun_path) - 1);
    *err = 0;
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) {
      *err = errno;
      close(s);
      return "";
    }
    timeval tv{8, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)!send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    shutdown(s, SHUT_WR);
    std::string got;
    char buf[4096];
    ssize_t n;
    while ((n = recv(s, buf, sizeof(buf), 0)) > 0) got.append(buf, static_cast<size_t>(n));
    close(s);
    return got;
  }
  ProcessResult Run(const std::vector<std::string>& cmd) const {
    std::vector<std::string> argv = {sentry::testing::SentryBinary(), "run", "--pool", socket_,
                                     "--"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    return sentry::testing::RunProcess(argv, "", 30);
  }

 private:
  TempDir dir_;
  std::string socket_;
  std::unique_ptr<Background> daemon_;
};

TEST(RtPool, AnotherUserCannotUseThePool) {
  if (SeccompOnly()) GTEST_SKIP() << "the pool serves namespaced sandboxes";
  Pool pool;
  ASSERT_TRUE(pool.Listening());
  struct stat st;
  ASSERT_EQ(stat(pool.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // As another uid: first through the socket's mode, then (as if an operator
  // had opened it up) through the pool's own SO_PEERCRED check.
  auto as_nobody = [&](const char* what) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      if (setgid(65534) < 0 || setuid(65534) < 0) _exit(126);
      int err = 0;
      std::string got = pool.Send(std::string(64, 'x'), &err);
      std::string line = std::to_string(err) + " " + got;
      (void)!write(p[1], line.data(), line.size());
      _exit(0);
    }
    close(p[1]);
    std::string got;
    char buf[4096];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
    close(p[0]);
    waitpid(pid, nullptr, 0);
    return got + " (" + what + ")";
  };
  std::string mode_refusal = as_nobody("0600 socket");
  EXPECT_EQ(mode_refusal.rfind(std::to_string(EACCES) + " ", 0), 0u) << mode_refusal;
  chmod(pool.socket().c_str(), 0666);
  std::string peer_refusal = as_nobody("0666 socket");
  EXPECT_NE(peer_refusal.find("serves uid"), std::string::npos) << peer_refusal;
  chmod(pool.socket().c_str(), 0600);
  // The pool still serves its owner.
  ProcessResult r = pool.Run({"/bin/echo", "still-serving"});
  EXPECT_NE(r.out.find("still-serving"), std::string::npos) << Describe(r);
}

TEST(RtPool, GarbageRequestsLeaveThePoolServing) {
  if (SeccompOnly()) GTEST_SKIP() << "the pool serves namespaced sandboxes";
  Pool pool;
  ASSERT_TRUE(pool.Listening());
  auto le32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  std::vector<std::string> garbage = {
      "",
      "\x01",
      le32(0xffffffffu),
      le32(9u << 20) + std::string(100, 'a'),
      le32(64) + std::string(10, 'b'),
      le32(16) + std::string(16, '\xff'),
      le32(8) + std::string("\x01\xff\xff\xff\x7f"
                            "abc",
                            8),
  };
  int refused = 0;
  for (const std::string& g : garbage) {
    int err = 0;
    std::string got = pool.Send(g, &err);
    if (!got.empty() && got[0] == 'R') ++refused;
    EXPECT_EQ(err, 0);
  }
  EXPECT_GT(refused, 0) << "no garbage request was even answered";
  EXPECT_TRUE(Alive(pool.pid())) << "the pool daemon died";
  ProcessResult r = pool.Run({"/bin/echo", "still-serving"});
  EXPECT_NE(r.out.find("still-serving"), std::string::npos) << Describe(r);
}

TEST(RtPool, APooledGuestHoldsNoFdOfThePool) {
  if (SeccompOnly()) GTEST_SKIP() << "the pool serves namespaced sandboxes";
  Pool pool;
  ASSERT_TRUE(pool.Listening());
  ProcessResult r = pool.Run({"/usr/bin/python3", "-c",
                              "import fcntl, os, socket, errno\n"
                              "sock = " +
                                  PyQuote(pool.socket()) + R"PY(
open_fds = []
for fd in range(3, 1024):
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD); open_fds.append(fd)
    except OSError:
        pass
print("fds=" + repr(open_fds))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sock); print("connect=OK")
except OSError as e:
    print("connect=" + errno.errorcode.get(e.errno, "?"))
)PY"});
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "fds"), "<missing>") << Describe(r);
  EXPECT_EQ(res["fds"], "[]") << Describe(r);
  EXPECT_NE(Code(res, "connect"), "OK") << Describe(r);
}

}  // namespace
}  // namespace sentry::security
