// inotify watches through the real binary (issue 28, item 2): node's
// fs.watch, tail -f, a watched upper directory's names, a lower file read, a
// -v ...:rw mount changed from the host side, and what a watch must never
// reach or name.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A ctypes inotify for the scripts below: add(path, mask) gives the wd or
// -errno; events() what is queued within 300 ms, as "wd MASK name" lines.
constexpr const char kInotifyPy[] = R"(
import ctypes, os, select, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
BITS = dict(ACCESS=1, MODIFY=2, ATTRIB=4, CLOSE_WRITE=8, CLOSE_NOWRITE=0x10, OPEN=0x20,
            MOVED_FROM=0x40, MOVED_TO=0x80, CREATE=0x100, DELETE=0x200, DELETE_SELF=0x400,
            MOVE_SELF=0x800, IGNORED=0x8000, ISDIR=0x40000000)
fd = libc.inotify_init1(os.O_NONBLOCK)
def add(p, m=0xfff):
    wd = libc.inotify_add_watch(fd, p.encode(), m)
    return wd if wd >= 0 else -ctypes.get_errno()
def events(wait=0.3):
    out = []
    while True:
        r, _, _ = select.select([fd], [], [], wait)
        if not r: return out
        b = os.read(fd, 65536); i = 0
        while i < len(b):
            wd, m, c, l = struct.unpack_from('iIII', b, i)
            name = b[i + 16:i + 16 + l].rstrip(b'\0').decode()
            out.append('%d %s %s' % (wd, '|'.join(k for k, v in BITS.items() if m & v), name))
            i += 16 + l
)";

TEST(Inotify, NodeFsWatchSeesAWrite) {
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "no node";
  ProcessResult r = SentryIn("/tmp", {},
                             {"node", "-e",
                              "const w=require('fs').watch('.');"
                              "setTimeout(()=>{require('fs').writeFileSync('x','1')},100);"
                              "w.on('change',(e,f)=>{console.log(e,f);process.exit(0)})"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Has(r.out, " x\n")) << Describe(r);
}

TEST(Inotify, TailFollowsAnAppend) {
  ProcessResult r = SentryIn(
      "/tmp", {}, {"sh", "-c", ": > f; (sleep .3; echo hi >> f) & timeout 1 tail -f f; true"});
  EXPECT_EQ(r.out, "hi\n") << Describe(r);
  EXPECT_FALSE(Has(r.err, "cannot watch")) << Describe(r);
}

TEST(Inotify, AnUpperDirectoryALowerFileAndTheirNames) {
  std::string script = std::string(kInotifyPy) + R"(
os.chdir(sys.argv[1]); os.mkdir('d')
open('d/old', 'w').write('o')
wd = add('d'); print('wd', wd)
open('d/a', 'w').write('x')
with open('d/old', 'a') as f: f.write('more')
os.mkdir('d/s')
os.rename('d/a', 'd/b'); os.rename('d/b', 'away'); os.rename('away', 'd/back')
os.unlink('d/back'); os.rmdir('d/s')
for e in events(): print(e)
lw = add('/usr/bin/env', 0x21); print('lower', lw)
open('/usr/bin/env', 'rb').read(16)
for e in events(): print(e)
)";
  const char* want[] = {
      "wd 1",         "1 CREATE a",     "1 OPEN a",          "1 MODIFY a",       "1 CLOSE_WRITE a",
      "1 OPEN old",   "1 MODIFY old",   "1 CLOSE_WRITE old", "1 CREATE|ISDIR s", "1 MOVED_FROM a",
      "1 MOVED_TO b", "1 MOVED_FROM b", "1 MOVED_TO back",   "1 DELETE back",    "1 DELETE|ISDIR s",
      "lower 2"};
  std::string expected;
  for (const char* line : want) expected += std::string(line) + "\n";
  // As the sandbox's root too: the store's ids differ (a rename into a
  // shadow must map both of them).
  for (bool root : {false, true}) {
    ProcessResult r = SandboxScript(
        script, root ? std::vector<std::string>{"--root"} : std::vector<std::string>{});
    // A lower file's watch is on a token, not the host's file (whose opens
    // by anyone outside would reach it): reading it reports nothing.
    EXPECT_EQ(r.out, expected) << "root=" << root << Describe(r);
  }
}

TEST(Inotify, AHostChangeInARwMountIsSeen) {
  TempDir host;
  chmod(host.path().c_str(), 0777);
  host.Write("f", "1\n", 0666);
  std::string script = std::string(kInotifyPy) + R"(
print('wd', add('/w'), add('/w/f'))
open('/w/ready', 'w').close()
for e in events(1.0): print(e)
)";
  host.Write("script.py", script, 0644);
  std::thread writer([&] {
    for (int i = 0; i < 200 && access((host.path() + "/ready").c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ofstream(host.path() + "/f", std::ios::app) << "2\n";
  });
  ProcessResult r =
      SentryIn("/tmp", {"-v", host.path() + ":/w:rw"}, {"/usr/bin/python3", "/w/script.py"});
  writer.join();
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Has(r.out, "wd 1 2\n")) << Describe(r);
  EXPECT_TRUE(Has(r.out, "\n1 MODIFY f\n")) << Describe(r);
  EXPECT_TRUE(Has(r.out, "\n2 MODIFY \n")) << Describe(r);
}

// A watch reaches exactly what open reaches, with open's errno, and its
// events name only the sandbox's entries: never the store's names or a host
// path.
TEST(Inotify, AWatchReachesNoMoreThanOpen) {
  std::string script = std::string(kInotifyPy) + R"(
os.chdir(sys.argv[1])
os.symlink('/etc/shadow', 'to_shadow')
for p in ['/etc/shadow', '/proc/1/environ', '/proc/1/root/etc/shadow', 'to_shadow',
          '../../../../etc/shadow', '/.sentry-store', '/proc/self/root/.sentry-store',
          '/proc/1/cwd/../../etc/shadow']:
    try: os.close(os.open(p, os.O_RDONLY)); o = 0
    except OSError as e: o = -e.errno
    print(p, add(p) == o or (add(p), o))
os.mkdir('w'); add('w'); add('.')
for i in range(3):
    open('w/n%d' % i, 'w').write('x'); os.rename('w/n%d' % i, 'w/m%d' % i); os.unlink('w/m%d' % i)
seen = events()
print('names', sorted(set(e.split(' ')[2] for e in seen if len(e.split(' ')) > 2)))
)";
  ProcessResult r = SandboxScript(script);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out,
            "/etc/shadow True\n/proc/1/environ True\n/proc/1/root/etc/shadow True\n"
            "to_shadow True\n../../../../etc/shadow True\n/.sentry-store True\n"
            "/proc/self/root/.sentry-store True\n/proc/1/cwd/../../etc/shadow True\n"
            "names ['m0', 'm1', 'm2', 'n0', 'n1', 'n2']\n")
      << Describe(r);
}

}  // namespace
}  // namespace sentry::testing
