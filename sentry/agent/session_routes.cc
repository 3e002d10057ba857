#include "sentry/agent/session_routes.h"

#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/agent/json_bounded.h"
#include "sentry/base/json_out.h"

namespace sentry::agent {
namespace {

using nlohmann::json;
using session::Answer;
using session::SessionManager;

SessionReply Reply(int status, const nlohmann::ordered_json& body) {
  return SessionReply{status, JsonDump(body)};
}

SessionReply Refuse(int status, const std::string& message) {
  return Reply(status, {{"error", {{"message", message}}}});
}

SessionReply FromAnswer(Answer a) {
  if (a.raw) return SessionReply{a.status, std::move(a.bytes), "application/octet-stream"};
  return Reply(a.status, a.body);
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded, as a browser or curl --data-urlencode
// writes it; false for a bad escape.
bool Decode(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      *out += ' ';
    } else if (in[i] == '%') {
      int hi = i + 1 < in.size() ? Hex(in[i + 1]) : -1;
      int lo = i + 2 < in.size() ? Hex(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) return false;
      *out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      *out += in[i];
    }
  }
  return true;
}

bool Query(const std::string& query, std::map<std::string, std::string>* out, std::string* bad) {
  for (absl::string_view kv : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t eq = kv.find('=');
    std::string key, value;
    if (!Decode(kv.substr(0, eq), &key) ||
        !Decode(eq == absl::string_view::npos ? "" : kv.substr(eq + 1), &value)) {
      *bad = std::string(kv);
      return false;
    }
    (*out)[key] = value;
  }
  return true;
}

bool Truthy(const std::string& v) { return v == "1" || v == "true"; }

}  // namespace

bool IsSessionPath(const std::string& path) {
  return path == "/v1/sessions" || absl::StartsWith(path, "/v1/sessions/");
}

SessionReply RouteSession(SessionManager& sessions, const SessionRequest& r, NdjsonSink* sink) {
  std::vector<std::string> parts = absl::StrSplit(r.path, '/', absl::SkipEmpty());
  // parts: v1, sessions[, ID[, ACTION]]
  std::map<std::string, std::string> q;
  std::string bad;
  if (!Query(r.query, &q, &bad)) return Refuse(400, absl::StrCat("a malformed query: ", bad));
  auto body_json = [&](json* out) -> std::optional<SessionReply> {
    std::string why;
    if (r.body.empty()) {
      *out = json::object();
      return std::nullopt;
    }
    JsonRefusal refused = ParseBoundedJson(r.body, r.body.size(), kMaxJsonDepth, out, &why);
    if (refused != JsonRefusal::kNone) {
      return Refuse(400, absl::StrCat("the body is not JSON: ", why));
    }
    return std::nullopt;
  };
  auto only = [&](std::initializer_list<const char*> known) -> std::optional<SessionReply> {
    for (const auto& [k, v] : q) {
      bool ok = false;
      for (const char* n : known) ok = ok || k == n;
      if (!ok) return Refuse(400, absl::StrCat("unknown query parameter: ", k));
    }
    return std::nullopt;
  };
  if (parts.size() == 2) {
    if (r.method == "POST") {
      json body;
      if (auto e = body_json(&body)) return *e;
      return FromAnswer(sessions.Create(r.tenant, body));
    }
    if (r.method == "GET") return FromAnswer(sessions.List(r.tenant));
    return Refuse(405, "use POST (create) or GET (list)");
  }
  const std::string& id = parts[2];
  if (parts.size() == 3) {
    if (r.method == "DELETE") return FromAnswer(sessions.Delete(r.tenant, id));
    if (r.method == "GET") return FromAnswer(sessions.Get(r.tenant, id));
    return Refuse(405, "use GET or DELETE");
  }
  if (parts.size() != 4) return Refuse(404, "no such endpoint");
  const std::string& action = parts[3];
  if (action == "cells" || action == "commands") {
    if (r.method != "POST") return Refuse(405, "use POST");
    if (auto e = only({"stream"})) return *e;
    json body;
    if (auto e = body_json(&body)) return *e;
    bool stream = q.count("stream") && Truthy(q["stream"]);
    session::Session::LiveFn live;
    if (stream && sink) {
      live = [sink](std::string_view name, std::string_view text) {
        sink->Chunk(name == "stderr" ? 2 : 1, text);
      };
    }
    Answer a = sessions.Execute(
        r.tenant, id, body,
        action == "cells" ? SessionManager::Kind::kCell : SessionManager::Kind::kCommand, live);
    if (stream && sink && a.status == 200) {
      SessionReply out = Reply(200, {{"result", a.body}});
      out.streamed = true;
      return out;
    }
    return FromAnswer(std::move(a));
  }
  if (action == "interrupt") {
    if (r.method != "POST") return Refuse(405, "use POST");
    return FromAnswer(sessions.Interrupt(r.tenant, id));
  }
  if (action == "fork") {
    if (r.method != "POST") return Refuse(405, "use POST");
    if (auto e = only({})) return *e;
    json body;
    if (auto e = body_json(&body)) return *e;
    return FromAnswer(sessions.Fork(r.tenant, id, body));
  }
  if (action == "files") {
    if (r.method == "PUT") {
      if (auto e = only({"path"})) return *e;
      if (!q.count("path")) return Refuse(400, "PUT needs ?path=");
      return FromAnswer(sessions.WriteFile(r.tenant, id, q["path"], r.body));
    }
    if (r.method != "GET") return Refuse(405, "use GET or PUT");
    if (auto e = only({"path", "dir", "recursive", "glob"})) return *e;
    if (q.count("path")) return FromAnswer(sessions.ReadFile(r.tenant, id, q["path"]));
    if (!q.count("dir") && !q.count("glob")) return Refuse(400, "GET needs ?path= or ?dir=");
    return FromAnswer(sessions.ListFiles(
        r.tenant, id, q["dir"], q.count("recursive") && Truthy(q["recursive"]), q["glob"]));
  }
  return Refuse(404, "no such endpoint");
}

}  // namespace sentry::agent
