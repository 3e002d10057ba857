// A session fork (issue 26, FORK.md step 7) through the real `sentry serve`:
// POST /v1/sessions/{id}/fork. The children start with the parent's
// globals and files, then go their own way (writes unseen by the others,
// new random seeds); the parent goes on; children count against the caps
// and outlive their parent; a fork is refused during a cell and past a cap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/session/session_client.h"
#include "tests/session/session_fork_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

// The checks before anything starts, and a fork the parent's supervisor
// refuses: the parent goes on as before, no session or sandbox is left of it.
TEST(SessionForkTest, RefusalsLeaveTheParentAsItWas) {
  TenantTokens tokens;
  // No fork spares (session_fork_spares_test's): nothing may be left of a fork.
  ServeProcess server(
      ServerArgs({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                  "--session-fork-spares", "0", "--max-sessions-per-token", "2"}));
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice), bob(server, kBob);
  std::string parent = alice.Create();
  ASSERT_FALSE(parent.empty());
  ASSERT_EQ(alice.Eval(parent, "x = 41\nx"), "41");
  // On a subordinate range the parent's supervisor reads the guest's
  // /proc/PID/fd through a helper of its own, started at its first use (a
  // fork's hand-off is one): started here, it is no process of a fork's.
  ASSERT_EQ(alice.Eval(parent, "import os\nlen(os.listdir('/proc/self/fd')) > 2"), "True");
  std::set<pid_t> before = Descendants(server.pid());

  EXPECT_EQ(Fork(alice, parent, {{"count", 0}}).status, 400);
  EXPECT_EQ(Fork(alice, parent, {{"count", 101}}).status, 400);
  EXPECT_EQ(Fork(alice, parent, {{"count", "1"}}).status, 400);
  EXPECT_EQ(Fork(alice, parent, {{"what", 1}}).status, 400);
  EXPECT_EQ(alice.Call("GET", "/v1/sessions/" + parent + "/fork").status, 405);
  EXPECT_EQ(Fork(bob, parent, {{"count", 1}}).status, 404);  // another tenant's
  EXPECT_EQ(Fork(alice, "ses_000000000000000000000000", {{"count", 1}}).status, 404);
  // Past the token's cap (1 open + 2 > 2): refused whole.
  HttpReply capped = Fork(alice, parent, {{"count", 2}});
  EXPECT_EQ(capped.status, 429) << capped.body;
  EXPECT_NE(capped.body.find("max-sessions-per-token"), std::string::npos) << capped.body;

  // During a running cell: 409, the cell undisturbed.
  HttpReply slow;
  std::thread t([&] { slow = alice.Cell(parent, "import time\ntime.sleep(1.5)\n'slept'"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  HttpReply busy = Fork(alice, parent, {{"count", 1}});
  t.join();
  EXPECT_EQ(busy.status, 409) << busy.body;
  EXPECT_NE(busy.body.find("between cells"), std::string::npos) << busy.body;
  EXPECT_EQ(slow.status, 200);
  EXPECT_NE(slow.body.find("slept"), std::string::npos) << slow.body;

  // A shared mapping the parent may write: the child's supervisor refuses
  // it (it would share that memory with the parent); a read-only one of a
  // lower-layer file is let through (below).
  ASSERT_EQ(alice.Eval(parent, "import mmap\nm = mmap.mmap(-1, 4096)\n1"), "1");
  HttpReply mapped = Fork(alice, parent, {{"count", 1}});
  EXPECT_EQ(mapped.status, 409) << mapped.body;
  EXPECT_NE(mapped.body.find("shared mapping"), std::string::npos) << mapped.body;
  EXPECT_EQ(alice.Eval(parent, "m.close()\nx + 1"), "42");

  // The sandbox holds a process besides the kernel: its supervisor refuses,
  // and says why; the child's supervisor started for it is gone again.
  alice.Command(parent, {{"bash", "setsid sleep 30 >/dev/null 2>&1 < /dev/null &"}});
  HttpReply refused = Fork(alice, parent, {{"count", 1}});
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("refused the fork"), std::string::npos) << refused.body;
  EXPECT_EQ(alice.Eval(parent, "x + 1"), "42");
  json list = alice.Call("GET", "/v1/sessions").Json();
  EXPECT_EQ(list["sessions"].size(), 1u) << list;
  // Nothing of the refused fork is left (the sleep is the parent's own).
  std::set<pid_t> extra;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    extra.clear();
    for (pid_t p : Descendants(server.pid())) {
      if (!before.count(p)) extra.insert(p);
    }
    std::erase_if(extra, [](pid_t p) {
      std::ifstream f("/proc/" + std::to_string(p) + "/comm");
      std::string comm;
      std::getline(f, comm);
      return comm == "sleep";
    });
    if (extra.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  for (pid_t p : extra) {
    std::ifstream f("/proc/" + std::to_string(p) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), {});
    ADD_FAILURE() << "left: " << stat;
  }
  EXPECT_EQ(alice.Delete(parent).status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(SessionForkTest, ChildrenStartAsTheParentAndGoTheirOwnWay) {
  TenantTokens tokens;
  ServeProcess server(
      ServerArgs({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                  "--session-fork-spares", "0", "--max-sessions-per-token", "4"}));
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  const size_t base = Descendants(server.pid()).size();  // its zygotes
  std::string parent = alice.Create();
  ASSERT_FALSE(parent.empty());
  ASSERT_EQ(alice.Eval(parent, "x = 41\nopen('before.txt', 'w').write('parent')\nx"), "41");
  ASSERT_EQ(alice.Eval(parent, kWallsCode), "'walls'");
  const std::string parent_ids = alice.Eval(parent, "ids()");
  // A read-only shared mapping of a lower-layer file (its own binary) is
  // no bar to a fork.
  ASSERT_EQ(alice.Eval(parent,
                       "import mmap, sys\nexe = open(sys.executable, 'rb')\n"
                       "ro = mmap.mmap(exe.fileno(), 0, access=mmap.ACCESS_READ)\nro[:4]"),
            "b'\\x7fELF'");

  HttpReply forked = Fork(alice, parent, {{"count", 2}});
  ASSERT_EQ(forked.status, 201) << forked.body;
  std::vector<std::string> kids = ForkedIds(forked);
  ASSERT_EQ(kids.size(), 2u) << forked.body;
  EXPECT_NE(kids[0], kids[1]);
  EXPECT_NE(kids[0], parent);

  // Each child has the parent's globals and files.
  for (const std::string& k : kids) {
    EXPECT_EQ(alice.Eval(k, "x + 1"), "42") << k;
    EXPECT_EQ(alice.Eval(k, "open('before.txt').read()"), "'parent'") << k;
  }
  // Every kernel, the parent's and the children's, has the same host ids
  // and maps and no capability (the clone gave the children every one in
  // their own user namespace: their supervisor took them away).
  std::vector<pid_t> kernels = Kernels(server.pid());
  ASSERT_GE(kernels.size(), 3u);
  const std::string host_ids = HostIds(kernels[0]);
  EXPECT_NE(host_ids.find("CapEff:\t0000000000000000"), std::string::npos) << host_ids;
  EXPECT_NE(host_ids.find("CapPrm:\t0000000000000000"), std::string::npos) << host_ids;
  for (pid_t k : kernels) EXPECT_EQ(HostIds(k), host_ids) << "pid " << k;
  // Without root, a range's guest is a host uid of the range; a single-id
  // one the caller's own.
  const char* mode = getenv("SENTRY_TEST_SERVE_USERNS");
  if (mode && geteuid() != 0) {
    std::string own = "Uid:\t" + std::to_string(getuid()) + "\t";
    EXPECT_EQ(host_ids.find(own) == std::string::npos, std::string(mode) == "range") << host_ids;
  }
  // Nor can any become another id or write its own maps, and each is
  // alone in its pid namespace.
  for (const std::string& s : {parent, kids[0], kids[1]}) {
    EXPECT_EQ(alice.Eval(s, "walls()"), kWallsHeld) << s;
    EXPECT_EQ(alice.Eval(s, "ids()"), parent_ids) << s;
  }
  for (const std::string& k : kids) {
    EXPECT_EQ(alice.Eval(k, "sorted(p for p in os.listdir('/proc') if p.isdigit())"), "['1']");
  }
  // Nor reach another's sockets (its loopback and abstract names its own).
  ASSERT_EQ(alice.Eval(parent, "pl = listen('\\0fork-parent')\n'up'"), "'up'");
  ASSERT_EQ(alice.Eval(kids[0], "cl = listen('\\0fork-child0')\n'up'"), "'up'");
  std::string parent_port = alice.Eval(parent, "pl[2]");
  std::string child_port = alice.Eval(kids[0], "cl[2]");
  EXPECT_EQ(alice.Eval(parent, "reach(pl[2], '\\0fork-parent')"), "'reached reached'");
  EXPECT_EQ(alice.Eval(kids[0], "reach(cl[2], '\\0fork-child0')"), "'reached reached'");
  EXPECT_EQ(alice.Eval(kids[0], "reach(" + parent_port + ", '\\0fork-parent')"),
            "'unreached unreached'");
  EXPECT_EQ(alice.Eval(kids[1], "reach(" + parent_port + ", '\\0fork-parent')"),
            "'unreached unreached'");
  EXPECT_EQ(alice.Eval(kids[1], "reach(" + child_port + ", '\\0fork-child0')"),
            "'unreached unreached'");
  EXPECT_EQ(alice.Eval(parent, "reach(" + child_port + ", '\\0fork-child0')"),
            "'unreached unreached'");

  // Later writes are each one's own, every direction.
  alice.Cell(kids[0], "open('child0.txt', 'w').write('0')");
  alice.Cell(kids[1], "open('child1.txt', 'w').write('1')");
  alice.Cell(parent, "open('after.txt', 'w').write('p')\nopen('before.txt', 'w').write('changed')");
  EXPECT_EQ(Exists(alice, kids[0], "child0.txt"), "True");
  EXPECT_EQ(Exists(alice, parent, "child0.txt"), "False");
  EXPECT_EQ(Exists(alice, kids[1], "child0.txt"), "False");
  EXPECT_EQ(Exists(alice, kids[0], "child1.txt"), "False");
  EXPECT_EQ(Exists(alice, kids[0], "after.txt"), "False");
  EXPECT_EQ(Exists(alice, kids[1], "after.txt"), "False");
  EXPECT_EQ(alice.Eval(kids[0], "open('before.txt').read()"), "'parent'");
  // New entropy in each.
  std::string r0 = alice.Eval(kids[0], "import random\nrandom.random()");
  std::string r1 = alice.Eval(kids[1], "import random\nrandom.random()");
  ASSERT_FALSE(r0.empty());
  EXPECT_NE(r0, r1);
  // The parent goes on.
  EXPECT_EQ(alice.Eval(parent, "x"), "41");
  EXPECT_EQ(alice.Eval(parent, "x = x + 1\nx"), "42");
  EXPECT_EQ(alice.Eval(kids[0], "x"), "41");

  // The children are sessions of alice's: listed, and counted against her
  // cap (3 of 4: a fork of 2 is refused whole, one of 1 would fit).
  json list = alice.Call("GET", "/v1/sessions").Json();
  EXPECT_EQ(list["sessions"].size(), 3u) << list;
  HttpReply capped = Fork(alice, parent, {{"count", 2}});
  EXPECT_EQ(capped.status, 429) << capped.body;
  EXPECT_EQ(alice.Call("GET", "/v1/sessions").Json()["sessions"].size(), 3u);
  EXPECT_EQ(alice.Eval(parent, "x"), "42");  // the refusal left it as it was

  // A fork during a running cell is refused (fork between cells).
  HttpReply slow;
  std::thread t([&] { slow = alice.Cell(parent, "import time\ntime.sleep(1.5)\n'slept'"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  HttpReply busy = Fork(alice, parent, {{"count", 1}});
  t.join();
  EXPECT_EQ(busy.status, 409) << busy.body;
  EXPECT_EQ(slow.status, 200);

  // The parent's end leaves the children working (their pid namespaces
  // nest in its: its sandbox is kept, unreachable, until they end).
  EXPECT_EQ(alice.Delete(parent).status, 200);
  for (const std::string& k : kids) EXPECT_EQ(alice.Eval(k, "x + 1"), "42") << k;
  // A child ends alone.
  EXPECT_EQ(alice.Delete(kids[1]).status, 200);
  EXPECT_EQ(alice.Eval(kids[0], "x + 1"), "42");
  EXPECT_EQ(alice.Delete(kids[0]).status, 200);
  // The parent's sandbox, kept while its children ran, is gone after them.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Descendants(server.pid()).size() > base && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Descendants(server.pid()).size(), base);
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace sentry::testing
