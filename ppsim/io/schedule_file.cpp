// Reading and writing schedule files: PyTorch's compute-only CSV and ppsim.schedule/1 JSON.
#include "ppsim/io/schedule_file.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

namespace ppsim {

namespace {

using nlohmann::json;
using detail::JsonReader;

constexpr std::string_view kSchema = "ppsim.schedule/1";
// Bounds that keep a hostile file from asking validate() or the simulator for huge tables.
using limits::kMaxStages;
using limits::kMaxDevices;
using limits::kMaxMicrobatches;
using limits::kMaxStageMicrobatches;

bool ends_with_nocase(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  const auto tail = text.substr(text.size() - suffix.size());
  return std::equal(tail.begin(), tail.end(), suffix.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
}

std::string stem_of(std::string_view where) {
  auto stem = std::filesystem::path(std::string(where)).stem().string();
  return stem.empty() ? std::string("schedule") : stem;
}

// ---------------------------------------------------------------------------------------------
// PyTorch CSV

// One cell of a CSV row, with its 1-based column for messages.
struct Cell {
  std::string text;
  int column{0};
};

// Splits one line as Python's csv.reader does for these files: commas separate cells, a cell
// that starts with `"` runs to the closing quote (`""` is a quote), and calls fn(cell) for each
// (one at a time: a row of a million empty cells costs no more than one). Returns the column of
// a cell with an unterminated quote.
template <class Fn> std::optional<int> split_row(std::string_view line, Fn&& fn) {
  std::size_t i = 0;
  int column = 1;
  while (true) {
    Cell cell{{}, column};
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell.text += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        cell.text += line[i++];
      }
      if (!closed) return column;
    }
    while (i < line.size() && line[i] != ',') cell.text += line[i++];
    fn(cell);
    if (i >= line.size()) break;
    ++i;  // the comma
    ++column;
  }
  return std::nullopt;
}

// Where a stage was first seen, to name both places when a second rank runs it.
struct Seen {
  int rank{-1};
  int line{0};
  int column{0};
};

// ---------------------------------------------------------------------------------------------
// JSON

// RFC 6901 escaping of one path token.
std::vector<int> int_array(const JsonReader& r, const json& j, const std::string& path, int hi) {
  r.array(j, path);
  std::vector<int> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i)
    out.push_back(r.integer(j[i], fmt::format("{}/{}", path, i), 0, hi));
  return out;
}

std::string json_string(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string int_list(const std::vector<int>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

} // namespace


bool is_schedule_file(std::string_view name_or_path) {
  return ends_with_nocase(name_or_path, ".csv") || ends_with_nocase(name_or_path, ".json");
}

Schedule load_schedule_file(const std::string& path, PytorchNotation csv) {
  if (!is_schedule_file(path))
    throw ConfigError(fmt::format("{}: a schedule file must end in .csv (PyTorch compute-only) "
                                  "or .json (ppsim.schedule/1)",
                                  path));
  const std::string text = read_text_file(path, "schedule file");
  return ends_with_nocase(path, ".csv") ? parse_pytorch_csv(text, path, csv)
                                        : parse_schedule_json(text, path);
}

Schedule parse_pytorch_csv(std::string_view text, std::string_view where,
                           PytorchNotation notation) {
  // Rows as Python's csv.reader yields them: every line is a rank (an empty line is a rank with
  // nothing to do); the terminator of the last line does not start another.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 BOM from spreadsheets
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < text.size();) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    auto line = text.substr(pos, nl - pos);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    pos = nl + 1;
    if (static_cast<int>(lines.size()) > kMaxDevices)
      throw ConfigError(fmt::format("{}: more than {} rows: at most {} ranks are supported",
                                    where, kMaxDevices, kMaxDevices));
  }
  if (lines.empty()) throw ConfigError(fmt::format("{}: empty file: expected one row per rank", where));

  const int devices = static_cast<int>(lines.size());
  std::vector<std::vector<Task>> order(ix(devices));
  std::vector<Seen> placed;  // per stage
  int max_mb = -1;
  // For the notation: where each (stage, micro-batch) has a full backward `B`, and the first W
  // that follows one; whether any `I` appears; which (stage, micro-batch) have a W.
  std::map<std::pair<int, int>, std::pair<Seen, std::string>> full_backward;  // where, cell
  std::optional<std::pair<Seen, Seen>> w_after_b;  // (the B, the W)
  std::string w_after_b_cells[2];
  bool any_i = false;
  std::set<std::pair<int, int>> has_w;
  for (int rank = 0; rank < devices; ++rank) {
    const int line_no = rank + 1;
    const auto bad = split_row(lines[ix(rank)], [&](const Cell& cell) {
      const auto body = trim(cell.text);
      if (body.empty()) return;  // idle
      Task t;
      if (auto err = parse_pytorch_action(body, t, notation))
        throw ConfigError(fmt::format("{}:{}:{}: cannot read '{}': {}", where, line_no,
                                      cell.column, excerpt(body), *err));
      const auto place = [&](int stage) {
        if (stage >= static_cast<int>(placed.size())) placed.resize(ix(stage + 1));
        Seen& seen = placed[ix(stage)];
        if (seen.rank < 0) {
          seen = Seen{rank, line_no, cell.column};
        } else if (seen.rank != rank) {
          throw ScheduleError(fmt::format(
              "{}:{}:{}: '{}' runs stage {} on rank {}, but rank {} runs it too ({}:{}:{}); "
              "a stage belongs to one rank",
              where, line_no, cell.column, excerpt(body), stage, rank, seen.rank, where, seen.line,
              seen.column));
        }
      };
      place(t.stage);
      max_mb = std::max(max_mb, t.microbatch);
      if (t.kind == Kind::FB) {
        place(t.stage2);
        max_mb = std::max(max_mb, t.microbatch2);
      }
      const Kind backward = t.kind == Kind::FB ? t.kind2 : t.kind;
      const int b_stage = t.kind == Kind::FB ? t.stage2 : t.stage;
      const int b_mb = t.kind == Kind::FB ? t.microbatch2 : t.microbatch;
      const Seen here{rank, line_no, cell.column};
      if (backward == Kind::B) any_i = true;
      if (backward == Kind::BW) {
        full_backward.emplace(std::pair{b_stage, b_mb}, std::pair{here, std::string(body)});
      }
      if (t.kind == Kind::W) {
        has_w.emplace(t.stage, t.microbatch);
        const auto b = full_backward.find({t.stage, t.microbatch});
        if (!w_after_b && b != full_backward.end()) {
          w_after_b = std::pair{b->second.first, here};
          w_after_b_cells[0] = b->second.second;
          w_after_b_cells[1] = body;
        }
      }
      order[ix(rank)].push_back(t);
    });
    if (bad) throw ConfigError(fmt::format("{}:{}:{}: unterminated quote", where, line_no, *bad));
  }
  if (placed.empty()) throw ConfigError(fmt::format("{}: no tasks in any row", where));
  const int stages = static_cast<int>(placed.size());
  std::vector<int> stage_device(ix(stages));
  for (int s = 0; s < stages; ++s) {
    if (placed[ix(s)].rank < 0)
      throw ScheduleError(fmt::format(
          "{}: stage {} appears in no row, but stages go up to {}: the placement of every stage "
          "0..{} must follow from the rows",
          where, s, stages - 1, stages - 1));
    stage_device[ix(s)] = placed[ix(s)].rank;
  }
  if (static_cast<long long>(stages) * (max_mb + 1) > kMaxStageMicrobatches)
    throw ConfigError(fmt::format("{}: {} stages x {} micro-batches is too large to simulate",
                                  where, stages, max_mb + 1));
  if (notation == PytorchNotation::current && !any_i && w_after_b) {
    // In the current notation B is I and W together: a W after it is a second weight backward.
    const auto& [b, w] = *w_after_b;
    throw ConfigError(fmt::format(
        "{}:{}:{}: '{}' follows '{}' ({}:{}:{}) of its stage and micro-batch, and no cell is an "
        "I: the file looks written in PyTorch's old notation, where B was the backward for the "
        "input and W followed it (now B is the full backward); read it with --pytorch-notation "
        "old",
        where, w.line, w.column, excerpt(w_after_b_cells[1]), excerpt(w_after_b_cells[0]), where,
        b.line,
        b.column));
  }
  if (notation == PytorchNotation::old) {
    // B is the backward for the input where a W of its stage and micro-batch exists.
    const auto split = [&](Kind& kind, int stage, int mb) {
      if (kind == Kind::BW && has_w.count({stage, mb}) != 0) kind = Kind::B;
    };
    for (auto& row : order)
      for (Task& t : row) {
        if (t.kind == Kind::FB) split(t.kind2, t.stage2, t.microbatch2);
        else split(t.kind, t.stage, t.microbatch);
      }
  }
  Schedule schedule = make_pipeline(stem_of(where), devices, max_mb + 1, std::move(stage_device));
  schedule.order = std::move(order);
  schedule.notation =
      notation == PytorchNotation::old ? Notation::pytorch_old : Notation::pytorch;
  return schedule;
}

Schedule parse_schedule_json(std::string_view text, std::string_view where) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  Schedule s;
  s.name = stem_of(where);
  const auto read_order = [&](const json& value, const std::string& path) {
    r.array(value, path);
    if (value.size() > static_cast<std::size_t>(kMaxDevices))
      r.fail(path, fmt::format("{} task lists: at most {} devices", value.size(), kMaxDevices));
    for (std::size_t d = 0; d < value.size(); ++d) {
      const std::string dp = fmt::format("{}/{}", path, d);
      r.array(value[d], dp);
      std::vector<Task> row;
      row.reserve(value[d].size());
      for (std::size_t i = 0; i < value[d].size(); ++i) {
        const std::string tp = fmt::format("{}/{}", dp, i);
        const std::string cell = r.string(value[d][i], tp);
        try {
          row.push_back(parse_task(cell));
        } catch (const ConfigError& e) {
          r.fail(tp, e.what());
        }
      }
      s.order.push_back(std::move(row));
    }
  };
  const detail::Field fields[] = {
      detail::schema_field(r, kSchema),
      {"name", false, "", [&](const json& v, const std::string& at) { s.name = r.name(v, at); }},
      {"devices", true, "missing",
       [&](const json& v, const std::string& at) { s.devices = r.integer(v, at, 0, kMaxDevices); }},
      {"microbatches", true, "missing",
       [&](const json& v, const std::string& at) {
         s.microbatches = r.integer(v, at, 0, kMaxMicrobatches);
       }},
      {"slices", false, "",
       [&](const json& v, const std::string& at) {
         s.slices = r.integer(v, at, 1, limits::kMaxSlices);
       }},
      {"placement", true, "missing (the device of each stage)",
       [&](const json& v, const std::string& at) {
         if (v.is_array() && v.size() > static_cast<std::size_t>(kMaxStages))
           r.fail(at, fmt::format("{} stages: at most {}", v.size(), kMaxStages));
         s.stage_device = int_array(r, v, at, kMaxDevices);
       }},
      {"routes", true, "missing (e.g. [[0, 1, 2, 3]])",
       [&](const json& v, const std::string& at) {
         r.array(v, at);
         if (v.size() > static_cast<std::size_t>(limits::kMaxRoutes))
           r.fail(at, fmt::format("{} routes: at most {}", v.size(), limits::kMaxRoutes));
         for (std::size_t i = 0; i < v.size(); ++i)
           s.routes.push_back(int_array(r, v[i], fmt::format("{}/{}", at, i), kMaxStages - 1));
       }},
      {"microbatch_routes", false, "",
       [&](const json& v, const std::string& at) {
         if (v.is_array() && v.size() > static_cast<std::size_t>(kMaxMicrobatches))
           r.fail(at, fmt::format("{} micro-batch routes: at most {}", v.size(), kMaxMicrobatches));
         s.microbatch_route = int_array(r, v, at, std::numeric_limits<int>::max());
       }},
      {"order", true, "missing (the task list of each device)", read_order},
  };
  const auto seen = detail::read_fields(r, doc, "", fields);
  if (!seen.has("microbatch_routes")) {
    if (s.routes.size() != 1)
      r.fail("/microbatch_routes",
             fmt::format("missing: needed when there are {} routes", s.routes.size()));
    s.microbatch_route.assign(ix(s.microbatches), 0);
  }
  if (s.microbatches % s.slices != 0)
    r.fail("/slices", fmt::format("microbatches={} is not a whole number of micro-batches of {} "
                                  "slices",
                                  s.microbatches, s.slices));
  if (static_cast<long long>(s.stages()) * s.microbatches > kMaxStageMicrobatches)
    r.fail("/microbatches", fmt::format("{} stages x {} micro-batches is too large to simulate "
                                        "(at most {})",
                                        s.stages(), s.microbatches, kMaxStageMicrobatches));
  // The topology keeps a position per route and stage; validation walks every route.
  if (static_cast<long long>(s.routes.size()) * s.stages() > limits::kMaxRouteStages)
    r.fail("/routes", fmt::format("{} routes x {} stages is too large (at most {})",
                                  s.routes.size(), s.stages(), limits::kMaxRouteStages));
  return s;
}

void write_schedule_json(std::ostream& out, const Schedule& s) {
  out << "{\n";
  out << fmt::format("  \"schema\": {},\n", json_string(kSchema));
  out << fmt::format("  \"name\": {},\n", json_string(s.name));
  out << fmt::format("  \"devices\": {},\n", s.devices);
  out << fmt::format("  \"microbatches\": {},\n", s.microbatches);
  if (s.slices != 1) out << fmt::format("  \"slices\": {},\n", s.slices);
  out << fmt::format("  \"placement\": {},\n", int_list(s.stage_device));
  out << "  \"routes\": [";
  for (std::size_t r = 0; r < s.routes.size(); ++r)
    out << (r == 0 ? "" : ", ") << int_list(s.routes[r]);
  out << "],\n";
  const bool one_route = s.routes.size() == 1 &&
                         static_cast<int>(s.microbatch_route.size()) == s.microbatches &&
                         std::all_of(s.microbatch_route.begin(), s.microbatch_route.end(),
                                     [](int r) { return r == 0; });
  if (!one_route) out << fmt::format("  \"microbatch_routes\": {},\n", int_list(s.microbatch_route));
  out << "  \"order\": [";
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    out << (d == 0 ? "\n    [" : ",\n    [");
    for (std::size_t i = 0; i < s.order[d].size(); ++i)
      out << (i == 0 ? "" : ", ") << '"' << to_string(s.order[d][i]) << '"';
    out << ']';
  }
  out << (s.order.empty() ? "]\n" : "\n  ]\n");
  out << "}\n";
}

namespace {

// Throws ConfigError when the CSV cannot express the schedule.
void check_csv_expressible(const Schedule& s) {
  const int S = s.stages();
  const auto refuse = [&](const std::string& why) {
    return ConfigError(fmt::format(
        "schedule '{}' cannot be written as a PyTorch CSV: {}", s.name, why));
  };
  if (s.slices != 1)
    throw refuse(fmt::format("its micro-batches are cut into {} sequence slices, which PyTorch's "
                             "actions cannot name (write JSON)",
                             s.slices));
  // PyTorch sends the output of stage i to stage i+1 for every micro-batch: one route 0..S-1.
  if (s.routes.size() != 1)
    throw refuse(fmt::format(
        "it has {} routes, and the format has one chain of stages 0..S-1 for every micro-batch "
        "(a second model replica, as in DualPipe, cannot be expressed; export JSON instead)",
        s.routes.size()));
  bool in_order = static_cast<int>(s.routes[0].size()) == S;
  for (int k = 0; in_order && k < S; ++k) in_order = s.routes[0][ix(k)] == k;
  if (!in_order)
    throw refuse(fmt::format("its route {} is not the stages 0..{} in order",
                             int_list(s.routes[0]), S - 1));
  if (static_cast<int>(s.microbatch_route.size()) != s.microbatches ||
      std::any_of(s.microbatch_route.begin(), s.microbatch_route.end(), [](int r) { return r != 0; }))
    throw refuse("its micro-batches are not all on route 0");
  if (static_cast<int>(s.order.size()) != s.devices)
    throw refuse(fmt::format("it has {} task lists for {} devices", s.order.size(), s.devices));
  // The reader derives the placement from the rows and the counts from the largest indices, so
  // each stage must appear on its own device, and the largest micro-batch must be m-1.
  std::vector<bool> seen(ix(std::max(0, S)), false);
  int max_mb = -1;
  for (int d = 0; d < static_cast<int>(s.order.size()); ++d) {
    for (const Task& t : s.order[ix(d)]) {
      const auto check = [&](int stage, int mb) {
        if (stage < 0 || stage >= S || mb < 0 || mb >= s.microbatches ||
            s.stage_device[ix(stage)] != d)
          throw refuse(fmt::format("task {} on device {} does not fit its placement or shape "
                                   "(validate the schedule first)",
                                   to_string(t, s.notation), d));
        seen[ix(stage)] = true;
        max_mb = std::max(max_mb, mb);
      };
      check(t.stage, t.microbatch);
      if (t.kind == Kind::FB) check(t.stage2, t.microbatch2);
    }
  }
  for (int st = 0; st < S; ++st)
    if (!seen[ix(st)])
      throw refuse(fmt::format("stage {} has no task, so a reader cannot tell its device", st));
  if (max_mb + 1 != s.microbatches)
    throw refuse(fmt::format("micro-batch {} has no task, so a reader would count {} micro-batches",
                             s.microbatches - 1, max_mb + 1));
}

} // namespace

void write_pytorch_csv(std::ostream& out, const Schedule& s) {
  check_csv_expressible(s);
  for (const auto& row : s.order) {
    for (std::size_t i = 0; i < row.size(); ++i)
      out << (i == 0 ? "" : ",") << to_string(row[i], Notation::pytorch);
    out << '\n';
  }
}

void write_pytorch_csv(std::ostream& out, const Schedule& s,
                       std::span<const std::vector<std::optional<Task>>> slots) {
  check_csv_expressible(s);
  bool same = slots.size() == s.order.size();
  for (std::size_t d = 0; same && d < slots.size(); ++d) {
    std::size_t i = 0;
    for (const auto& slot : slots[d]) {
      if (!slot) continue;
      same = same && i < s.order[d].size() && *slot == s.order[d][i];
      ++i;
    }
    same = same && i == s.order[d].size();
  }
  if (!same)
    throw ConfigError(fmt::format("schedule '{}': its idle slots do not hold its own order, so "
                                  "they cannot be written with it",
                                  s.name));
  for (const auto& row : slots) {
    for (std::size_t i = 0; i < row.size(); ++i)
      out << (i == 0 ? "" : ",") << (row[i] ? to_string(*row[i], Notation::pytorch) : "");
    out << '\n';
  }
}

} // namespace ppsim
