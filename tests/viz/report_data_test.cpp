// Tests of the report's data (ppsim.report/1): every task, memory step and message of each run,
// exact times, the metrics of compare --json, safe text, determinism.
#include "ppsim/viz/report_data.hpp"

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/viz/metrics_json.hpp"
#include "ppsim/viz/svg.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace {

using namespace ppsim;
using namespace ppsim::test;
using json = nlohmann::json;

json data_of(const std::vector<Run>& runs) {
  return json::parse(report_data_json(std::span<const Run>(runs), "t"));
}

} // namespace

TEST_CASE("the report data holds every task with its exact start, end, kind, stage and micro-batch",
          "[viz][report-data]") {
  for (const char* name : {"1f1b", "zb-h1", "zb-v", "dualpipe-v", "interleaved-1f1b"}) {
    CAPTURE(name);
    const std::vector<Run> runs = {make_run(name, 4, 8, "F=1.5,B=2,W=1,comm=0.25")};
    const Run& r = runs[0];
    const json doc = data_of(runs);
    CHECK(doc["schema"] == "ppsim.report/1");
    const json& run = doc["runs"][0];
    CHECK(run["name"] == name);
    CHECK(run["tasks"] == r.timeline.runs.size());
    const Ticks unit = run["unit_ns"].get<Ticks>();
    REQUIRE(unit > 0);
    Ticks t0 = r.timeline.runs.front().start;
    for (const TaskRun& t : r.timeline.runs) t0 = std::min(t0, t.start);
    std::size_t fb = 0;
    for (int d = 0; d < r.timeline.devices; ++d) {
      const json& dev = run["dev"][static_cast<std::size_t>(d)];
      const auto tasks = r.timeline.device_runs(d);
      REQUIRE(dev["d"].size() == tasks.size());
      Ticks at = 0;  // in units, from t0
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        at += dev["g"][i].get<Ticks>();
        CHECK(at * unit == tasks[i].start - t0);
        at += dev["d"][i].get<Ticks>();
        CHECK(at * unit == tasks[i].end - t0);
        CHECK(dev["k"][i] == static_cast<int>(tasks[i].task.kind));
        CHECK(dev["s"][i] == tasks[i].task.stage);
        CHECK(dev["b"][i] == tasks[i].task.microbatch);
        if (tasks[i].task.kind == Kind::FB) ++fb;
      }
    }
    CHECK(run["fb"].size() == fb);
    // The messages, as the engine recorded them.
    REQUIRE(run["comm"]["f"].size() == r.timeline.comms.size());
    for (std::size_t e = 0; e < r.timeline.comms.size(); ++e) {
      const CommEvent& c = r.timeline.comms[e];
      CHECK(run["comm"]["f"][e] == c.from);
      CHECK(run["comm"]["t"][e] == c.to);
      const Ticks from_end = r.timeline.runs[static_cast<std::size_t>(c.from)].end;
      CHECK(run["comm"]["s"][e].get<Ticks>() * unit == c.send - from_end);
      CHECK(run["comm"]["a"][e].get<Ticks>() * unit == c.arrive - c.send);
    }
    // The memory steps of memory_series, and their peak is the metric's.
    const auto memory = memory_series(r.timeline, r.costs);
    for (std::size_t d = 0; d < memory.size(); ++d) {
      const json& m = run["mem"][d];
      REQUIRE(m["v"].size() == memory[d].size());
      Ticks at = 0;
      double peak = 0;
      for (std::size_t i = 0; i < memory[d].size(); ++i) {
        at += m["g"][i].get<Ticks>();
        CHECK(at * unit == memory[d][i].time - t0);
        CHECK(m["v"][i].get<double>() == Approx(memory[d][i].value).margin(1e-9));
        peak = std::max(peak, m["v"][i].get<double>());
      }
      CHECK(peak == Approx(r.metrics.per_device[d].peak_memory).margin(1e-9));
    }
  }
}

TEST_CASE("the report data's time unit is the largest that keeps every time exact",
          "[viz][report-data]") {
  const json a = data_of({make_run("1f1b", 4, 8, "F=2,B=2,W=2")});
  CHECK(a["runs"][0]["unit_ns"] == 2'000'000);  // every time a multiple of 2 ms
  CHECK(a["runs"][0]["makespan"] == 33);         // 66 ms
  const json b = data_of({make_run("1f1b", 4, 8, "F=2,B=2,W=2,comm=0.001")});
  CHECK(b["runs"][0]["unit_ns"] == 1'000);
}

TEST_CASE("the report data carries compare --json's metrics, the palette and the shape",
          "[viz][report-data]") {
  Comparison c;
  c.runs.push_back(make_run("zb-v", 4, 8, "F=2,B=2,W=2"));
  c.rows.push_back({"zb-v", 4, 8, 0, 0, "", -1});
  c.rows.push_back({"zb-h2", 4, 8, 0, -1, "zb-h2: device 0 peaks at 7 M_B", 7.0});
  const json doc = json::parse(report_data_json(c, "title"));
  CHECK(doc["metrics"] == json::parse(compare_json(c)));
  CHECK(doc["metrics"][1]["status"] == "infeasible");
  CHECK(doc["runs"].size() == 1);
  CHECK(doc["palette"]["F"] == json::array({task_fill(Kind::F, 0, 2), task_fill(Kind::F, 1, 2)}));
  const json& run = doc["runs"][0];
  CHECK(run["chunks"] == 2);
  CHECK(run["stage_chunk"] == json::array({0, 0, 0, 0, 1, 1, 1, 1}));
  CHECK(run["stage_device"] == json::array({0, 1, 2, 3, 3, 2, 1, 0}));
  CHECK(run["mem_limit"].is_null());
  CHECK(run["stage_costs"]["F"].size() == 8);
  CHECK(run["stage_costs"]["F"][0] == 1.0);  // 2 ms per device-stage over 2 chunks
}

TEST_CASE("a model's run carries where each stage's time goes, summing to its F + B + W",
          "[viz][report-data]") {
  RunRequest rq;
  rq.schedule = "zb-v";
  rq.devices = 4;
  rq.microbatches = 8;
  WorkloadSpec w;
  w.model = load_model("llama3-8b");
  w.model.recompute = Recompute::selective;  // B holds the recomputed attention core (R)
  w.device = load_device("h100");
  w.training.tp = 2;
  rq.workload = w;
  const std::vector<Run> runs = {run_request(rq)};
  const json run = data_of(runs)["runs"][0];
  REQUIRE(run.contains("time_parts"));
  const json& tp = run["time_parts"];
  REQUIRE(tp["gemm"].size() == 8);  // the V's 2 p stages
  for (std::size_t s = 0; s < 8; ++s) {
    CAPTURE(s);
    double sum = 0;
    for (const char* part : {"gemm", "attention", "memory", "tp_comm", "ep_comm", "overhead"})
      sum += tp[part][s].get<double>();
    const StageCosts& c = runs[0].costs.stage[s];
    // each of F, B, W is its parts' sum rounded to the nanosecond
    CHECK(sum == Approx(ticks_to_ms(c.F + c.B + c.W)).margin(3e-6));
    CHECK(tp["gemm"][s].get<double>() > 0);
    CHECK(tp["tp_comm"][s].get<double>() > 0);
    CHECK(tp["ep_comm"][s].get<double>() == 0);  // a dense model
    CHECK(tp["optimizer"][s].get<double>() > 0);
  }
  // costs that --costs overrides are no longer the model's parts; plain costs have none
  rq.cost_overrides = "F=1";
  CHECK(!data_of({run_request(rq)})["runs"][0].contains("time_parts"));
  CHECK(!data_of({make_run("1f1b", 4, 8, "F=1,B=1,W=1")})["runs"][0].contains("time_parts"));
}

TEST_CASE("the report data is byte-stable and safe inside a script element", "[viz][report-data]") {
  std::vector<Run> runs = {make_run("dualpipe", 4, 8, "F=1,B=2,W=1,comm=0.1")};
  runs[0].schedule.name = "</script><!--x";
  runs[0].parameters.emplace_back("<k>", "\"v\"");
  const std::string a = report_data_json(std::span<const Run>(runs), "<title>");
  CHECK(a == report_data_json(std::span<const Run>(runs), "<title>"));
  CHECK(a.find('<') == std::string::npos);
  const json doc = json::parse(a);
  CHECK(doc["runs"][0]["name"] == "</script><!--x");
  CHECK(doc["title"] == "<title>");
}

TEST_CASE("with an offload the report data holds each device's memory on the host, exactly",
          "[viz][report-data][offload]") {
  Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  OffloadPlan plan;
  plan.fraction.assign(4, 0.0);
  plan.fraction[0] = 1.0;
  plan.ns_per_unit = 300'000;  // 0.3 ms per M_B: not a multiple of the tasks' 1 ms
  const Run r = run_schedule(std::move(s), parse_costs("F=1,B=1,W=1"), {}, plan);
  const json a = data_of({r});
  const json& run = a["runs"][0];
  REQUIRE(run.contains("host"));
  REQUIRE(run["host"].size() == 4);
  const auto series = host_memory_series(r.timeline);
  const auto unit = run["unit_ns"].get<long long>();
  CHECK(unit == 100'000);  // the copies' ends keep the unit exact
  long long t = 0;
  for (std::size_t i = 0; i < series[0].size(); ++i) {
    t += run["host"][0]["g"][i].get<long long>();
    CHECK(t * unit == series[0][i].time);
    CHECK(run["host"][0]["v"][i].get<double>() == series[0][i].value);
  }
  CHECK(series[0].size() > 1);
  // no offload, no host series
  CHECK_FALSE(data_of({make_run("1f1b", 4, 8, "F=1,B=1,W=1")})["runs"][0].contains("host"));
}

TEST_CASE("a real comparison's report data matches the approved golden file, known answers first",
          "[viz][report-data][golden]") {
  // compare -s 1f1b,zb-h1,zb-h2 -p 2 -m 4 --costs F=2,B=2,W=2 --mem-limit 1p: zb-h2
  // peaks at (2p - 1) = 3 M_B, above 1p, and keeps its row with the least limit that works.
  std::vector<RunRequest> requests;
  for (const char* s : {"1f1b", "zb-h1", "zb-h2"}) {
    RunRequest rq;
    rq.schedule = s;
    rq.devices = 2;
    rq.microbatches = 4;
    rq.costs = parse_costs("F=2,B=2,W=2");
    rq.mem_limit = parse_mem_limit("1p");
    requests.push_back(rq);
  }
  const Comparison c = run_compare(requests);
  REQUIRE(c.rows.size() == 3);
  REQUIRE(c.runs.size() == 2);
  // DESIGN.md's closed forms over the ideal m(F + B + W) = 24: 1F1B (p - 1)(F + B + W),
  // ZB-H1 (p - 1)(F + B - W).
  CHECK(ticks_to_ms(c.runs[0].metrics.cost) == 30.0);
  CHECK(ticks_to_ms(c.runs[1].metrics.cost) == 26.0);
  CHECK(c.rows[2].least_mem_limit == 3.0);
  check_golden("data/golden/report_data_compare_p2_m4.json", report_data_json(c, "golden") + "\n");
}
