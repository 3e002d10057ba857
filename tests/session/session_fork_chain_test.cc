// A fork of a forked session (issue 26; FORK.md "A fork of a fork")
// through the real `sentry serve`: A forks B, B forks C1 and C2. The
// grandchildren start as B was at its fork and go their own way; every one
// of the four is walled from the three others as two unrelated sessions
// are (files, pids, /proc, ptrace, loopback, abstract and path sockets,
// ids); B and A outlive or predecease their descendants without harm; a
// chain deeper than the filter chain's cap is refused, saying its depth.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/session/session_client.h"
#include "tests/session/session_fork_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

// Defined in A, so every descendant has them too (after kWallsCode).
// others(skip): the pids, as the caller's pid namespace names them, that
// kill(p, 0) or PTRACE_ATTACH reaches, besides its own threads and `skip`.
// serve(tag, port): a 127.0.0.1 listener on a port of its own, an abstract
// and a path unix listener named by tag; knock(tag, port): whether each
// connects ('r') or not ('-').
constexpr const char* kChainCode = R"(import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def others(skip=()):
    mine = {int(t) for t in os.listdir('/proc/self/task')}
    out = []
    for p in range(1, 400):
        if p in mine or p in skip:
            continue
        try:
            os.kill(p, 0)
            out.append(p)
            continue
        except OSError:
            pass
        if libc.ptrace(16, p, 0, 0) == 0:
            out.append(-p)
    return out
def serve(tag, port):
    t = socket.socket()
    t.bind(('127.0.0.1', port))
    t.listen()
    a = socket.socket(socket.AF_UNIX)
    a.bind('\0chain-' + tag)
    a.listen()
    u = socket.socket(socket.AF_UNIX)
    u.bind('chain-' + tag + '.sock')
    u.listen()
    return t, a, u
def knock(tag, port):
    out = ''
    for fam, addr in ((socket.AF_INET, ('127.0.0.1', port)),
                      (socket.AF_UNIX, '\0chain-' + tag),
                      (socket.AF_UNIX, 'chain-' + tag + '.sock')):
        s = socket.socket(fam)
        try:
            s.connect(addr)
            out += 'r'
        except OSError:
            out += '-'
        s.close()
    return out
'chain'
)";

std::vector<std::string> ChainServer(const TenantTokens& tokens, int sessions) {
  // --pids-limit: every descendant's tasks count against each user
  // namespace above its own (FORK.md, RLIMIT_NPROC), A's included.
  return ServerArgs({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                     "--session-fork-spares", "0", "--pids-limit", "1024", "--max-sessions",
                     std::to_string(sessions), "--max-sessions-per-token",
                     std::to_string(sessions)});
}

TEST(SessionForkChainTest, AForkOfAForkIsWalledFromEveryOther) {
  TenantTokens tokens;
  ServeProcess server(ChainServer(tokens, 8));
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  const size_t base = Descendants(server.pid()).size();  // its zygotes
  std::string a = alice.Create();
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(alice.Eval(a, kWallsCode), "'walls'");
  ASSERT_EQ(alice.Eval(a, kChainCode), "'chain'");
  const std::string ids = alice.Eval(a, "ids()");
  ASSERT_EQ(alice.Eval(a, "x = 1\nopen('a.txt', 'w').write('a')\nsa = serve('a', 41001)\nx"), "1");

  HttpReply forked = Fork(alice, a, {{"count", 1}});
  ASSERT_EQ(forked.status, 201) << forked.body;
  ASSERT_EQ(ForkedIds(forked).size(), 1u);
  const std::string b = ForkedIds(forked)[0];
  ASSERT_EQ(alice.Eval(b, "x + 1"), "2");
  ASSERT_EQ(alice.Eval(b, "y = 2\nopen('b.txt', 'w').write('b')\nsb = serve('b', 41002)\ny"), "2");

  // B forks: a forked session forks as any other.
  forked = Fork(alice, b, {{"count", 2}});
  ASSERT_EQ(forked.status, 201) << forked.body;
  std::vector<std::string> c = ForkedIds(forked);
  ASSERT_EQ(c.size(), 2u) << forked.body;
  EXPECT_NE(c[0], c[1]);
  // Each C has B's state at the fork: A's and B's globals and files.
  for (const std::string& k : c) {
    EXPECT_EQ(alice.Eval(k, "x + y"), "3") << k;
    EXPECT_EQ(alice.Eval(k, "open('a.txt').read() + open('b.txt').read()"), "'ab'") << k;
  }
  // B goes on unchanged.
  EXPECT_EQ(alice.Eval(b, "x + y"), "3");
  EXPECT_EQ(alice.Eval(c[0], "sc = serve('c1', 41003)\n'up'"), "'up'");

  const std::vector<std::string> all = {a, b, c[0], c[1]};
  // Ids: none can become another id or map its own, every kernel holds the
  // same host ids and no capability; each is alone in its pid namespace.
  for (const std::string& s : all) {
    EXPECT_EQ(alice.Eval(s, "walls()"), kWallsHeld) << s;
    EXPECT_EQ(alice.Eval(s, "ids()"), ids) << s;
  }
  std::vector<pid_t> kernels = Kernels(server.pid());
  ASSERT_EQ(kernels.size(), 4u);
  const std::string host_ids = HostIds(kernels[0]);
  EXPECT_NE(host_ids.find("CapEff:\t0000000000000000"), std::string::npos) << host_ids;
  for (pid_t k : kernels) EXPECT_EQ(HostIds(k), host_ids) << "pid " << k;
  // Pids and /proc: B and the Cs are pid 1 of their own namespaces and see
  // nothing else; A (pid 2, its sandbox's loader pid 1) names B's and the
  // Cs' processes in its namespace (they nest in it), and reaches none.
  for (const std::string& s : {b, c[0], c[1]}) {
    EXPECT_EQ(alice.Eval(s, "os.getpid()"), "1") << s;
    EXPECT_EQ(alice.Eval(s, "sorted(p for p in os.listdir('/proc') if p.isdigit())"), "['1']") << s;
    EXPECT_EQ(alice.Eval(s, "others()"), "[]") << s;
  }
  EXPECT_EQ(alice.Eval(a, "others(skip=(1,))"), "[]");
  // Sockets: each reaches its own listeners and none of another's (A's and
  // B's path names are in the copies, dead; C1's are in no other's tree).
  const std::map<std::string, std::string> own = {
      {a, "'a', 41001"}, {b, "'b', 41002"}, {c[0], "'c1', 41003"}};
  for (const std::string& s : all) {
    for (const auto& [t, addr] : own) {
      EXPECT_EQ(alice.Eval(s, "knock(" + addr + ")"), s == t ? "'rrr'" : "'---'")
          << s << " knocks at " << addr;
    }
  }

  // Later writes are each one's own, every direction.
  ASSERT_EQ(alice.Eval(a, "open('a2.txt', 'w').write('a')\nx = 10\nx"), "10");
  ASSERT_EQ(alice.Eval(b, "open('b.txt', 'w').write('B')\ny = 20\ny"), "20");
  ASSERT_EQ(alice.Eval(c[0], "open('c1.txt', 'w').write('1')\ny = 30\ny"), "30");
  ASSERT_EQ(alice.Eval(c[1], "open('c2.txt', 'w').write('2')\ny = 40\ny"), "40");
  const std::map<std::string, std::string> values = {{a, "[10, True, False, False, False]"},
                                                     {b, "[1, 20, 'B', False, False, False]"},
                                                     {c[0], "[1, 30, 'b', False, True, False]"},
                                                     {c[1], "[1, 40, 'b', False, False, True]"}};
  EXPECT_EQ(alice.Eval(a,
                       "[x] + [os.path.exists(f) for f in "
                       "('a2.txt', 'b.txt', 'c1.txt', 'c2.txt')]"),
            values.at(a));
  for (const std::string& s : {b, c[0], c[1]}) {
    EXPECT_EQ(alice.Eval(s,
                         "[x, y, open('b.txt').read()] + [os.path.exists(f) for f in "
                         "('a2.txt', 'c1.txt', 'c2.txt')]"),
              values.at(s))
        << s;
  }
  // New entropy in each grandchild.
  std::string r0 = alice.Eval(c[0], "import random\nrandom.random()");
  std::string r1 = alice.Eval(c[1], "import random\nrandom.random()");
  ASSERT_FALSE(r0.empty());
  EXPECT_NE(r0, r1);

  // B's end leaves its children working (their pid namespaces nest in its:
  // its sandbox is kept, unreachable, until they end), and A too.
  EXPECT_EQ(alice.Delete(b).status, 200);
  EXPECT_NE(alice.Cell(b, "1").status, 200);  // gone for callers
  for (const std::string& k : c) EXPECT_EQ(alice.Eval(k, "x + 1"), "2") << k;
  EXPECT_EQ(alice.Eval(a, "x"), "10");
  // A's end too (B's sandbox, kept, keeps A's kept in turn).
  EXPECT_EQ(alice.Delete(a).status, 200);
  EXPECT_EQ(alice.Eval(c[0], "y"), "30");
  EXPECT_EQ(alice.Delete(c[0]).status, 200);
  EXPECT_EQ(alice.Eval(c[1], "y"), "40");
  EXPECT_EQ(alice.Delete(c[1]).status, 200);
  // Every sandbox, kept while its descendants ran, is gone after them.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (Descendants(server.pid()).size() > base && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Descendants(server.pid()).size(), base);
  EXPECT_EQ(server.Stop(), 0);
}

// Each fork stacks one filter on the parent and on each child: a chain of
// forks is refused once the forking thread's chain holds 16 (409, "fork
// depth", the depth said), and the session refused goes on.
TEST(SessionForkChainTest, AChainPastTheDepthCapIsRefused) {
  TenantTokens tokens;
  ServeProcess server(ChainServer(tokens, 24));
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  std::string s = alice.Create();
  ASSERT_FALSE(s.empty());
  ASSERT_EQ(alice.Eval(s, "level = 0\nlevel"), "0");
  auto start = std::chrono::steady_clock::now();
  int levels = 0;
  HttpReply refused;
  for (int i = 0; i < 20; ++i) {
    HttpReply r = Fork(alice, s, {{"count", 1}});
    if (r.status != 201) {
      refused = r;
      break;
    }
    ASSERT_EQ(ForkedIds(r).size(), 1u) << r.body;
    s = ForkedIds(r)[0];
    ++levels;
    ASSERT_EQ(alice.Eval(s, "level += 1\nlevel"), std::to_string(levels));
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d levels of forks in %.2f s; refused: %s\n", levels, secs, refused.body.c_str());
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("fork depth"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("16"), std::string::npos) << refused.body;
  // The sentry's own chain is one filter under the kernel's: 15 forks deep.
  EXPECT_EQ(levels, 15);
  EXPECT_EQ(alice.Eval(s, "level"), std::to_string(levels));  // it goes on
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace sentry::testing
