#include "sentry/cli/flag_set.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/log.h"
#include "sentry/cli/flag_values.h"
#include "sentry/run/run.h"

namespace sentry::cli {
namespace {

bool ModuleName(absl::string_view m) {
  if (m.empty() || m.size() > 200 || m.front() == '.' || m.back() == '.') return false;
  for (char c : m) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return !absl::ascii_isdigit(static_cast<unsigned char>(m[0]));
}

}  // namespace

std::set<std::string> FlagSet::NamesIn(const std::vector<std::string>& args) {
  std::set<std::string> names;
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    if (a[1] == '-') {
      names.insert(a.substr(0, a.find('=')));
    } else {
      for (size_t i = 1; i < a.size(); ++i) names.insert(std::string{'-', a[i]});
    }
  }
  return names;
}

bool FlagSet::Skipped(const std::string& names) const {
  if (!only_) return false;
  for (absl::string_view name : absl::StrSplit(names, ',')) {
    if (only_->count(std::string(name))) return false;
  }
  return true;
}

CLI::Option* FlagSet::Value(const std::string& names, const char* group, const char* type,
                            const std::string& help, Parse parse) {
  if (Skipped(names)) return nullptr;
  std::string shown = names.substr(names.rfind(',') + 1);
  auto each = [shown, parse](const std::vector<std::string>& values) {
    for (const std::string& v : values) {
      if (std::string why = parse(v); !why.empty()) {
        throw CLI::ValidationError(absl::StrCat(shown, " ", v.empty() ? "\"\"" : v, ": ", why));
      }
    }
  };
  return app_.add_option_function<std::vector<std::string>>(names, each, help)
      ->type_name(type)
      ->group(group)
      ->allow_extra_args(false)
      ->take_all();
}

CLI::Option* FlagSet::Optional(const std::string& names, const char* group, const char* type,
                               const std::string& help, const std::string& dflt, Parse parse) {
  if (Skipped(names)) return nullptr;
  std::string shown = names.substr(names.rfind(',') + 1);
  return app_.add_flag(names + "{" + dflt + "}", scratch_, help)
      ->group(group)
      ->type_name(type)
      ->each([shown, parse](const std::string& v) {
        if (std::string why = parse(v); !why.empty()) {
          throw CLI::ValidationError(absl::StrCat(shown, "=", v, ": ", why));
        }
      });
}

CLI::Option* FlagSet::Switch(const std::string& names, const char* group, const std::string& help,
                             std::function<void()> set) {
  if (Skipped(names)) return nullptr;
  return app_.add_flag_callback(names, std::move(set), help)->group(group);
}

Parse Text(std::string* out, const char* need) {
  return [out, need](const std::string& v) -> std::string {
    if (v.empty()) return need;
    *out = v;
    return "";
  };
}

Parse Size(uint64_t* out, uint64_t bare_unit, uint64_t min, uint64_t max, const char* need) {
  return [=](const std::string& v) -> std::string {
    std::string why;
    uint64_t n;
    if (!ParseSize(v, bare_unit, &n, &why)) return why.empty() ? need : why;
    if (n < min || n > max) return need;
    *out = n;
    return "";
  };
}

Parse Duration(double* out) {
  return [out](const std::string& v) -> std::string {
    if (!ParseDuration(v, out)) return "needs a number of seconds (0 for none; units ms, s, m, h)";
    return "";
  };
}

Parse Cpus(double* out) {
  return [out](const std::string& v) -> std::string {
    double n;
    if (!absl::SimpleAtod(v, &n) || !std::isfinite(n) || n <= 0) {
      return "needs a positive number, e.g. 0.5 or 2";
    }
    *out = n;
    return "";
  };
}

Parse LogLevel() {
  return [](const std::string& v) -> std::string {
    return log::SetLevel(v) ? "" : "takes trace, debug, info, warn, error or off";
  };
}

Parse Modules(std::vector<std::string>* out) {
  return [out](const std::string& v) -> std::string {
    std::vector<std::string> modules = absl::StrSplit(v, ',', absl::SkipEmpty());
    if (modules.empty()) return "needs module names, e.g. numpy,pandas";
    for (const std::string& m : modules) {
      if (!ModuleName(m)) return "not a module name: " + m;
    }
    out->insert(out->end(), modules.begin(), modules.end());
    return "";
  };
}

std::string Help(const CLI::App& app, const std::vector<const char*>& groups) {
  constexpr size_t kColumn = 24, kWidth = 80;
  std::string out = absl::StrCat(app.get_description(), "\n");
  for (const char* group : groups) {
    absl::StrAppend(&out, "\n", group, ":\n");
    for (const CLI::Option* opt : app.get_options()) {
      if (opt->get_group() != group) continue;
      std::string names = absl::StrCat("  ", opt->get_name(false, true));
      if (!opt->get_type_name().empty() && opt->get_type_name() != "FLAG") {
        absl::StrAppend(&names, " ", opt->get_type_name());
      }
      std::string line = names;
      if (line.size() + 2 > kColumn) {
        absl::StrAppend(&out, line, "\n");
        line.clear();
      }
      line.resize(kColumn, ' ');
      for (absl::string_view word : absl::StrSplit(opt->get_description(), ' ')) {
        if (line.size() > kColumn && line.size() + 1 + word.size() > kWidth) {
          absl::StrAppend(&out, line, "\n");
          line = std::string(kColumn, ' ');
        }
        absl::StrAppend(&line, line.size() > kColumn ? " " : "", word);
      }
      absl::StrAppend(&out, line, "\n");
    }
  }
  absl::StrAppend(&out, "\n  -h, --help", std::string(kColumn - 12, ' '), "this text\n\n",
                  app.get_footer());
  return out;
}

FlagsOutcome ParseFlagsOnly(CLI::App& app, const std::vector<std::string>& args) {
  app.allow_extras();
  app.set_help_flag("-h,--help", "this text");
  std::vector<std::string> argv(args.rbegin(), args.rend());
  try {
    app.parse(argv);
  } catch (const CLI::CallForHelp&) {
    return {FlagsOutcome::Kind::kHelp, ""};
  } catch (const CLI::ParseError& e) {
    return {FlagsOutcome::Kind::kError, e.what()};
  }
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty()) {
    bool flag = !rest[0].empty() && rest[0][0] == '-';
    return {FlagsOutcome::Kind::kError,
            flag ? UnknownFlag(rest[0], app) : "unexpected argument " + rest[0]};
  }
  return {};
}

std::string DidYouMean(const std::string& given, const std::vector<std::string>& known) {
  std::string flag = given.substr(0, given.find('='));
  // One letter (-x) is too short to guess from.
  if (flag.size() <= 2 || flag.size() > 64) return "";
  // Levenshtein distance, one row at a time; names are short.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_distance = std::max<size_t>(2, flag.size() / 4) + 1;
  for (const std::string& k : known) {
    size_t d = distance(flag, k);
    // A prefix (--tim for --timeout) is as good as a near miss.
    if (k.size() > flag.size() + 1 && k.compare(0, flag.size(), flag) == 0 && flag.size() > 3) {
      d = 1;
    }
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best.empty() || best == flag ? "" : absl::StrCat(" (did you mean ", best, "?)");
}

std::string DidYouMean(const std::string& given, const CLI::App& app) {
  std::vector<std::string> known;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) known.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) known.push_back("-" + n);
  }
  return DidYouMean(given, known);
}

std::string UnknownFlag(const std::string& given, const CLI::App& app) {
  return absl::StrCat("unknown flag ", given, DidYouMean(given, app));
}

int UsageError(const char* command, const std::string& why) {
  std::fprintf(stderr, "sentry %s: %s (see 'sentry %s --help')\n", command, why.c_str(), command);
  return kExitSentryError;
}

}  // namespace sentry::cli
