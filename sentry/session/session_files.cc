// SessionManager's file calls (session_manager.h): the kernel's read_file,
// write_file and list_files, answered even while a cell runs.
#include <cerrno>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sentry/base/json_out.h"
#include "sentry/session/session_manager.h"

namespace sentry::session {
namespace {

using nlohmann::json;
using Ordered = nlohmann::ordered_json;

// A listing's entries kept (a cell may make a million files).
constexpr size_t kMaxEntries = 100000;

Answer Error(int status, const std::string& message, const std::string& field = "") {
  return ErrorAnswer(status, message, field);
}

// The kernel's file_error as an answer: a missing file 404, a directory or
// a bad name 400, a full disk 507, anything else 422.
Answer FileError(const json& reply) {
  int err = reply.value("errno", 0);
  int status = err == ENOENT                                      ? 404
               : err == EISDIR || err == ENOTDIR || err == EINVAL ? 400
               : err == ENOSPC || err == EDQUOT                   ? 507
                                                                  : 422;
  Answer a = Error(
      status,
      JsonText(reply.value("message", std::string("the file request failed"))).get<std::string>());
  a.body["error"]["errno"] = err;
  return a;
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Answer SessionManager::ReadFile(const std::string& tenant, const std::string& id,
                                const std::string& path) {
  Answer refusal;
  std::shared_ptr<Session> s = Find(tenant, id, &refusal);
  if (!s) return refusal;
  std::string why;
  std::string guest = agent::ConfineGuestPath(path, &why);
  if (guest.empty()) return Error(400, why, "path");
  json reply;
  Status st = s->FileOp({{"op", "read_file"}, {"path", guest}}, kFileTimeoutSec, &reply);
  if (st == Status::kEnded) return EndedAnswer(*s->ended());
  if (st == Status::kTimeout) return Error(504, "the session's kernel did not answer in time");
  if (Str(reply, "op") == "file_error") return FileError(reply);
  Answer a;
  a.raw = true;
  if (Str(reply, "op") != "file" || !absl::Base64Unescape(Str(reply, "data"), &a.bytes)) {
    return Error(502, "the session's kernel answered with something else than the file");
  }
  return a;
}

Answer SessionManager::WriteFile(const std::string& tenant, const std::string& id,
                                 const std::string& path, const std::string& bytes) {
  Answer refusal;
  std::shared_ptr<Session> s = Find(tenant, id, &refusal);
  if (!s) return refusal;
  std::string why;
  std::string guest = agent::ConfineGuestPath(path, &why);
  if (guest.empty()) return Error(400, why, "path");
  json reply;
  Status st = s->FileOp(
      {{"op", "write_file"}, {"path", guest}, {"data", absl::Base64Escape(bytes)}, {"mode", 0644}},
      kFileTimeoutSec, &reply);
  if (st == Status::kEnded) return EndedAnswer(*s->ended());
  if (st == Status::kTimeout) return Error(504, "the session's kernel did not answer in time");
  if (Str(reply, "op") == "file_error") return FileError(reply);
  Answer a;
  a.status = 201;
  a.body = {{"path", guest}, {"size", bytes.size()}};
  return a;
}

Answer SessionManager::ListFiles(const std::string& tenant, const std::string& id,
                                 const std::string& dir, bool recursive, const std::string& glob) {
  Answer refusal;
  std::shared_ptr<Session> s = Find(tenant, id, &refusal);
  if (!s) return refusal;
  std::string why;
  std::string guest = agent::ConfineGuestPath(dir.empty() ? agent::kHome : dir, &why);
  if (guest.empty()) return Error(400, why, "dir");
  json reply;
  json op = {{"op", "list_files"}, {"dir", guest}, {"recursive", recursive}};
  if (!glob.empty()) op["glob"] = glob;
  Status st = s->FileOp(std::move(op), kFileTimeoutSec, &reply);
  if (st == Status::kEnded) return EndedAnswer(*s->ended());
  if (st == Status::kTimeout) return Error(504, "the session's kernel did not answer in time");
  if (Str(reply, "op") == "file_error") return FileError(reply);
  auto entries = reply.find("entries");
  if (Str(reply, "op") != "files" || entries == reply.end() || !entries->is_array()) {
    return Error(502, "the session's kernel answered with something else than a listing");
  }
  // Copied field by field: only what an entry is said to hold goes out.
  Ordered list = Ordered::array();
  for (const json& e : *entries) {
    if (list.size() >= kMaxEntries) break;
    if (!e.is_object() || Str(e, "path").empty()) continue;
    Ordered item = {{"path", Str(e, "path")}, {"type", Str(e, "type")}};
    auto size = e.find("size");
    item["size"] = size != e.end() && size->is_number_unsigned() ? Ordered(size->get<uint64_t>())
                                                                 : Ordered(nullptr);
    list.push_back(std::move(item));
  }
  auto said = reply.find("truncated");
  bool truncated = entries->size() > list.size() ||
                   (said != reply.end() && said->is_boolean() && said->get<bool>());
  Answer a;
  a.body = {{"dir", guest}, {"entries", std::move(list)}, {"truncated", truncated}};
  return a;
}

}  // namespace sentry::session
