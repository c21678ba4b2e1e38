// Tests of the Chrome trace writer (parsed back with nlohmann::json) and the JSON text helpers.
#include "viz/chrome_trace.hpp"
#include "io/json_text.hpp"

#include "schedules/registry.hpp"
#include "sim/metrics.hpp"
#include "tests/viz/viz_checks.hpp"
#include "io/cost_file.hpp"

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

json trace_json(const Run& run) { return json::parse(trace_text(run)); }

// The exact value a reader gets for `ticks` written as microseconds.
double us(Ticks t) { return static_cast<double>(t) / 1000.0; }

std::vector<json> events_of(const json& trace, std::string_view ph) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

// The task slices: complete events on a device's compute track (tid 0).
std::vector<json> task_events(const json& trace) {
  std::vector<json> out;
  for (const json& e : events_of(trace, "X"))
    if (e.at("tid") == 0) out.push_back(e);
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
  const json trace = json::parse(text);
  CHECK(trace.at("displayTimeUnit") == "ms");
  CHECK(text.find("\"dur\":1000.001") != std::string::npos);

  std::map<std::pair<int, std::string>, const TaskRun*> by_task;
  for (int d = 0; d < run.timeline.devices; ++d)
    for (const TaskRun& r : run.timeline.device_runs(d)) by_task[{d, to_string(r.task)}] = &r;
  REQUIRE(by_task.size() == run.timeline.runs.size());

  const auto xs = task_events(trace);
  REQUIRE(xs.size() == run.timeline.runs.size());
  std::set<std::pair<int, std::string>> seen;
  for (const json& e : xs) {
    const std::pair<int, std::string> key{e.at("pid").get<int>(),
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
    for (const json& e : task_events(trace)) {
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
    for (const json& e : task_events(trace)) {
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

TEST_CASE("every device is a named process with one compute thread", "[viz]") {
  const Run run = make_run("1f1b", 4, 8, "F=1,B=1,W=1");
  const json trace = trace_json(run);
  std::map<std::string, std::map<int, json>> meta;
  for (const json& e : events_of(trace, "M")) {
    CHECK(e.at("tid") == 0);
    meta[e.at("name").get<std::string>()][e.at("pid").get<int>()] = e.at("args");
  }
  REQUIRE(meta.size() == 3);
  for (int d = 0; d < 4; ++d) {
    CAPTURE(d);
    CHECK(meta.at("process_name").at(d).at("name") == "device " + std::to_string(d));
    CHECK(meta.at("process_sort_index").at(d).at("sort_index") == d);
    CHECK(meta.at("thread_name").at(d).at("name") == "compute");
  }
  CHECK(meta.at("process_name").size() == 4);
}

TEST_CASE("every message is one flow from the producer's end to the consumer's start", "[viz]") {
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
    CHECK(s.at("pid") == run.timeline.device_of(c.from));
    CHECK(s.at("ts").get<double>() == us(from.end));
    CHECK(f.at("pid") == run.timeline.device_of(c.to));
    CHECK(f.at("ts").get<double>() == us(to.start));
    CHECK(f.at("bp") == "e");
    CHECK(s.at("cat") == "comm");
    CHECK(f.at("cat") == "comm");
    CHECK(s.at("name") == f.at("name"));
    const std::string expected = expected_name(from.task) + " -> stage " +
                                 std::to_string(to.task.stage);
    CHECK(s.at("name") == expected);
  }
}

TEST_CASE("within a device, a flow start precedes the next slice and a flow end follows its own",
          "[viz]") {
  // comm = 0: a message leaves exactly when the next task of the sender starts.
  const Run run = make_run("1f1b", 4, 4, "F=1,B=1,W=1,comm=0");
  const json trace = trace_json(run);
  const json& evs = trace.at("traceEvents");
  std::map<int, double> last_ts;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    const json& e = evs[i];
    if (e.at("ph") == "M") continue;
    const int pid = e.at("pid");
    const double ts = e.at("ts");
    CHECK(ts >= last_ts[pid]);  // time order per device
    last_ts[pid] = ts;
    if (e.at("ph") == "f") {
      // The slice just before on this device (skipping counters) starts at the flow's time.
      std::size_t j = i;
      while (j > 0 && (evs[j - 1].at("ph") == "C" || evs[j - 1].at("ph") == "f")) --j;
      REQUIRE(j > 0);
      CHECK(evs[j - 1].at("ph") == "X");
      CHECK(evs[j - 1].at("pid") == pid);
      CHECK(evs[j - 1].at("ts").get<double>() == ts);
    }
    if (e.at("ph") == "s") {
      // No slice of this device starting at this time was written before the flow start.
      for (std::size_t j = 0; j < i; ++j) {
        const json& x = evs[j];
        if (x.at("ph") == "X" && x.at("pid") == pid) CHECK(x.at("ts").get<double>() < ts);
      }
    }
  }
}

TEST_CASE("the memory counters follow memory_series and peak at the metrics' peak", "[viz]") {
  CostSpec spec = parse_costs("F=1,B=1,W=1,comm=0.25,MW=0.5");
  spec.memory_unit_bytes = 1024;
  const Run run = run_schedule(make_schedule("zb-h1", {.devices = 4, .microbatches = 8}), spec);
  const json trace = trace_json(run);
  const auto series = memory_series(run.timeline, run.costs);
  std::map<int, std::vector<std::pair<double, double>>> got, bytes;
  for (const json& e : events_of(trace, "C")) {
    const int pid = e.at("pid");
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

TEST_CASE("otherData holds the parameters and the metrics", "[viz]") {
  const Run run = make_run("zb-h1", 4, 8, "F=2,B=2,W=2");
  const json other = trace_json(run).at("otherData");
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
  CHECK(task_events(trace).size() == 786432);
}

TEST_CASE("every registered schedule gives a trace with its tasks and named flows",
          "[viz][property]") {
  for (const ScheduleInfo& info : schedule_registry()) {
    CAPTURE(info.name);
    const Run run = make_run(info.name, 4, 8, "F=1,B=1,W=1,comm=0.1");
    const json trace = trace_json(run);
    CHECK(task_events(trace).size() == run.timeline.runs.size());
    const auto starts = events_of(trace, "s");
    CHECK(starts.size() == run.timeline.comms.size());
    CHECK(events_of(trace, "f").size() == run.timeline.comms.size());
    for (const json& e : starts) {
      const std::string name = e.at("name");
      CAPTURE(name);
      CHECK(name.find(" -> stage ") != std::string::npos);
    }
    const bool chunked = run.schedule.chunks() > 1;
    for (const json& e : task_events(trace)) {
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
    if (e.at("tid") == 1) messages.push_back(e);
  REQUIRE(messages.size() == run.timeline.comms.size());
  for (const json& e : messages) {
    CAPTURE(e.dump());
    CHECK(e.at("cat") == "comm");
    const CommEvent* c = nullptr;
    for (const CommEvent& k : run.timeline.comms)
      if (us(k.start) == e.at("ts").get<double>() && run.timeline.device_of(k.from) == e.at("pid"))
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
  CHECK(comm_tracks == 2);
  // Messages that take no time get no slice (and no comm track).
  const json zero = trace_json(make_run("gpipe", 2, 2, "F=1,B=1,W=1,comm=0"));
  for (const json& e : events_of(zero, "X")) CHECK(e.at("tid") == 0);
}
