// The OCI runtime's log: --log FILE (default stderr) in --log-format text or
// json. Engines read it: a json line per message, {"level","msg","time"}, as
// runc writes them; conmon and the containerd shim show a failed create's
// last error line to their user.
#ifndef SENTRY_OCI_OCI_LOG_H_
#define SENTRY_OCI_OCI_LOG_H_

#include <string>

namespace sentry::oci {

class OciLog final {
 public:
  OciLog() = default;
  OciLog(const OciLog&) = delete;
  OciLog& operator=(const OciLog&) = delete;
  ~OciLog();

  // path "": stderr. An unopenable file falls back to stderr, with a line.
  void Open(const std::string& path, bool json, bool debug);
  void Debug(const std::string& msg) {
    if (debug_) Write("debug", msg);
  }
  void Info(const std::string& msg) { Write("info", msg); }
  void Warn(const std::string& msg) { Write("warning", msg); }
  // An error goes to the log and, when the log is a file, to stderr too:
  // the engine's user reads one, the engine the other.
  void Error(const std::string& msg);

 private:
  void Write(const char* level, const std::string& msg);
  int fd_ = 2;
  bool json_ = false;
  bool debug_ = false;
};

// Now as RFC 3339 with nanoseconds, UTC ("2026-12-02T04:30:00.123456789Z").
std::string NowRfc3339();

}  // namespace sentry::oci

#endif  // SENTRY_OCI_OCI_LOG_H_
