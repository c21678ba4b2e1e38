// Tests of the Chrome trace writer (parsed back with nlohmann::json) and the JSON text helpers.
#include "ppsim/io/json_text.hpp"
#include "ppsim/viz/chrome_trace.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/metrics.hpp"
#include "tests/viz/trace_rules.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

namespace {

using namespace ppsim;
using namespace ppsim::test;
using nlohmann::json;

std::string trace_text(const Run& run) {
  std::ostringstream os;
  write_chrome_trace(os, run);
  return os.str();
}

// The trace parsed back, after checking that it keeps the rules of every trace.
json trace_json(const Run& run) {
  json trace = json::parse(trace_text(run));
  const auto violations = trace_rule_violations(trace);
  CAPTURE(violations);
  CHECK(violations.empty());
  return trace;
}

// The exact value a reader gets for `ticks` written as microseconds.
double us(Ticks t) { return static_cast<double>(t) / 1000.0; }

std::vector<json> events_of(const json& trace, std::string_view ph) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

// The slices of the tasks: the X events on a device's compute track (tid 0), not the run's
// summary slice nor the messages of a comm track (tid 1).
std::vector<json> task_slices(const json& trace) {
  std::vector<json> out;
  for (const json& e : events_of(trace, "X"))
    if (e.at("cat") != "summary" && e.at("tid") == 0) out.push_back(e);
  return out;
}

std::string expected_name(const Task& t) {
  return std::string(kind_name(t.kind)) + std::to_string(t.microbatch);
}

// Two devices, two chunks each (loop placement: stages 0, 2 on device 0; 1, 3 on device 1).
Schedule two_chunk_schedule() {
  Schedule s = make_pipeline("two-chunks", 2, 1, loop_placement(2, 2));
  const auto t = [](Kind k, int stage) { return Task::make(k, stage, 0); };
  s.order[0] = {t(Kind::F, 0), t(Kind::F, 2), t(Kind::B, 2), t(Kind::W, 2), t(Kind::B, 0),
                t(Kind::W, 0)};
  s.order[1] = {t(Kind::F, 1), t(Kind::F, 3), t(Kind::B, 3), t(Kind::W, 3), t(Kind::B, 1),
                t(Kind::W, 1)};
  return s;
}

// Device 1 overlaps the F of micro-batch 1 with the B of micro-batch 0 in one FB.
Schedule overlapped_schedule() {
  Schedule s = make_pipeline("overlap", 2, 2, loop_placement(2, 1));
  const auto t = [](Kind k, int stage, int mb) { return Task::make(k, stage, mb); };
  s.order[0] = {t(Kind::F, 0, 0), t(Kind::F, 0, 1), t(Kind::B, 0, 0), t(Kind::W, 0, 0),
                t(Kind::B, 0, 1), t(Kind::W, 0, 1)};
  s.order[1] = {t(Kind::F, 1, 0), Task::overlapped(1, 1, Kind::B, 1, 0), t(Kind::W, 1, 0),
                t(Kind::B, 1, 1), t(Kind::W, 1, 1)};
  return s;
}

} // namespace

TEST_CASE("the trace has one complete event per task at its exact time", "[viz]") {
  // 1.000001 ms = 1000001 ns: microseconds with three decimals, written exactly.
  const Run run = make_run("zb-h1", 4, 8, "F=1.000001,B=1.5,W=0.7,comm=0.25");
  const std::string text = trace_text(run);
  const json trace = trace_json(run);
  CHECK_FALSE(trace.contains("displayTimeUnit"));
  CHECK(text.find("\"dur\":1000.001") != std::string::npos);

  std::map<std::pair<int, std::string>, const TaskRun*> by_task;
  for (int d = 0; d < run.timeline.devices; ++d)
    for (const TaskRun& r : run.timeline.device_runs(d)) by_task[{d, to_string(r.task)}] = &r;
  REQUIRE(by_task.size() == run.timeline.runs.size());

  const auto xs = task_slices(trace);
  REQUIRE(xs.size() == run.timeline.runs.size());
  std::set<std::pair<int, std::string>> seen;
  for (const json& e : xs) {
    const std::pair<int, std::string> key{e.at("pid").get<int>() - 1,
                                          e.at("args").at("task").get<std::string>()};
    CAPTURE(key.first, key.second);
    REQUIRE(by_task.count(key) == 1);
    CHECK(seen.insert(key).second);
    const TaskRun& r = *by_task.at(key);
    CHECK(e.at("tid") == 0);
    CHECK(e.at("ts").get<double>() == us(r.start));
    CHECK(e.at("dur").get<double>() == us(r.end - r.start));
    CHECK(e.at("name") == expected_name(r.task));
    CHECK(e.at("cat") == std::string(kind_name(r.task.kind)));
    CHECK(e.at("args").at("stage") == r.task.stage);
    CHECK(e.at("args").at("chunk") == 0);
    CHECK(e.at("args").at("microbatch") == r.task.microbatch);
    CHECK(e.at("args").at("kind") == std::string(kind_name(r.task.kind)));
  }
}

TEST_CASE("task names carry the chunk when a device holds several, and FB names both halves",
          "[viz]") {
  SECTION("two chunks per device") {
    const Run run = run_schedule(two_chunk_schedule(), parse_costs("F=1,B=1,W=1"));
    const json trace = trace_json(run);
    std::multiset<std::string> names;
    for (const json& e : task_slices(trace)) {
      names.insert(e.at("name").get<std::string>());
      const int stage = e.at("args").at("stage");
      CHECK(e.at("args").at("chunk") == stage / 2);
    }
    CHECK(names == std::multiset<std::string>{"F0.c0", "F0.c0", "F0.c1", "F0.c1", "B0.c0",
                                              "B0.c0", "B0.c1", "B0.c1", "W0.c0", "W0.c0",
                                              "W0.c1", "W0.c1"});
    std::set<std::string> flows;
    for (const json& e : events_of(trace, "s")) flows.insert(e.at("name").get<std::string>());
    CHECK(flows == std::set<std::string>{"F0.c0 -> stage 1", "F0.c0 -> stage 2",
                                         "F0.c1 -> stage 3", "B0.c1 -> stage 2",
                                         "B0.c1 -> stage 1", "B0.c0 -> stage 0"});
  }
  SECTION("an overlapped F and B") {
    const Run run = run_schedule(overlapped_schedule(), parse_costs("F=1,B=1,W=1"));
    const json trace = trace_json(run);
    int fb = 0;
    for (const json& e : task_slices(trace)) {
      if (e.at("cat") != "FB") continue;
      ++fb;
      CHECK(e.at("name") == "F1+B0");
      CHECK(e.at("dur").get<double>() == 2000.0);
      const json& a = e.at("args");
      CHECK(a.at("kind") == "FB");
      CHECK(a.at("stage") == 1);
      CHECK(a.at("microbatch") == 1);
      CHECK(a.at("backward_kind") == "B");
      CHECK(a.at("backward_stage") == 1);
      CHECK(a.at("backward_chunk") == 0);
      CHECK(a.at("backward_microbatch") == 0);
    }
    CHECK(fb == 1);
    std::multiset<std::string> flows;
    for (const json& e : events_of(trace, "f")) flows.insert(e.at("name").get<std::string>());
    CHECK(flows == std::multiset<std::string>{"F0 -> stage 1", "F1 -> stage 1", "B0 -> stage 0",
                                              "B1 -> stage 0"});
  }
}

TEST_CASE("every device is a named process from pid 1 with one compute thread", "[viz]") {
  const Run run = make_run("1f1b", 4, 8, "F=1,B=1,W=1");  // comm 0: no comm track
  const json trace = trace_json(run);
  std::map<std::string, std::map<int, json>> meta;
  for (const json& e : events_of(trace, "M")) {
    CHECK(e.at("tid") == 0);
    meta[e.at("name").get<std::string>()][e.at("pid").get<int>()] = e.at("args");
  }
  REQUIRE(meta.size() == 3);
  for (int d = 0; d < 4; ++d) {
    CAPTURE(d);
    CHECK(meta.at("process_name").at(d + 1).at("name") == "device " + std::to_string(d));
    CHECK(meta.at("process_sort_index").at(d + 1).at("sort_index") == d);
    CHECK(meta.at("thread_name").at(d + 1).at("name") == "compute");
  }
  // The run's own process, listed before the devices.
  CHECK(meta.at("process_name").at(5).at("name") == "run");
  CHECK(meta.at("process_sort_index").at(5).at("sort_index") == -1);
  CHECK(meta.at("process_name").size() == 5);
  CHECK(meta.at("process_name").count(0) == 0);
}

TEST_CASE("every message is one flow from inside the producer's end to inside the consumer's start",
          "[viz]") {
  const Run run = make_run("zb-h1", 4, 8, "F=1,B=1,W=1,comm=0.25");
  const json trace = trace_json(run);
  const auto& comms = run.timeline.comms;
  REQUIRE(!comms.empty());
  const auto starts = events_of(trace, "s");
  const auto ends = events_of(trace, "f");
  REQUIRE(starts.size() == comms.size());
  REQUIRE(ends.size() == comms.size());
  std::map<std::uint64_t, json> s_by_id, f_by_id;
  for (const json& e : starts) CHECK(s_by_id.emplace(e.at("id").get<std::uint64_t>(), e).second);
  for (const json& e : ends) CHECK(f_by_id.emplace(e.at("id").get<std::uint64_t>(), e).second);
  for (const auto& [id, s] : s_by_id) {
    CAPTURE(id);
    REQUIRE(id < comms.size());
    REQUIRE(f_by_id.count(id) == 1);
    const json& f = f_by_id.at(id);
    const CommEvent& c = comms[id];
    const TaskRun& from = run.timeline.runs[static_cast<std::size_t>(c.from)];
    const TaskRun& to = run.timeline.runs[static_cast<std::size_t>(c.to)];
    CHECK(s.at("pid") == run.timeline.device_of(c.from) + 1);
    CHECK(s.at("ts").get<double>() == us(from.end - 1));
    CHECK(f.at("pid") == run.timeline.device_of(c.to) + 1);
    CHECK(f.at("ts").get<double>() == us(to.start + 1));
    CHECK(f.at("bp") == "e");
    CHECK(s.at("cat") == "comm");
    CHECK(f.at("cat") == "comm");
    CHECK(s.at("name") == f.at("name"));
    const std::string expected = expected_name(from.task) + " -> stage " +
                                 std::to_string(to.task.stage);
    CHECK(s.at("name") == expected);
  }
}

TEST_CASE("each flow binds to its own slices even where the neighbours touch them", "[viz]") {
  // comm = 0: a message leaves exactly when the next task of the sender starts, and the
  // consumer starts exactly when the task before it ends.
  const Run run = make_run("1f1b", 4, 4, "F=1,B=1,W=1,comm=0");
  const json trace = trace_json(run);
  std::map<int, std::vector<const TaskRun*>> by_device;
  for (int d = 0; d < run.timeline.devices; ++d)
    for (const TaskRun& r : run.timeline.device_runs(d)) by_device[d].push_back(&r);
  // The tasks of `device` whose slice holds `us_ts` (closed interval).
  const auto holding = [&](int device, double ts) {
    std::vector<const TaskRun*> out;
    for (const TaskRun* r : by_device[device])
      if (us(r->start) <= ts && ts <= us(r->end)) out.push_back(r);
    return out;
  };
  int touching = 0;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "s" && e.at("ph") != "f") continue;
    const CommEvent& c = run.timeline.comms[e.at("id").get<std::size_t>()];
    const TaskRun& own = run.timeline.runs[static_cast<std::size_t>(e.at("ph") == "s" ? c.from : c.to)];
    const auto held = holding(e.at("pid").get<int>() - 1, e.at("ts").get<double>());
    REQUIRE(held.size() == 1);
    CHECK(held.front() == &own);
    // The neighbour that ends or starts at the producer's end or the consumer's start exists.
    const Ticks edge = e.at("ph") == "s" ? own.end : own.start;
    const int own_device = run.timeline.device_of(e.at("ph") == "s" ? c.from : c.to);
    for (const TaskRun* r : by_device[own_device])
      if (r != &own && (r->start == edge || r->end == edge)) ++touching;
  }
  CHECK(touching > 0);  // the case this test is about occurs
}

TEST_CASE("a producer shorter than 2 ns keeps its flow at its edge, ordered before the next slice",
          "[viz]") {
  // F = 1 ns: no point strictly inside; the flow start is at the end, written before the slice
  // that starts then, and the rules accept the edge of a slice that short.
  const Run run = make_run("1f1b", 2, 2, "F=0.000001,B=1,W=1,comm=0");
  const json trace = trace_json(run);
  const json& evs = trace.at("traceEvents");
  int checked = 0;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    if (evs[i].at("ph") != "s") continue;
    const CommEvent& c = run.timeline.comms[evs[i].at("id").get<std::size_t>()];
    const TaskRun& from = run.timeline.runs[static_cast<std::size_t>(c.from)];
    if (from.task.kind != Kind::F) continue;
    CHECK(evs[i].at("ts").get<double>() == us(from.end));
    for (std::size_t j = 0; j < i; ++j) {
      const json& x = evs[j];
      if (x.at("ph") == "X" && x.at("pid") == evs[i].at("pid"))
        CHECK(x.at("ts").get<double>() < evs[i].at("ts").get<double>());
    }
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("the trace rules catch what they are about", "[viz]") {
  const json good = trace_json(make_run("zb-h1", 2, 2, "F=1,B=1,W=1,comm=0"));
  REQUIRE(trace_rule_violations(good).empty());
  const auto broken = [&](auto&& edit) {
    json t = good;
    edit(t);
    return trace_rule_violations(t).size();
  };
  CHECK(broken([](json& t) { t["displayTimeUnit"] = "ms"; }) == 1);
  CHECK(broken([](json& t) {
          for (json& e : t["traceEvents"]) e["pid"] = e["pid"].get<int>() - 1;
        }) > 0);
  CHECK(broken([](json& t) {
          for (json& e : t["traceEvents"])
            if (e["ph"] == "X" && e["name"] == "run") e["args"].erase("metrics");
        }) == 1);
  // A flow start moved to its producer's end, which is the next slice's start.
  CHECK(broken([](json& t) {
          for (json& e : t["traceEvents"])
            if (e["ph"] == "s") e["ts"] = e["ts"].get<double>() + 0.001;
        }) > 0);
  CHECK(broken([](json& t) {
          auto& evs = t["traceEvents"];
          for (std::size_t i = 0; i < evs.size(); ++i)
            if (evs[i]["ph"] == "f") {
              evs.erase(i);
              return;
            }
        }) == 1);
}

TEST_CASE("the memory counters follow memory_series and peak at the metrics' peak", "[viz]") {
  CostSpec spec = parse_costs("F=1,B=1,W=1,comm=0.25,MW=0.5");
  spec.memory_unit_bytes = 1024;
  const Run run = run_schedule(make_schedule("zb-h1", {.devices = 4, .microbatches = 8}), spec);
  const json trace = trace_json(run);
  const auto series = memory_series(run.timeline, run.costs);
  std::map<int, std::vector<std::pair<double, double>>> got, bytes;
  for (const json& e : events_of(trace, "C")) {
    const int pid = e.at("pid").get<int>() - 1;
    if (e.at("name") == "activation memory") {
      REQUIRE(e.at("args").size() == 1);
      got[pid].emplace_back(e.at("ts").get<double>(), e.at("args").at("M_B").get<double>());
    } else {
      CHECK(e.at("name") == "activation memory (bytes)");
      bytes[pid].emplace_back(e.at("ts").get<double>(), e.at("args").at("bytes").get<double>());
    }
  }
  double peak = 0;
  for (int d = 0; d < 4; ++d) {
    CAPTURE(d);
    const auto& want = series[static_cast<std::size_t>(d)];
    REQUIRE(got[d].size() == want.size());
    REQUIRE(bytes[d].size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      CHECK(got[d][k].first == us(want[k].time));
      CHECK(got[d][k].second == want[k].value);
      CHECK(bytes[d][k].second == std::round(want[k].value * 1024));
      peak = std::max(peak, got[d][k].second);
    }
  }
  CHECK(peak == run.metrics.peak_memory);
  CHECK(peak == 4);  // ZB-H1 keeps 1F1B's p M_B

  SECTION("without a byte size there is no byte counter") {
    const Run plain = make_run("zb-h1", 4, 8, "F=1,B=1,W=1");
    for (const json& e : events_of(trace_json(plain), "C"))
      CHECK(e.at("name") == "activation memory");
  }
}

TEST_CASE("otherData and the run slice hold the parameters and the metrics", "[viz]") {
  const Run run = make_run("zb-h1", 4, 8, "F=2,B=2,W=2");
  const json trace = trace_json(run);
  const json other = trace.at("otherData");
  CHECK(other.at("parameters").at("schedule") == "zb-h1");
  CHECK(other.at("parameters").at("devices") == "4");
  CHECK(other.at("parameters").at("microbatches") == "8");
  const json& m = other.at("metrics");
  // Known answer (DESIGN.md): ZB-H1 at F = B = W = 2, p = 4, m = 8 costs 54 (ideal 48).
  CHECK(m.at("cost_ms") == 54.0);
  CHECK(m.at("ideal_ms") == 48.0);
  CHECK(m.at("makespan_ms") == ticks_to_ms(run.metrics.makespan));
  CHECK(m.at("bubble_rate") == run.metrics.bubble_rate);
  CHECK(m.at("bubble_over_ideal") == run.metrics.bubble_over_ideal);
  CHECK(m.at("idle_fraction") == run.metrics.idle_fraction);
  CHECK(m.at("peak_memory") == run.metrics.peak_memory);
  REQUIRE(m.at("per_device").size() == 4);
  CHECK(m.at("per_device")[3].at("busy_ms") == 48.0);
  CHECK(m.at("per_device")[3].at("device") == 3);

  // The same, as the args of the one slice of the "run" process: Perfetto drops otherData.
  std::vector<json> runs;
  for (const json& e : events_of(trace, "X"))
    if (e.at("pid") == 5) runs.push_back(e);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].at("name") == "run");
  CHECK(runs[0].at("ts") == 0);
  CHECK(runs[0].at("dur").get<double>() == us(run.metrics.makespan));
  CHECK(runs[0].at("args").at("parameters") == other.at("parameters"));
  CHECK(runs[0].at("args").at("metrics") == other.at("metrics"));
}

TEST_CASE("the trace is byte-identical on two calls", "[viz]") {
  const Run run = make_run("zb-h2", 4, 8, "F=1,B=1.25,W=0.75,comm=0.1");
  const std::string a = trace_text(run);
  CHECK(a == trace_text(run));
  CHECK(a == trace_text(make_run("zb-h2", 4, 8, "F=1,B=1.25,W=0.75,comm=0.1")));
}

TEST_CASE("a large run streams a valid trace", "[viz][.slow]") {
  // 3 * 32 * 8192 = 786432 tasks.
  const Run run = make_run("zb-h1", 32, 8192, "F=1,B=1,W=1,comm=0.05");
  REQUIRE(run.timeline.runs.size() == 786432);
  const std::string text = trace_text(run);
  const json trace = json::parse(text);
  CHECK(task_slices(trace).size() == 786432);
  CHECK(trace_rule_violations(trace).empty());
}

TEST_CASE("every registered schedule gives a trace with its tasks and named flows",
          "[viz][property]") {
  for (const ScheduleInfo& info : schedule_registry()) {
    CAPTURE(info.name);
    const Run run = make_run(info.name, 4, 8, "F=1,B=1,W=1,comm=0.1");
    const json trace = trace_json(run);
    CHECK(task_slices(trace).size() == run.timeline.runs.size());
    const auto starts = events_of(trace, "s");
    CHECK(starts.size() == run.timeline.comms.size());
    CHECK(events_of(trace, "f").size() == run.timeline.comms.size());
    for (const json& e : starts) {
      const std::string name = e.at("name");
      CAPTURE(name);
      CHECK(name.find(" -> stage ") != std::string::npos);
    }
    const bool chunked = run.schedule.chunks() > 1;
    for (const json& e : task_slices(trace)) {
      const std::string name = e.at("name");
      CAPTURE(name);
      CHECK((name.find(".c") != std::string::npos) == chunked);
      CHECK((name.find('+') != std::string::npos) == (e.at("cat") == "FB"));
    }
  }
}

TEST_CASE("the zb-h1 trace at p = 2, m = 2 with comm matches the approved golden file",
          "[viz][golden]") {
  std::ostringstream out;
  write_chrome_trace(out, make_run("zb-h1", 2, 2, "F=1,B=1,W=1,comm=0.25"));
  check_golden("data/golden/trace_zb_h1_p2_m2.json", out.str());
}

TEST_CASE("every message that takes time is a slice on its sender's comm track",
          "[viz][comm]") {
  // GPipe p=2 m=2, comm 3, duplex: F1 queues behind F0 for 2 ms (tests/sim/comm_test.cpp).
  CommOptions duplex;
  duplex.link.contention = Contention::Duplex;
  const Run run = run_schedule(make_schedule("gpipe", {.devices = 2, .microbatches = 2}),
                               parse_costs("F=1,B=1,W=1,comm=3,act_bytes=1e6,grad_bytes=5e5"),
                               duplex);
  const json trace = trace_json(run);
  std::vector<json> messages;
  for (const json& e : events_of(trace, "X"))
    if (e.at("tid") != 0) messages.push_back(e);
  REQUIRE(messages.size() == run.timeline.comms.size());
  CHECK(trace_rule_violations(trace).empty());
  for (const json& e : messages) {
    CAPTURE(e.dump());
    CHECK(e.at("cat") == "comm");
    const CommEvent* c = nullptr;
    for (const CommEvent& k : run.timeline.comms)
      if (us(k.start) == e.at("ts").get<double>() &&
          run.timeline.device_of(k.from) + 1 == e.at("pid"))
        c = &k;
    REQUIRE(c != nullptr);
    CHECK(e.at("dur").get<double>() == us(c->arrive - c->start));
    CHECK(e.at("args").at("bytes") == c->bytes);
    CHECK(e.at("args").at("to_device") == run.timeline.device_of(c->to));
    CHECK(e.at("args").contains("queued_us") == (c->start > c->send));
  }
  const auto f1 = std::find_if(messages.begin(), messages.end(),
                               [](const json& e) { return e.at("name") == "F1 -> stage 1"; });
  REQUIRE(f1 != messages.end());
  CHECK(f1->at("ts") == 4000);
  CHECK(f1->at("dur") == 3000);
  CHECK(f1->at("args").at("queued_us") == 2000);
  CHECK(f1->at("args").at("bytes") == 1e6);
  int comm_tracks = 0;
  for (const json& e : events_of(trace, "M"))
    if (e.at("name") == "thread_name" && e.at("tid") == 1 && e.at("args").at("name") == "comm")
      ++comm_tracks;
  CHECK(comm_tracks == 2);  // duplex: one message at a time per sender here, one lane each
  // Without contention F0 [1,4] and F1 [2,5] leave device 0 together: a second lane (tid 2,
  // "comm 2"), since the slices of one thread must not overlap.
  const json both = trace_json(make_run("gpipe", 2, 2, "F=1,B=1,W=1,comm=3"));
  CHECK(trace_rule_violations(both).empty());
  std::map<std::pair<int, int>, int> lanes;  // (pid, tid) -> messages
  for (const json& e : events_of(both, "X"))
    if (e.at("tid") != 0) ++lanes[{e.at("pid").get<int>(), e.at("tid").get<int>()}];
  CHECK(lanes == std::map<std::pair<int, int>, int>{{{1, 1}, 1}, {{1, 2}, 1}, {{2, 1}, 1}, {{2, 2}, 1}});
  bool named = false;
  for (const json& e : events_of(both, "M"))
    named = named || (e.at("pid") == 1 && e.at("tid") == 2 && e.at("args").at("name") == "comm 2");
  CHECK(named);
  // Messages that take no time get no slice (and no comm track).
  const json zero = trace_json(make_run("gpipe", 2, 2, "F=1,B=1,W=1,comm=0"));
  for (const json& e : events_of(zero, "X")) CHECK(e.at("tid") == 0);
}
