// Runs every program of tests/security/hostile (what a poisoned prompt could
// make a model emit) as a guest of the real sentry binary, with
//   --json --timeout 5 --memory 256m --pids-limit 64 --disk 64m
// plus the program's own `# flags:` line, and checks its `# expect:` line:
//   contained        not a timeout; the universal checks below are the point
//   errno NAME       the guest's output names that errno (e.g. EACCES)
//   limit NAME       the --json limit field (memory, pids)
//   timeout          timedOut, exit code 124, limit "timeout"
// and, for every program, the universal checks:
//   - no secret value in stdout/stderr (the sentry's own environment holds
//     AWS_SECRET_ACCESS_KEY and friends; host canary files hold the same value
//     in /root, /root/.ssh, /tmp, /app/.env);
//   - no line saying ESCAPED (programs print it when they see an attack work);
//   - the host's canary and system files unchanged (content, mode, owner),
//     the files programs try to plant absent, the hostname unchanged;
//   - nothing arrived at the host listeners (127.0.0.1:HOST_LISTEN_PORT and a
//     fake /run/docker.sock);
//   - a host process running with the sandbox's host uid is still alive
//     (kill -1 must not reach it);
//   - no process of the run is left (its marker in /proc/*/{cmdline,environ}).
// See tests/security/hostile/README.md for the table of programs.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/limits/limits_util.h"
#include "tests/util/json_read.h"
#include "tests/util/subprocess.h"

namespace sentry::limits {
namespace {

const char* const kHostileDir = HOSTILE_DIR;
const std::vector<std::string> kBaseFlags = {
    "--json", "--timeout", "5", "--memory", "256m", "--pids-limit", "64", "--disk", "64m"};
constexpr double kTimeoutSec = 5;

// ------------------------------------------------------------- the corpus --

struct Program {
  std::string file;  // name in the directory
  std::string path;  // host path
  std::string expect_kind;
  std::string expect_arg;
  std::vector<std::string> flags;
  std::string interpreter;
  std::string header_error;  // non-empty when the header is malformed
};

std::vector<std::string> SplitWords(const std::string& s) {
  std::vector<std::string> words;
  std::stringstream ss(s);
  std::string w;
  while (ss >> w) words.push_back(w);
  return words;
}

Program ParseProgram(const std::string& file) {
  Program p;
  p.file = file;
  p.path = std::string(kHostileDir) + "/" + file;
  p.interpreter =
      file.size() > 3 && file.substr(file.size() - 3) == ".py" ? "/usr/bin/python3" : "/bin/sh";
  std::stringstream ss(ReadFile(p.path));
  std::string line;
  bool first = true;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] != '#') break;
    if (first) {
      first = false;
      if (line.rfind("# expect: ", 0) != 0) {
        p.header_error = "the first line must be '# expect: ...'";
        break;
      }
      std::vector<std::string> w = SplitWords(line.substr(10));
      if (w.empty()) {
        p.header_error = "empty expectation";
        break;
      }
      p.expect_kind = w[0];
      if (w.size() > 1) p.expect_arg = w[1];
      bool ok = (p.expect_kind == "contained" && w.size() == 1) ||
                (p.expect_kind == "timeout" && w.size() == 1) ||
                ((p.expect_kind == "errno" || p.expect_kind == "limit") && w.size() == 2);
      if (!ok) p.header_error = "unknown expectation: " + line;
    } else if (line.rfind("# flags: ", 0) == 0) {
      for (const std::string& f : SplitWords(line.substr(9))) p.flags.push_back(f);
    }
  }
  if (first) p.header_error = "no '# expect:' line";
  return p;
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  DIR* d = opendir(kHostileDir);
  if (!d) return files;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 3 && (n.substr(n.size() - 3) == ".py" || n.substr(n.size() - 3) == ".sh")) {
      files.push_back(n);
    }
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

// ------------------------------------------------------------- the host --

// Everything of the host a program could touch, as (content, mode, owner).
struct FileState {
  bool exists = false;
  std::string content;
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const FileState& o) const {
    return exists == o.exists && content == o.content && mode == o.mode && uid == o.uid &&
           gid == o.gid;
  }
};

FileState StateOf(const std::string& path) {
  FileState s;
  struct stat st;
  if (lstat(path.c_str(), &st) < 0) return s;
  s.exists = true;
  s.mode = st.st_mode;
  s.uid = st.st_uid;
  s.gid = st.st_gid;
  if (S_ISREG(st.st_mode)) {
    s.content = ReadFile(path);
  } else if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    if (n > 0) s.content.assign(buf, n);
  } else if (S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    if (DIR* d = opendir(path.c_str())) {
      while (dirent* e = readdir(d)) names.push_back(e->d_name);
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) s.content += n + "\n";
  }
  return s;
}

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::string s;
  const char* digits = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) s += digits[rd() % 16];
  return s;
}

class HostWorld {
 public:
  void SetUp() {
    secret_ = "SENTRY_CANARY_" + RandomHex(32);
    secret_env_ = {"AWS_SECRET_ACCESS_KEY=" + secret_, "AWS_ACCESS_KEY_ID=AKIA" + secret_,
                   "GITHUB_TOKEN=ghp_" + secret_,
                   "DATABASE_URL=postgres://app:" + secret_ + "@db.internal/app"};
    std::string canary_text = "AWS_SECRET_ACCESS_KEY=" + secret_ + "\n";
    // Canary files holding the secret.
    char tmpl[] = "/tmp/hostile-canary-XXXXXX";
    tmp_canary_dir_ = mkdtemp(tmpl);
    Plant(tmp_canary_dir_ + "/secret.env", canary_text, 0644);
    Plant("/root/hostile-canary.env", canary_text, 0600);
    struct stat st;
    if (stat("/root/.ssh", &st) < 0) {
      made_root_ssh_ = mkdir("/root/.ssh", 0700) == 0;
    }
    Plant(
        "/root/.ssh/hostile-canary",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret_ + "\n-----END OPENSSH PRIVATE KEY-----\n",
        0600);
    if (stat("/app", &st) < 0 && mkdir("/app", 0755) == 0) {
      made_app_ = true;
      Plant("/app/.env", canary_text, 0644);
    }
    // Host files that must not change.
    char real_python[PATH_MAX];
    std::string python =
        realpath("/usr/bin/python3", real_python) ? real_python : "/usr/bin/python3";
    for (const std::string& p : {std::string("/etc/passwd"),
                                 std::string("/etc/shadow"),
                                 std::string("/etc/group"),
                                 std::string("/etc/hosts"),
                                 std::string("/etc/hostname"),
                                 std::string("/etc/bash.bashrc"),
                                 std::string("/root/.bashrc"),
                                 std::string("/root/.profile"),
                                 std::string("/bin/sh"),
                                 std::string("/usr/bin/env"),
                                 std::string("/usr/bin/id"),
                                 python,
                                 std::string("/usr/bin"),
                                 std::string("/etc"),
                                 std::string("/etc/profile.d"),
                                 std::string("/etc/cron.d"),
                                 std::string("/root/.ssh"),
                                 std::string("/proc/sys/kernel/core_pattern"),
                                 std::string("/proc/sys/kernel/randomize_va_space"),
                                 std::string("/etc/ld.so.preload"),
                                 tmp_canary_dir_,
                                 tmp_canary_dir_ + "/secret.env"}) {
      watched_[p] = StateOf(p);
    }
    for (const std::string& p : planted_) watched_[p] = StateOf(p);
    // Names the programs plant in their sandbox: never on the host.
    for (const char* p :
         {"/tmp/sentry-hostile-persist", "/var/tmp/sentry-hostile-persist",
          "/dev/shm/sentry-hostile-persist", "/tmp/daemon-alive", "/etc/cron.d/sentry-hostile",
          "/etc/profile.d/sentry-hostile.sh", "/etc/sudoers.d/sentry-hostile",
          "/etc/sudoers.d/evil", "/tmp/evil.so", "/tmp/evil.c", "/tmp/rootlink", "/tmp/uplink",
          "/tmp/bomb.zip", "/tmp/out", "/tmp/fill", "/tmp/id", "/tmp/sda", "/tmp/acct",
          "/var/spool/cron/crontabs/root"}) {
      watched_[p] = StateOf(p);
    }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    hostname_ = host;
    // A TCP listener on the host's loopback.
    tcp_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(tcp_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(tcp_, 16);
    socklen_t len = sizeof(a);
    getsockname(tcp_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    // A fake container-runtime socket, if the host has none.
    if (stat("/run/docker.sock", &st) < 0) {
      docker_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      sockaddr_un u{};
      u.sun_family = AF_UNIX;
      strcpy(u.sun_path, "/run/docker.sock");
      if (bind(docker_, reinterpret_cast<sockaddr*>(&u), sizeof(u)) == 0 &&
          listen(docker_, 16) == 0) {
        chmod("/run/docker.sock", 0666);
        made_docker_ = true;
      } else {
        close(docker_);
        docker_ = -1;
      }
    }
    // A host process with the sandbox's host uid: kill -1 from a guest must
    // not reach it.
    victim_ = fork();
    if (victim_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      setgroups(0, nullptr);
      if (setgid(kGuestHostUid) < 0 || setuid(kGuestHostUid) < 0) _exit(1);
      while (true) pause();
    }
  }

  void TearDown() {
    if (victim_ > 0) {
      kill(victim_, SIGKILL);
      waitpid(victim_, nullptr, 0);
    }
    if (tcp_ >= 0) close(tcp_);
    if (docker_ >= 0) close(docker_);
    if (made_docker_) unlink("/run/docker.sock");
    for (const std::string& p : planted_) unlink(p.c_str());
    rmdir(tmp_canary_dir_.c_str());
    if (made_root_ssh_) rmdir("/root/.ssh");
    if (made_app_) rmdir("/app");
  }

  const std::string& secret() const { return secret_; }
  const std::vector<std::string>& secret_env() const { return secret_env_; }
  int port() const { return port_; }

  // What changed on the host since SetUp; empty when nothing.
  std::vector<std::string> Changes() {
    std::vector<std::string> changes;
    for (auto& [path, before] : watched_) {
      FileState now = StateOf(path);
      if (!(now == before)) {
        changes.push_back(path + (now.exists == before.exists ? " changed"
                                  : now.exists                ? " appeared"
                                                              : " disappeared"));
        before = now;  // report each change once
      }
    }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    if (hostname_ != host) changes.push_back(std::string("hostname changed to ") + host);
    for (int fd : {tcp_, docker_}) {
      if (fd < 0) continue;
      int c;
      while ((c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) {
        char buf[256] = {};
        usleep(100 * 1000);
        ssize_t n = recv(c, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        changes.push_back(std::string("a connection reached the host's ") +
                          (fd == tcp_ ? "127.0.0.1:" + std::to_string(port_) : "/run/docker.sock") +
                          (n > 0 ? std::string(" saying: ") + buf : ""));
        close(c);
      }
    }
    if (victim_ > 0 && waitpid(victim_, nullptr, WNOHANG) == victim_) {
      changes.push_back("the host process running as uid 2000000001 was killed");
      victim_ = -1;
    }
    return changes;
  }

 private:
  void Plant(const std::string& path, const std::string& text, mode_t mode) {
    FILE* f = fopen(path.c_str(), "w");
    if (!f) return;
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
    chmod(path.c_str(), mode);
    planted_.push_back(path);
  }

  std::string secret_;
  std::vector<std::string> secret_env_;
  std::string tmp_canary_dir_;
  std::vector<std::string> planted_;
  bool made_root_ssh_ = false, made_app_ = false, made_docker_ = false;
  std::map<std::string, FileState> watched_;
  std::string hostname_;
  int tcp_ = -1, docker_ = -1, port_ = 0;
  pid_t victim_ = -1;
};

HostWorld* g_world = nullptr;

class HostWorldEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_world = new HostWorld;
    g_world->SetUp();
  }
  void TearDown() override {
    g_world->TearDown();
    delete g_world;
    g_world = nullptr;
  }
};

[[maybe_unused]] const ::testing::Environment* const kWorld =
    ::testing::AddGlobalTestEnvironment(new HostWorldEnvironment);

// ------------------------------------------------------------- the runs --

bool HasWord(const std::string& text, const std::string& word) {
  std::regex re("(^|[^A-Za-z0-9_])" + word + "([^A-Za-z0-9_]|$)");
  return std::regex_search(text, re);
}

std::string ReproCommand(const Program& p, const std::vector<std::string>& flags) {
  std::string cmd = sentry::testing::SentryBinary();
  cmd = "AWS_SECRET_ACCESS_KEY=s3cr3t " + cmd + " run";
  for (const std::string& f : flags) cmd += " " + f;
  cmd += " --copy " + p.path + ":/home/sandbox/" + p.file + " -- " + p.interpreter +
         " /home/sandbox/" + p.file;
  return cmd;
}

class Hostile : public ::testing::TestWithParam<std::string> {};

TEST_P(Hostile, IsContained) {
  ASSERT_NE(g_world, nullptr);
  Program p = ParseProgram(GetParam());
  ASSERT_TRUE(p.header_error.empty()) << p.file << ": " << p.header_error;

  std::string marker = UniqueMarker("hostile");
  std::vector<std::string> flags = kBaseFlags;
  flags.insert(flags.end(), {"--env", "HOST_LISTEN_PORT=" + std::to_string(g_world->port()),
                             "--env", "HOSTILE_MARKER=" + marker});
  flags.insert(flags.end(), p.flags.begin(), p.flags.end());
  std::vector<std::string> run_flags = flags;
  run_flags.insert(run_flags.end(), {"--copy", p.path + ":/home/sandbox/" + p.file});
  SpawnOptions options;
  options.extra_env = g_world->secret_env();
  Child c = SpawnSentry(run_flags, {p.interpreter, "/home/sandbox/" + p.file, marker}, options);
  Finished f = Collect(c, 60);
  RemoveCgroupDirs(SentryCgroupDirs(c.pid));  // a known leak (see limits_test): keep the host clean
  std::vector<pid_t> left = LeftoverProcesses(marker);
  std::vector<std::string> changes = g_world->Changes();
  std::optional<nlohmann::json> result = ResultOf(f.out);
  std::string repro = ReproCommand(p, flags);
  std::string what = p.file + " (expect: " + p.expect_kind + " " + p.expect_arg + ")\nexit " +
                     std::to_string(f.exit_code) + " after " + std::to_string(f.wall) +
                     " s\nstdout: " + Clip(f.out, 2500) + "\nstderr: " + Clip(f.err, 1000) +
                     "\nrepro: " + repro;

  // Universal checks first: these are escapes.
  EXPECT_EQ(f.out.find(g_world->secret()), std::string::npos) << "ESCAPE: a secret leaked\n"
                                                              << what;
  EXPECT_EQ(f.err.find(g_world->secret()), std::string::npos) << "ESCAPE: a secret leaked\n"
                                                              << what;
  for (const std::string& ch : changes)
    ADD_FAILURE() << "ESCAPE: on the host, " << ch << "\n" << what;
  EXPECT_TRUE(left.empty()) << "ESCAPE: processes of the run outlived it:\n"
                            << DescribeProcesses(left) << what;

  ASSERT_FALSE(f.deadline) << "the sentry itself did not end\n" << what;
  ASSERT_TRUE(result) << "no --json result (did the sentry crash?)\n" << what;
  const nlohmann::json& r = *result;
  std::string output = Str(At(r, "stdout")) + "\n" + Str(At(r, "stderr"));
  EXPECT_EQ(output.find("ESCAPED"), std::string::npos) << "the program saw its attack work\n"
                                                       << what;
  EXPECT_LE(f.wall, kTimeoutSec + 1.5) << what;

  if (p.expect_kind == "timeout") {
    EXPECT_EQ(At(r, "timedOut"), true) << what;
    EXPECT_EQ(Int(At(r, "exitCode")), 124) << what;
    EXPECT_EQ(Str(At(r, "limit")), "timeout") << what;
  } else {
    EXPECT_NE(At(r, "timedOut"), true) << "must fail fast, not hang until the timeout\n" << what;
  }
  if (p.expect_kind == "errno") {
    EXPECT_TRUE(HasWord(output, p.expect_arg)) << "the output should name " << p.expect_arg << "\n"
                                               << what;
  }
  if (p.expect_kind == "limit") {
    EXPECT_EQ(Str(At(r, "limit")), p.expect_arg) << what;
  }
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Hostile, ::testing::ValuesIn(CorpusFiles()), TestName);

// The secret check is only worth something if the sentry really holds the
// secrets: the same spawn path, with env in place of the sentry.
TEST(HostileCorpus, TheSentrysEnvironmentHoldsTheSecrets) {
  ASSERT_NE(g_world, nullptr);
  SpawnOptions options;
  options.extra_env = g_world->secret_env();
  Child c = Spawn({"/usr/bin/env"}, options);
  Finished f = Collect(c, 10);
  EXPECT_NE(f.out.find("AWS_SECRET_ACCESS_KEY=" + g_world->secret()), std::string::npos);
}

TEST(HostileCorpus, HasAtLeastFortyWellFormedPrograms) {
  std::vector<std::string> files = CorpusFiles();
  EXPECT_GE(files.size(), 40u);
  for (const std::string& f : files) {
    Program p = ParseProgram(f);
    EXPECT_TRUE(p.header_error.empty()) << f << ": " << p.header_error;
  }
  std::string readme = ReadFile(std::string(kHostileDir) + "/README.md");
  for (const std::string& f : files) {
    EXPECT_NE(readme.find("`" + f + "`"), std::string::npos) << f << " is missing from README.md";
  }
}

}  // namespace
}  // namespace sentry::limits
