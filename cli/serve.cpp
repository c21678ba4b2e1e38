// `ppsim serve`'s answers: query parameters -> compare's arguments -> the same parsing, limits,
// library calls and error texts as the command line.
#include "cli/serve.hpp"

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/json_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/viz/playground_page.hpp"
#include "ppsim/viz/report_data.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ppsim::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view command = "compare";

HttpAnswer text(int status, std::string body) {
  if (!body.ends_with('\n')) body += '\n';
  return {status, "text/plain; charset=utf-8", std::move(body)};
}

// The command line's error line for an error of the library.
std::string error_text(const std::exception& e) {
  if (exit_code_of(e) == kExitInternal)
    return fmt::format("ppsim: error: {}: internal error: {}\n", command, e.what());
  return fmt::format("ppsim: error: {}: {}\n", command, e.what());
}

// Options the server does not take from a request: they read or run things on its machine.
void refuse_local_things(RunOptions& o, const ServeConfig& config) {
  for (const std::string& name : split_list(o.schedules, "--schedule"))
    if (is_schedule_file(name) || name.find('/') != std::string::npos)
      throw ConfigError(fmt::format("--schedule '{}': schedule files are not served; give "
                                    "schedule names (ppsim list)",
                                    name));
  if (!o.calibrate.empty())
    throw ConfigError("--calibrate is not served (it runs GEMMs on the server); use a cost "
                      "profile (costs-file=NAME) or --costs");
  if (o.model.ends_with(".json") || o.model.find('/') != std::string::npos)
    throw ConfigError(fmt::format("--model '{}': model files are not served; give a preset "
                                  "(ppsim models)",
                                  o.model));
  if (o.device == "cpu" || o.device.ends_with(".json") || o.device.find('/') != std::string::npos)
  {
    std::string presets;
    for (const DeviceSpec& d : device_presets()) presets += (presets.empty() ? "" : ", ") + d.name;
    throw ConfigError(fmt::format("--device '{}': only the presets are served ({})", o.device,
                                  presets));
  }
  if (!o.costs_file.empty()) {
    const auto profiles = cost_profiles(config.profiles_dir);
    std::string name = o.costs_file;
    if (name.ends_with(".json")) name.resize(name.size() - 5);
    if (std::find(profiles.begin(), profiles.end(), name) == profiles.end()) {
      std::string valid;
      for (const std::string& p : profiles) valid += (valid.empty() ? "" : ", ") + p;
      throw ConfigError(fmt::format("--costs-file '{}': not one of this server's cost profiles "
                                    "(valid: {})",
                                    o.costs_file, valid.empty() ? "none" : valid));
    }
    o.costs_file = (fs::path(config.profiles_dir) / (name + ".json")).string();
  }
}

// Every limit of the server, before anything proportional to the request is built.
void check_limits(const RunOptions& o, const ServeLimits& lim) {
  const auto over = [](std::string_view what, long long got, long long most) {
    if (got > most)
      throw ConfigError(fmt::format("{} {} is over this server's limit of {}", what, got, most));
  };
  const auto names = split_list(o.schedules, "--schedule");
  over("--schedule: the count of schedules", static_cast<long long>(names.size()), lim.schedules);
  const long long p = o.devices.value_or(0), m = o.microbatches.value_or(0);
  over("--stages", p, lim.devices);
  over("--microbatches", m, lim.microbatches);
  over("--chunks", o.chunks, lim.chunks);
  over("--iterations", o.iterations, lim.iterations);
  const long long v = std::max(2, o.chunks);
  // --jitter simulates each schedule once more per sample (twice with iterations).
  long long samples = 0;
  if (!o.jitter.empty() || !o.samples.empty())
    samples = o.samples.empty() ? 100 : parse_integer(o.samples, "--samples", 1, limits::kMaxSamples);
  long long runs = 1 + samples * (o.iterations > 1 ? 2 : 1);
  // The automatic knobs simulate a request many times: --offload auto a grid of 21 fractions,
  // --recompute auto at most two passes per step of the longest ladder (2 per decoder layer).
  if (trim(o.offload) == "auto") runs *= 22;
  if (trim(o.recompute) == "auto" && !o.model.empty()) runs *= 4LL * load_model(o.model).layers + 4;
  const long long tasks = static_cast<long long>(names.size()) * std::max(0LL, p) *
                          std::max(0LL, m) * v * 3 * std::max(1, o.iterations) * runs;
  over("the estimated task count (schedules x p x m x max(v, 2) x 3 x iterations x (1 + "
       "samples) x the automatic knobs' runs)",
       tasks, lim.tasks);
}

// The request's options, parsed by the command line's own option table; an error is the
// command line's text.
struct Parsed {
  RunOptions options;
  std::vector<std::string> arguments;
  std::string error;  ///< empty when parsing and the checks passed
};

Parsed parse(const QueryParams& query, const ServeConfig& config) {
  Parsed p;
  p.arguments = query_arguments(query);
  CLI::App app{"ppsim compare (served)"};
  app.name(std::string(command));
  app.set_help_flag();  // `help=` is not a request for the usage text here
  add_run_options(app, p.options, Schedules::many);
  try {
    std::vector<std::string> reversed(p.arguments.rbegin(), p.arguments.rend());
    app.parse(reversed);
    require_shape(app, p.options);
  } catch (const CLI::ParseError& e) {
    p.error = fmt::format("ppsim: error: {}: {}\nRun 'ppsim {} --help' for usage.\n", command,
                          e.what(), command);
    return p;
  }
  try {
    refuse_local_things(p.options, config);
    check_limits(p.options, config.limits);
  } catch (const std::exception& e) {
    p.error = error_text(e);
    return p;
  }
  // The profile by its path on this server, as refuse_local_things resolved it.
  for (std::string& a : p.arguments)
    if (a.starts_with("--costs-file=")) a = "--costs-file=" + p.options.costs_file;
  return p;
}

HttpAnswer api_compare(const QueryParams& query, const ServeConfig& config) {
  const Parsed p = parse(query, config);
  if (!p.error.empty()) return text(400, p.error);
  // Exactly the command line: `ppsim compare ARGS --json`, in-process.
  std::vector<std::string> args{std::string(command)};
  args.insert(args.end(), p.arguments.begin(), p.arguments.end());
  args.emplace_back("--json");
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  // compare --json prints the array when none ran too (exit 5): every row says why.
  if (code == kExitOk || (code == kExitInfeasible && !out.str().empty()))
    return {200, "application/json", out.str()};
  return text(code == kExitInternal ? 500 : 400, err.str());
}

HttpAnswer api_timeline(const QueryParams& query, const ServeConfig& config) {
  const Parsed p = parse(query, config);
  if (!p.error.empty()) return text(400, p.error);
  try {
    // A served request has no terminal and no calibration (refused above): nothing to report.
    std::ostringstream out, err;
    ProgressReporter silent(err, false);
    const Comparison comparison = run_compare(run_requests(p.options, true, {out, err, silent}));
    return {200, "application/json", report_data_json(comparison, "ppsim playground")};
  } catch (const std::exception& e) {
    return text(exit_code_of(e) == kExitInternal ? 500 : 400, error_text(e));
  }
}

std::string page_config(const ServeConfig& config) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json schedules = nlohmann::ordered_json::array();
  for (const ScheduleInfo& s : schedule_registry())
    schedules.push_back({{"name", s.name}, {"constraint", s.constraint},
                         {"description", s.description}});
  j["schedules"] = std::move(schedules);
  j["profiles"] = cost_profiles(config.profiles_dir);
  const ServeLimits& l = config.limits;
  j["limits"] = {{"devices", l.devices},       {"microbatches", l.microbatches},
                 {"chunks", l.chunks},         {"iterations", l.iterations},
                 {"schedules", l.schedules},   {"tasks", l.tasks},
                 {"seconds", l.seconds}};
  j["defaults"] = {{"s", "1f1b,zb-h1,zb-h2"}, {"p", "4"}, {"m", "8"}};
  return j.dump();
}

} // namespace

QueryParams parse_query(std::string_view target) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const auto decode = [&](std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') out += ' ';
      else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
        out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  QueryParams params;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return params;
  std::string_view rest = target.substr(q + 1);
  const auto hash = rest.find('#');
  if (hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    params.emplace_back(decode(item.substr(0, eq)),
                        eq == std::string_view::npos ? std::string() : decode(item.substr(eq + 1)));
  }
  return params;
}

std::vector<std::string> query_arguments(const QueryParams& query) {
  std::vector<std::string> args;
  args.reserve(2 * query.size());
  for (const auto& [key, value] : query) {
    // `--key=value` keeps a value that starts with '-' a value.
    if (key.size() == 1) {
      args.push_back("-" + key);
      args.push_back(value);
    } else {
      args.push_back("--" + key + "=" + value);
    }
  }
  return args;
}

std::vector<std::string> cost_profiles(const std::string& profiles_dir) {
  std::vector<std::string> names;
  if (profiles_dir.empty()) return names;
  std::error_code ec;
  for (fs::directory_iterator it(profiles_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& f = it->path();
    if (f.extension() == ".json" && it->is_regular_file(ec)) names.push_back(f.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

HttpAnswer serve_answer(const std::string& path, const QueryParams& query,
                        const ServeConfig& config) {
  try {
    if (path == "/" || path == "/index.html") {
      std::ostringstream page;
      write_playground_page(page, page_config(config));
      return {200, "text/html; charset=utf-8", page.str()};
    }
    if (path == "/api/compare") return api_compare(query, config);
    if (path == "/api/timeline") return api_timeline(query, config);
    if (path == "/api/schedules") {
      std::ostringstream out, err;
      (void)run_cli({"list", "--json"}, out, err);
      return {200, "application/json", out.str()};
    }
    return text(404, fmt::format("ppsim serve: no page at '{}' (try /, /api/compare, "
                                 "/api/timeline, /api/schedules)",
                                 path));
  } catch (const std::exception& e) {
    return text(500, fmt::format("ppsim serve: internal error: {}", e.what()));
  }
}

} // namespace ppsim::cli
