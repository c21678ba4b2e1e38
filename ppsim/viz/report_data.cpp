// The report's data: every run's timeline, memory steps and messages as compact JSON.
#include "ppsim/viz/report_data.hpp"

#include "ppsim/io/json_text.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/viz/metrics_json.hpp"
#include "ppsim/viz/svg.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <iterator>
#include <numeric>

namespace ppsim {

namespace {

constexpr Kind kinds[] = {Kind::F, Kind::B, Kind::W, Kind::BW, Kind::FB};

void key(std::string& out, std::string_view name) {
  append_json_string(out, name);
  out += ':';
}

template <class T, class Fn> void int_array(std::string& out, std::span<const T> items, Fn&& value) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    append_int(out, value(items[i]));
  }
  out += ']';
}

// The largest time unit that divides every time of the run (relative to its first start), so
// that the page gets small integers and computes exact times from them.
Ticks time_unit(const Run& r, Ticks t0, std::span<const std::vector<MemoryPoint>> memory,
                std::span<const std::vector<CommWait>> waits) {
  Ticks g = 0;
  const auto add = [&g](Ticks t) { g = std::gcd(g, t < 0 ? -t : t); };
  for (const TaskRun& t : r.timeline.runs) {
    add(t.start - t0);
    add(t.end - t0);
  }
  for (const CommEvent& c : r.timeline.comms) {
    add(c.send - t0);
    add(c.arrive - t0);
  }
  for (const auto& steps : memory)
    for (const MemoryPoint& p : steps) add(p.time - t0);
  for (const auto& device : waits)
    for (const CommWait& w : device) {
      add(w.begin - t0);
      add(w.end - t0);
    }
  return g > 0 ? g : kTicksPerMs;
}

// What every section of a run's data shares: its first start and last end, the time unit, the
// memory steps and the waits on messages.
struct RunFrame {
  const Run& run;
  Ticks t0{0};
  Ticks t1{0};
  Ticks unit{kTicksPerMs};
  std::vector<std::vector<MemoryPoint>> memory;
  // With an offload, what each device holds on the host (drawn dashed beside its memory).
  std::vector<std::vector<MemoryPoint>> host;
  // The idle stretches spent waiting on a message, per device in time order.
  std::vector<std::vector<CommWait>> waits;
  bool any_wait{false};

  explicit RunFrame(const Run& r) : run(r), memory(memory_series(r.timeline, r.costs)) {
    const Timeline& tl = r.timeline;
    if (!tl.copies.empty()) host = host_memory_series(tl);
    for (std::size_t i = 0; i < tl.runs.size(); ++i) {
      if (i == 0 || tl.runs[i].start < t0) t0 = tl.runs[i].start;
      if (i == 0 || tl.runs[i].end > t1) t1 = tl.runs[i].end;
    }
    waits.resize(static_cast<std::size_t>(std::max(0, tl.devices)));
    for_each_comm_wait(tl, [&](const CommWait& w) {
      waits[static_cast<std::size_t>(w.device)].push_back(w);
      any_wait = true;
    });
    for (auto& w : waits)
      std::sort(w.begin(), w.end(),
                [](const CommWait& a, const CommWait& b) { return a.begin < b.begin; });
    std::vector<std::vector<MemoryPoint>> steps = memory;
    steps.insert(steps.end(), host.begin(), host.end());
    unit = time_unit(r, t0, steps, waits);
  }
  [[nodiscard]] long long u(Ticks t) const { return static_cast<long long>(t / unit); }
};

// The run's shape, limits, parameters and cost source: "name" to "comm_ms".
void write_shape(std::string& out, const RunFrame& f) {
  const Run& r = f.run;
  const Schedule& s = r.schedule;
  const Topology topo(s);
  key(out, "name");
  append_json_string(out, s.name);
  out += ',';
  key(out, "devices");
  append_int(out, s.devices);
  out += ',';
  key(out, "stages");
  append_int(out, s.stages());
  out += ',';
  key(out, "chunks");
  append_int(out, s.chunks());
  if (s.slices > 1) {
    // a task's "b" is then mb * slices + slice
    out += ',';
    key(out, "slices");
    append_int(out, s.slices);
  }
  const int iterations = std::max(1, r.iterations.options.count);
  out += ',';
  key(out, "microbatches");
  append_int(out, s.microbatches / iterations);
  out += ',';
  key(out, "iterations");
  append_int(out, iterations);
  out += ',';
  key(out, "tasks");
  append_int(out, static_cast<long long>(r.timeline.runs.size()));
  out += ',';
  key(out, "unit_ns");
  append_int(out, f.unit);
  out += ',';
  key(out, "makespan");
  append_int(out, f.u(f.t1 - f.t0));
  out += ',';
  key(out, "mem_limit");
  if (r.mem_limit >= 0) append_json_number(out, r.mem_limit);
  else out += "null";
  out += ',';
  key(out, "mem_unit_bytes");
  append_json_number(out, r.costs.memory_unit_bytes);
  out += ',';
  key(out, "stage_chunk");
  std::vector<int> stages(static_cast<std::size_t>(s.stages()));
  std::iota(stages.begin(), stages.end(), 0);
  int_array(out, std::span<const int>(stages), [&](int st) { return topo.chunk_of(st); });
  out += ',';
  key(out, "stage_device");
  int_array(out, std::span<const int>(s.stage_device), [](int d) { return d; });
  out += ',';
  key(out, "parameters");
  out += '[';
  for (std::size_t i = 0; i < r.parameters.size(); ++i) {
    if (i > 0) out += ',';
    out += '[';
    append_json_string(out, r.parameters[i].first);
    out += ',';
    append_json_string(out, r.parameters[i].second);
    out += ']';
  }
  out += "],";
  key(out, "costs");
  append_json_string(out, r.costs.source);
  out += ',';
  key(out, "comm_ms");
  append_json_number(out, ticks_to_ms(r.costs.comm));
}

// Costs per stage: F, B, W, BW in ms, MB and MW in M_B.
void write_stage_costs(std::string& out, const CostModel& costs) {
  const std::span<const StageCosts> st(costs.stage);
  const auto ms_array = [&](std::string_view name, auto get) {
    key(out, name);
    out += '[';
    for (std::size_t i = 0; i < st.size(); ++i) {
      if (i > 0) out += ',';
      append_json_number(out, get(st[i]));
    }
    out += ']';
  };
  key(out, "stage_costs");
  out += '{';
  ms_array("F", [](const StageCosts& c) { return ticks_to_ms(c.F); });
  out += ',';
  ms_array("B", [](const StageCosts& c) { return ticks_to_ms(c.B); });
  out += ',';
  ms_array("W", [](const StageCosts& c) { return ticks_to_ms(c.W); });
  out += ',';
  ms_array("BW", [](const StageCosts& c) { return ticks_to_ms(c.BW >= 0 ? c.BW : c.B + c.W); });
  out += ',';
  ms_array("MB", [](const StageCosts& c) { return c.MB; });
  out += ',';
  ms_array("MW", [](const StageCosts& c) { return c.MW; });
  out += '}';
}

// Where each stage's time goes (Run::time_parts), ms per part: "time_parts" with one array per
// part, written only when the run has them for every stage.
void write_time_parts(std::string& out, const Run& r) {
  const std::span<const StageTimeParts> tp(r.time_parts);
  const auto part = [&](std::string_view name, double StageTimeParts::*field) {
    key(out, name);
    out += '[';
    for (std::size_t i = 0; i < tp.size(); ++i) {
      if (i > 0) out += ',';
      append_json_number(out, tp[i].*field);
    }
    out += ']';
  };
  static constexpr std::pair<const char*, double StageTimeParts::*> kParts[] = {
      {"gemm", &StageTimeParts::gemm},         {"attention", &StageTimeParts::attention},
      {"memory", &StageTimeParts::memory},     {"tp_comm", &StageTimeParts::tp_comm},
      {"ep_comm", &StageTimeParts::ep_comm},   {"overhead", &StageTimeParts::overhead},
      {"optimizer", &StageTimeParts::optimizer},
  };
  key(out, "time_parts");
  out += '{';
  for (std::size_t i = 0; i < std::size(kParts); ++i) {
    if (i > 0) out += ',';
    part(kParts[i].first, kParts[i].second);
  }
  out += "},";
}

// Tasks, per device in execution order ("dev"), and the second halves of the FB cells ("fb").
void write_tasks(std::string& out, const RunFrame& f) {
  const Timeline& tl = f.run.timeline;
  key(out, "dev");
  out += '[';
  std::string fb;
  for (int d = 0; d < tl.devices; ++d) {
    const auto runs = tl.device_runs(d);
    const auto base = static_cast<std::size_t>(tl.device_begin[static_cast<std::size_t>(d)]);
    if (d > 0) out += ',';
    out += '{';
    key(out, "g");
    out += '[';
    Ticks prev = f.t0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (i > 0) out += ',';
      append_int(out, f.u(runs[i].start - prev));
      prev = runs[i].end;
    }
    out += "],";
    key(out, "d");
    int_array(out, runs, [&](const TaskRun& t) { return f.u(t.end - t.start); });
    out += ',';
    key(out, "k");
    int_array(out, runs, [](const TaskRun& t) { return static_cast<int>(t.task.kind); });
    out += ',';
    key(out, "s");
    int_array(out, runs, [](const TaskRun& t) { return t.task.stage; });
    out += ',';
    key(out, "b");
    int_array(out, runs, [](const TaskRun& t) { return t.task.microbatch; });
    if (f.any_wait) {
      // Waits on communication: gap from the previous wait's end (or t0), then length.
      out += ',';
      key(out, "cw");
      out += '[';
      Ticks last = f.t0;
      const auto& waits = f.waits[static_cast<std::size_t>(d)];
      for (std::size_t i = 0; i < waits.size(); ++i) {
        const CommWait& w = waits[i];
        if (i > 0) out += ',';
        append_int(out, f.u(w.begin - last));
        out += ',';
        append_int(out, f.u(w.end - w.begin));
        last = w.end;
      }
      out += ']';
    }
    out += '}';
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const Task& t = runs[i].task;
      if (t.kind != Kind::FB) continue;
      if (!fb.empty()) fb += ',';
      fb += '[';
      append_int(fb, static_cast<long long>(base + i));
      fb += ',';
      append_int(fb, static_cast<int>(t.kind2));
      fb += ',';
      append_int(fb, t.stage2);
      fb += ',';
      append_int(fb, t.microbatch2);
      fb += ']';
    }
  }
  out += "],";
  key(out, "fb");
  out += '[' + fb + ']';
}

// Memory steps, per device (or on the host): gaps in time units, values.
void write_series(std::string& out, const char* name, const RunFrame& f,
                  const std::vector<std::vector<MemoryPoint>>& all) {
  key(out, name);
  out += '[';
  for (std::size_t d = 0; d < all.size(); ++d) {
    if (d > 0) out += ',';
    out += '{';
    key(out, "g");
    out += '[';
    Ticks prev = f.t0;
    for (std::size_t i = 0; i < all[d].size(); ++i) {
      if (i > 0) out += ',';
      append_int(out, f.u(all[d][i].time - prev));
      prev = all[d][i].time;
    }
    out += "],";
    key(out, "v");
    out += '[';
    for (std::size_t i = 0; i < all[d].size(); ++i) {
      if (i > 0) out += ',';
      // Sums of per-chunk deltas carry float noise (0.30000000000000004); 9 digits are exact
      // for any count of M_B fractions a page shows, and keep the text short.
      out += fmt::format("{:.9g}", all[d][i].value);
    }
    out += "]}";
  }
  out += ']';
}

// Messages between devices: from, to, the send after its producer's end, the flight.
void write_messages(std::string& out, const RunFrame& f) {
  const Timeline& tl = f.run.timeline;
  const std::span<const CommEvent> comms(tl.comms);
  key(out, "comm");
  out += '{';
  key(out, "f");
  int_array(out, comms, [](const CommEvent& c) { return c.from; });
  out += ',';
  key(out, "t");
  int_array(out, comms, [](const CommEvent& c) { return c.to; });
  out += ',';
  key(out, "s");
  int_array(out, comms, [&](const CommEvent& c) {
    return f.u(c.send - tl.runs[static_cast<std::size_t>(c.from)].end);
  });
  out += ',';
  key(out, "a");
  int_array(out, comms, [&](const CommEvent& c) { return f.u(c.arrive - c.send); });
  out += '}';
}

void write_run(std::string& out, const Run& r) {
  const RunFrame f(r);
  out += '{';
  write_shape(out, f);
  out += ',';
  write_stage_costs(out, r.costs);
  out += ',';
  if (!r.time_parts.empty() && r.time_parts.size() == r.costs.stage.size()) write_time_parts(out, r);
  write_tasks(out, f);
  out += ',';
  write_series(out, "mem", f, f.memory);
  out += ',';
  if (!f.host.empty()) {
    write_series(out, "host", f, f.host);
    out += ',';
  }
  write_messages(out, f);
  out += '}';
}

std::string document(std::string_view title, const std::string& metrics, std::span<const Run> runs) {
  std::string out = "{";
  key(out, "schema");
  out += "\"ppsim.report/1\",";
  key(out, "title");
  append_json_string(out, title);
  out += ',';
  key(out, "kinds");
  out += '[';
  for (const Kind k : kinds) {
    if (k != Kind::F) out += ',';
    append_json_string(out, kind_name(k));
  }
  out += "],";
  // The colours of task_fill, so the page and the SVG pictures agree: per kind, per chunk.
  key(out, "palette");
  out += '{';
  int max_chunks = 1;
  for (const Run& r : runs) max_chunks = std::max(max_chunks, r.schedule.chunks());
  for (const Kind k : kinds) {
    if (k != Kind::F) out += ',';
    key(out, kind_name(k));
    out += '[';
    for (int c = 0; c < max_chunks; ++c) {
      if (c > 0) out += ',';
      append_json_string(out, task_fill(k, c, max_chunks));
    }
    out += ']';
  }
  out += "},";
  Ticks span = 0;
  for (const Run& r : runs) span = std::max(span, r.metrics.makespan);
  key(out, "span_ms");
  append_json_number(out, ticks_to_ms(span));
  out += ',';
  key(out, "metrics");
  out += metrics;
  out += ',';
  key(out, "runs");
  out += '[';
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) out += ',';
    write_run(out, runs[i]);
  }
  out += "]}";
  // Safe inside <script>: no "</script>" and no "<!--" can appear.
  std::string safe;
  safe.reserve(out.size());
  for (const char c : out) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  return safe;
}

} // namespace

std::string report_data_json(const Comparison& comparison, std::string_view title) {
  return document(title, compare_json(comparison), comparison.runs);
}

std::string report_data_json(std::span<const Run> runs, std::string_view title) {
  return document(title, metrics_json_array(runs), runs);
}

} // namespace ppsim
