// sentry syscalls: prints the syscall table, the one answer to "what can a
// guest do?": a row per number, as text, JSON (--json) or markdown
// (--markdown, what docs/syscalls.md is). With --conformance FILE (made by
// tests/conformance/coverage.py) each row also lists the conformance cases
// that call it and whether they pass natively and under sentry.
#include <seccomp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_set.h"
#include "syscalls/table.h"

namespace sentry::cli {
namespace {

using nlohmann::json;

const char* ActionName(Action a) {
  switch (a) {
    case Action::kNative:
      return "native";
    case Action::kTrap:
      return "trap";
    case Action::kTrace:
      return "trace";
    case Action::kErrno:
      return "errno";
  }
  return "?";
}

const char* WallName(Wall w) {
  switch (w) {
    case Wall::kNone:
      return "none";
    case Wall::kSelf:
      return "self";
    case Wall::kPidNs:
      return "pid namespace";
    case Wall::kIpcNs:
      return "ipc namespace";
    case Wall::kNetNs:
      return "network namespace";
    case Wall::kUserNs:
      return "user namespace";
    case Wall::kUtsNs:
      return "uts namespace";
    case Wall::kLandlockSignal:
      return "Landlock signal scope";
  }
  return "?";
}

// One case of the conformance file: its status natively and under sentry,
// and the syscalls it called (by name), in a sandbox with namespaces and in
// one without (the seccomp wall alone, whose table traps more).
struct Case {
  std::string native, sentry, sentry_alone;
  std::set<std::string> calls, calls_alone;
  const std::string& Sentry(bool namespaces) const { return namespaces ? sentry : sentry_alone; }
  const std::set<std::string>& Calls(bool namespaces) const {
    return namespaces ? calls : calls_alone;
  }
};
using Cases = std::map<std::string, Case>;

bool LoadCases(const std::string& path, Cases* out, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = "cannot read " + path;
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("cases") || !j["cases"].is_object()) {
    *why = path + ": not a conformance file (an object with \"cases\")";
    return false;
  }
  for (const auto& [name, c] : j["cases"].items()) {
    Case k;
    k.native = c.value("native", "absent");
    k.sentry = c.value("sentry", "absent");
    k.sentry_alone = c.value("sentryAlone", "absent");
    for (auto [key, calls] : {std::pair{"syscalls", &k.calls}, {"syscallsAlone", &k.calls_alone}}) {
      if (!c.contains(key) || !c[key].is_array()) continue;
      for (const json& s : c[key]) {
        if (s.is_string()) calls->insert(s.get<std::string>());
      }
    }
    (*out)[name] = std::move(k);
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// How many trapped or traced syscalls a case calls (native calls such as
// futex or getrandom come and go with timing: they never rank a case).
size_t TrappedCalls(const Case& c, bool namespaces) {
  size_t n = 0;
  for (const SyscallRow& row : namespaces ? SyscallTable() : SyscallTableWithoutNamespaces()) {
    if ((row.action == Action::kTrap || row.action == Action::kTrace) &&
        c.Calls(namespaces).count(row.name)) {
      ++n;
    }
  }
  return n;
}

// The cases that call `name`, the most telling first: a case named after the
// syscall, then cases that call the fewest trapped syscalls, then by name.
std::vector<std::string> CasesOf(const Cases& cases, const std::string& name, bool namespaces) {
  std::vector<std::string> ids;
  for (const auto& [id, c] : cases) {
    if (c.Calls(namespaces).count(name)) ids.push_back(id);
  }
  std::string key = Lower(name);
  auto named = [&](const std::string& id) { return Lower(id).find(key) != std::string::npos; };
  std::stable_sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
    if (named(a) != named(b)) return named(a);
    size_t na = TrappedCalls(cases.at(a), namespaces), nb = TrappedCalls(cases.at(b), namespaces);
    if (na != nb) return na < nb;
    return a < b;
  });
  return ids;
}

struct Options {
  bool namespaces = true;
  const Cases* cases = nullptr;
};

json RowJson(int nr, const SyscallRow* row, const std::string& name, const Options& o) {
  json j = {{"nr", nr}, {"name", name}};
  if (!row) {
    j["action"] = "errno";
    j["errno"] = "ENOSYS";
    j["noRow"] = true;
    return j;
  }
  j["action"] = ActionName(row->action);
  if (row->action == Action::kErrno) {
    j["errno"] = strerrorname_np(row->err);
    if (IsReportedRefusal(row->err)) j["listedInDenials"] = true;
  }
  if (row->filter != ArgFilter::kNone) {
    j["filter"] = {{"allows", ArgFilterText(row->filter)}, {"otherwise", ArgFilterFailure(*row)}};
  }
  if (row->why) {
    j["wall"] = WallName(row->wall);
    j["why"] = row->why;
  }
  // The rule of the pools: what bounds a kernel object the row makes.
  if (row->pool != Pool::kNone) j["pool"] = PoolText(row->pool);
  if (const RowStatus* s = FindRowStatus(*row)) {
    j["status"] = s->full ? "full" : "partial";
    if (*s->note) j["note"] = s->note;
  }
  if (o.cases) {
    json ids = json::array();
    int both = 0;
    for (const std::string& id : CasesOf(*o.cases, name, o.namespaces)) {
      const Case& c = o.cases->at(id);
      const std::string& sentry = c.Sentry(o.namespaces);
      ids.push_back({{"id", id}, {"native", c.native}, {"sentry", sentry}});
      both += c.native == "pass" && sentry == "pass";
    }
    j["cases"] = {{"count", ids.size()}, {"passBoth", both}, {"ids", ids}};
  }
  return j;
}

std::vector<json> Rows(const Options& o) {
  auto find = o.namespaces ? &FindSyscall : &FindSyscallWithoutNamespaces;
  std::vector<json> rows;
  for (int nr = 0; nr < 512; ++nr) {
    const SyscallRow* row = find(nr);
    char* known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
    if (row || known) rows.push_back(RowJson(nr, row, row ? row->name : known, o));
    free(known);
  }
  return rows;
}

std::string Str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// A table cell: no newline or pipe breaks the row.
std::string Cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

// "12 (all pass): `OpenTest.Creat`, `OpenTest.Trunc`, ...", or what fails.
std::string CasesCell(const json& row) {
  if (!row.contains("cases")) return "";
  const json& c = row["cases"];
  size_t count = c["count"].get<size_t>();
  if (count == 0) return "**none**";
  std::string out = std::to_string(count);
  size_t both = c["passBoth"].get<size_t>();
  std::vector<std::string> other;
  for (const json& id : c["ids"]) {
    if (id["native"] != "pass" || id["sentry"] != "pass") {
      other.push_back("`" + id["id"].get<std::string>() + "` (native " +
                      id["native"].get<std::string>() + ", sentry " +
                      id["sentry"].get<std::string>() + ")");
    }
  }
  out += both == count ? ", all pass natively and under sentry"
                       : ", " + std::to_string(both) + " pass both";
  out += ": ";
  size_t shown = 0;
  for (const json& id : c["ids"]) {
    if (shown == 3) break;
    out += (shown ? ", `" : "`") + id["id"].get<std::string>() + "`";
    ++shown;
  }
  if (count > shown) out += ", ...";
  for (const std::string& o : other) out += "; " + o;
  return out;
}

// Whether a trapped or traced row has cases and they all pass in both runs.
bool Covered(const json& row) {
  const json& c = row["cases"];
  return c["count"].get<int>() > 0 && c["passBoth"] == c["count"];
}

void PrintMarkdown(const std::vector<json>& rows, const Options& o) {
  int native = 0, filtered = 0, trap = 0, partial = 0, trace = 0, refused = 0, norow = 0;
  int covered = 0, trapped_total = 0;
  std::vector<std::string> uncovered;
  for (const json& r : rows) {
    std::string a = Str(r, "action");
    if (r.contains("noRow")) {
      ++norow;
    } else if (a == "native") {
      ++native;
      filtered += r.contains("filter");
    } else if (a == "trap" || a == "trace") {
      (a == "trap" ? trap : trace)++;
      partial += Str(r, "status") == "partial";
      ++trapped_total;
      if (r.contains("cases")) {
        if (Covered(r)) {
          ++covered;
        } else {
          uncovered.push_back(Str(r, "name"));
        }
      }
    } else {
      ++refused;
    }
  }
  std::printf(
      "# The syscall table%s\n\n"
      "<!-- Generated, do not edit: `tests/conformance/syscalls_doc.sh SENTRY CONFORMANCE_TEST "
      "--write` rewrites it with `sentry syscalls --markdown --conformance FILE`, FILE made by "
      "tests/conformance/coverage.py from one native run of the conformance suite and one "
      "under `sentry run --census`. The syscalls_doc test fails when this file differs from "
      "what they print. -->\n\n",
      o.namespaces ? "" : " (without namespaces)");
  std::printf(
      "What a guest may do, one row per x86-64 syscall, from `syscalls/table.cc` (the seccomp "
      "filter is built from the same rows). **native**: the host kernel runs it; **trap**: the "
      "sentry answers it; **trace**: the sentry plans it at a ptrace stop and the kernel runs "
      "it; **errno**: refused with that errno. A number with no row fails with ENOSYS. `sentry "
      "syscalls --json` gives the same rows as data.\n\n");
  std::printf(
      "%d native (%d with an argument filter), %d trap (%d partial), %d trace, %d errno, %d "
      "known numbers with no row (ENOSYS).\n\n",
      native, filtered, trap, partial, trace, refused, norow);
  if (o.cases) {
    std::printf(
        "Conformance: %zu cases (`tests/conformance`), each counted apart by a census of one run "
        "under sentry. %d of the %d trapped and traced rows are called by at least one case, "
        "and all their cases pass natively and under sentry.",
        o.cases->size(), covered, trapped_total);
    if (o.namespaces) {
      // The table without namespaces traps more: its rows are tied to a
      // census of the suite under --no-namespaces.
      int alone_covered = 0, alone_total = 0;
      for (const json& r : Rows(Options{false, o.cases})) {
        std::string a = Str(r, "action");
        if (a != "trap" && a != "trace") continue;
        ++alone_total;
        if (Covered(r)) {
          ++alone_covered;
        } else {
          uncovered.push_back(Str(r, "name") + " (without namespaces)");
        }
      }
      size_t excluded = 0;
      for (const auto& [id, c] : *o.cases) excluded += c.sentry_alone == "excluded";
      std::printf(
          " Without namespaces (one more census run under `--no-namespaces`, less the %zu cases "
          "that sandbox refuses by design: `tests/conformance/seccomp_only_skips.txt`), %d of "
          "the %d trapped and traced rows of that table are called by at least one case, and "
          "all their cases pass natively and there.",
          excluded, alone_covered, alone_total);
    }
    std::printf("\n\n");
  }
  std::printf("## Trapped and traced rows\n\n");
  std::printf("| nr | name | action | status | what is missing, or a remark |%s\n",
              o.cases ? " conformance cases |" : "");
  std::printf("| --- | --- | --- | --- | --- |%s\n", o.cases ? " --- |" : "");
  for (const json& r : rows) {
    std::string a = Str(r, "action");
    if (a != "trap" && a != "trace") continue;
    std::string action = a;
    if (r.contains("filter")) action += " (" + Str(r["filter"], "allows") + ")";
    std::printf("| %d | %s | %s | %s | %s |%s\n", r["nr"].get<int>(), Str(r, "name").c_str(),
                Cell(action).c_str(), Str(r, "status").c_str(), Cell(Str(r, "note")).c_str(),
                o.cases ? (" " + Cell(CasesCell(r)) + " |").c_str() : "");
  }
  std::printf("\n## Native rows\n\n");
  std::printf("| nr | name | argument filter | otherwise | wall | why it is safe | pool |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const json& r : rows) {
    if (Str(r, "action") != "native") continue;
    std::string allows = r.contains("filter") ? Str(r["filter"], "allows") : "";
    std::string otherwise = r.contains("filter") ? Str(r["filter"], "otherwise") : "";
    std::printf("| %d | %s | %s | %s | %s | %s | %s |\n", r["nr"].get<int>(),
                Str(r, "name").c_str(), Cell(allows).c_str(), Cell(otherwise).c_str(),
                Str(r, "wall").c_str(), Cell(Str(r, "why")).c_str(), Cell(Str(r, "pool")).c_str());
  }
  std::printf("\n## Refused rows\n\n");
  std::printf("| nr | name | errno |\n| --- | --- | --- |\n");
  for (const json& r : rows) {
    if (Str(r, "action") != "errno") continue;
    std::string err = Str(r, "errno");
    if (r.contains("listedInDenials")) err += " (listed in the run's denials)";
    if (r.contains("noRow")) err += " (no row)";
    std::printf("| %d | %s | %s |\n", r["nr"].get<int>(), Str(r, "name").c_str(), err.c_str());
  }
  if (o.namespaces) {
    std::printf(
        "\n## Without namespaces\n\n"
        "Where the kernel gives no namespaces, a run stands on the seccomp wall alone and these "
        "rows change (`sentry syscalls --no-namespaces` shows that whole table):\n\n"
        "| nr | name | action there | status, filter or errno |%s\n| --- | --- | --- | --- |%s\n",
        o.cases ? " conformance cases (under `--no-namespaces`) |" : "", o.cases ? " --- |" : "");
    for (const SyscallRow& alone : SyscallTableWithoutNamespaces()) {
      const SyscallRow* ns = FindSyscall(alone.nr);
      if (ns && ns->action == alone.action && ns->handler == alone.handler &&
          ns->filter == alone.filter && ns->err == alone.err) {
        continue;
      }
      json r = RowJson(alone.nr, &alone, alone.name, Options{false, o.cases});
      std::string detail = Str(r, "errno");
      if (r.contains("status"))
        detail = Str(r, "status") + (r.contains("note") ? ": " + Str(r, "note") : "");
      if (r.contains("filter")) {
        detail = Str(r["filter"], "allows") + "; otherwise " + Str(r["filter"], "otherwise");
      }
      std::string cases;
      if (o.cases) {
        bool trapped = alone.action == Action::kTrap || alone.action == Action::kTrace;
        cases = " " + (trapped ? Cell(CasesCell(r)) : std::string()) + " |";
      }
      std::printf("| %d | %s | %s | %s |%s\n", alone.nr, alone.name, Str(r, "action").c_str(),
                  Cell(detail).c_str(), cases.c_str());
    }
  }
  if (o.cases) {
    std::printf("\n## Trapped and traced rows without a passing conformance case\n\n");
    if (uncovered.empty()) std::printf("None.\n");
    for (const std::string& n : uncovered) std::printf("- %s\n", n.c_str());
  }
}

void PrintText(const std::vector<json>& rows) {
  int counts[4] = {};
  for (const json& r : rows) {
    std::string a = Str(r, "action");
    std::string text = a;
    if (a == "errno") text += " " + Str(r, "errno") + (r.contains("noRow") ? " (no row)" : "");
    if (r.contains("filter")) {
      text += " (" + Str(r["filter"], "allows") + "; else " + Str(r["filter"], "otherwise") + ")";
    }
    if (r.contains("status")) text += ", " + Str(r, "status");
    if (r.contains("note")) text += ": " + Str(r, "note");
    if (r.contains("why")) text += " [" + Str(r, "wall") + "]: " + Str(r, "why");
    if (r.contains("pool")) text += " {pool: " + Str(r, "pool") + "}";
    std::printf("%4d  %-24s %s\n", r["nr"].get<int>(), Str(r, "name").c_str(), text.c_str());
    if (!r.contains("noRow")) {
      ++counts[a == "native" ? 0 : a == "trap" ? 1 : a == "trace" ? 2 : 3];
    }
  }
  std::printf("\n%d native, %d trap, %d trace, %d errno; anything else: ENOSYS\n", counts[0],
              counts[1], counts[2], counts[3]);
}

constexpr const char* kSyscallsUsage =
    "usage: sentry syscalls [--json | --markdown] [--no-namespaces] [--conformance FILE] "
    "[NAME...]\n"
    "  NAME...            only these syscalls' rows (e.g. sentry syscalls openat connect)\n"
    "  --json             the rows as a JSON array\n"
    "  --markdown         the rows as markdown tables (docs/syscalls.md)\n"
    "  --no-namespaces    the table of a run without namespaces (the seccomp wall alone)\n"
    "  --conformance FILE the conformance cases of each row, from FILE\n"
    "                     (tests/conformance/coverage.py makes it)\n";

int SyscallsUsageError(const std::string& why) {
  std::fprintf(stderr, "sentry syscalls: %s\n%s", why.c_str(), kSyscallsUsage);
  return 125;
}

}  // namespace

int SyscallsCommand(const std::vector<std::string>& args) {
  enum { kText, kJson, kMarkdown } format = kText;
  Options o;
  std::string conformance;
  std::vector<std::string> names;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      format = kJson;
    } else if (a == "--markdown") {
      format = kMarkdown;
    } else if (a == "--no-namespaces") {
      o.namespaces = false;  // the table of a run on the seccomp wall alone
    } else if (a == "--conformance" && i + 1 < args.size()) {
      conformance = args[++i];
    } else if (a == "-h" || a == "--help") {
      std::fputs(kSyscallsUsage, stdout);
      return 0;
    } else if (a == "--conformance") {
      return SyscallsUsageError("--conformance needs a FILE");
    } else if (!a.empty() && a[0] == '-') {
      return SyscallsUsageError(absl::StrCat(
          "unknown flag ", a,
          DidYouMean(a, {"--json", "--markdown", "--no-namespaces", "--conformance", "--help"})));
    } else {
      names.push_back(a);
    }
  }
  Cases cases;
  if (!conformance.empty()) {
    std::string why;
    if (!LoadCases(conformance, &cases, &why)) {
      std::fprintf(stderr, "sentry syscalls: %s\n", why.c_str());
      return 125;
    }
    o.cases = &cases;
  }
  std::vector<json> rows = Rows(o);
  if (!names.empty()) {
    // Only the rows named, in the order named; an unknown name is said.
    std::vector<json> picked;
    std::vector<std::string> known;
    for (const json& r : rows) known.push_back(Str(r, "name"));
    for (const std::string& name : names) {
      auto it = std::find_if(rows.begin(), rows.end(),
                             [&](const json& r) { return Str(r, "name") == name; });
      if (it == rows.end()) {
        std::string near = DidYouMean(name, known);
        return SyscallsUsageError(absl::StrCat("no x86-64 syscall is named ", name, near));
      }
      picked.push_back(*it);
    }
    rows = std::move(picked);
  }
  switch (format) {
    case kJson:
      std::printf("%s\n", json(rows).dump(1).c_str());
      break;
    case kMarkdown:
      PrintMarkdown(rows, o);
      break;
    case kText:
      PrintText(rows);
      break;
  }
  return 0;
}

}  // namespace sentry::cli
