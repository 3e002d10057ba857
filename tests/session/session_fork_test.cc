// A session fork (issue 26, FORK.md step 7) through the real `sentry serve`:
// POST /v1/sessions/{id}/fork. The children start with the parent's
// globals and files, then go their own way (writes unseen by the others,
// new random seeds); the parent goes on; children count against the caps
// and outlive their parent; a fork is refused during a cell and past a cap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/session/session_client.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

HttpReply Fork(const SessionClient& c, const std::string& id, const json& body) {
  return c.Call("POST", "/v1/sessions/" + id + "/fork", body.dump());
}

std::vector<std::string> Ids(const HttpReply& r) {
  std::vector<std::string> ids;
  json j = r.Json();
  if (j.is_object() && j["sessions"].is_array()) {
    for (const json& s : j["sessions"]) ids.push_back(s.get<std::string>());
  }
  return ids;
}

// Whether the session sees the file (a relative path: under its home).
std::string Exists(const SessionClient& c, const std::string& id, const std::string& path) {
  return c.Eval(id, "import os\nos.path.exists('" + path + "')");
}

// The checks before anything starts, and a fork the parent's supervisor
// refuses: the parent goes on as before, no session or sandbox is left of it.
TEST(SessionForkTest, RefusalsLeaveTheParentAsItWas) {
  TenantTokens tokens;
  // No fork spares (session_fork_spares_test's): nothing may be left of a fork.
  ServeProcess server({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                       "--session-fork-spares", "0", "--max-sessions-per-token", "2"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice), bob(server, kBob);
  std::string parent = alice.Create();
  ASSERT_FALSE(parent.empty());
  ASSERT_EQ(alice.Eval(parent, "x = 41\nx"), "41");
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
  EXPECT_TRUE(extra.empty()) << extra.size() << " processes left, e.g. " << *extra.begin();
  EXPECT_EQ(alice.Delete(parent).status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(SessionForkTest, ChildrenStartAsTheParentAndGoTheirOwnWay) {
  if (geteuid() != 0) GTEST_SKIP() << "a child's supervisor maps its ids as root only (adopt.h)";
  TenantTokens tokens;
  ServeProcess server({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                       "--session-fork-spares", "0", "--max-sessions-per-token", "4"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  const size_t base = Descendants(server.pid()).size();  // its zygotes
  std::string parent = alice.Create();
  ASSERT_FALSE(parent.empty());
  ASSERT_EQ(alice.Eval(parent, "x = 41\nopen('before.txt', 'w').write('parent')\nx"), "41");

  HttpReply forked = Fork(alice, parent, {{"count", 2}});
  ASSERT_EQ(forked.status, 201) << forked.body;
  std::vector<std::string> kids = Ids(forked);
  ASSERT_EQ(kids.size(), 2u) << forked.body;
  EXPECT_NE(kids[0], kids[1]);
  EXPECT_NE(kids[0], parent);

  // Each child has the parent's globals and files.
  for (const std::string& k : kids) {
    EXPECT_EQ(alice.Eval(k, "x + 1"), "42") << k;
    EXPECT_EQ(alice.Eval(k, "open('before.txt').read()"), "'parent'") << k;
  }
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

  // A child does not fork again (its supervisor grants no fork yet).
  HttpReply again = Fork(alice, kids[0], {{"count", 1}});
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_NE(again.body.find("cannot fork again"), std::string::npos) << again.body;

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
