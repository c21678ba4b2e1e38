// Tests of `ppsim execute` that need no MPI: input checks before launch, the mpirun command line,
// and the measured-vs-predicted report.
#include "exec/executor.hpp"
#include "exec/launcher.hpp"
#include "exec/report.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/simulator.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::vector<std::string> execute_args(std::vector<std::string> extra) {
  std::vector<std::string> a{"execute", "--dim", "16", "--tokens", "4", "--blocks", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

} // namespace

TEST_CASE("execute rejects a broken schedule file before any rank starts, exit 4",
          "[cli][exec]") {
  const auto r = run_ppsim(execute_args({"-s", source_path("data/examples/schedules/bad-missing-task.csv")}));
  CHECK(r.code == 4);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: execute: ") && Catch::Contains("missing"));
  CHECK_THAT(r.err, !Catch::Contains("mpirun"));

  const auto dead = run_ppsim(execute_args({"-s", source_path("tests/exec/deadlock-p2-m2.csv")}));
  CHECK(dead.code == 4);
  CHECK_THAT(dead.err, Catch::Contains("ppsim: error: execute: "));
}

TEST_CASE("execute refuses bad values with the value named, exit 3, and usage errors exit 2",
          "[cli][exec]") {
  const auto chunks = run_ppsim(execute_args({"-s", "zb-v", "-p", "2", "-m", "4", "--blocks", "3"}));
  CHECK(chunks.code == 2);  // --blocks given twice is a usage error
  const auto odd = run_ppsim({"execute", "-s", "zb-v", "-p", "2", "-m", "4", "--dim", "16", "--tokens",
                        "4", "--blocks", "3"});
  CHECK(odd.code == 3);
  CHECK_THAT(odd.err, Catch::Contains("--blocks 3: zb-v gives each device 2 chunks"));
  const auto dim = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "4", "--dim", "0", "--tokens",
                        "4", "--blocks", "1"});
  CHECK(dim.code == 3);
  CHECK_THAT(dim.err, Catch::Contains("--dim 0: expected 1.."));
  const auto cal = run_ppsim(execute_args({"-s", "1f1b", "-p", "2", "-m", "4", "--calibrate", "dim=8"}));
  CHECK(cal.code == 3);
  CHECK_THAT(cal.err, Catch::Contains("execute calibrates on its own ranks"));
  const auto fault = run_ppsim(execute_args({"-s", "1f1b", "-p", "2", "-m", "4", "--fault", "boom:1"}));
  CHECK(fault.code == 3);
  CHECK_THAT(fault.err, Catch::Contains("--fault 'boom:1'"));
  const auto two = run_ppsim(execute_args({"-s", "1f1b,zb-h1", "-p", "2", "-m", "4"}));
  CHECK(two.code == 3);
  const auto huge = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "8", "--dim", "65536",
                         "--tokens", "65536", "--blocks", "8"});
  CHECK(huge.code == 3);
  CHECK_THAT(huge.err, Catch::Contains("GiB"));
  const auto missing = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "4"});
  CHECK(missing.code == 2);
  const auto shape = run_ppsim(execute_args({"-s", "zb-h2", "-p", "4", "-m", "3"}));
  CHECK(shape.code == 3);
  CHECK_THAT(shape.err, Catch::Contains("zb-h2"));
}

TEST_CASE("the faults for tests parse, others are refused", "[exec]") {
  CHECK(exec::parse_fault("die:1").what == exec::Fault::What::die);
  CHECK(exec::parse_fault("hang:3").rank == 3);
  CHECK(exec::parse_fault("seed-bug:0").what == exec::Fault::What::seed_bug);
  CHECK_THROWS_AS(exec::parse_fault("die"), ConfigError);
  CHECK_THROWS_AS(exec::parse_fault("die:x"), ConfigError);
  CHECK_THROWS_AS(exec::parse_fault("die:-1"), ConfigError);
  CHECK_THROWS_AS(exec::parse_fault("die:99999999999999999999"), ConfigError);
  CHECK_THROWS_AS(exec::parse_fault("die:1 "), ConfigError);
}

TEST_CASE("mpirun runs the ranks on one machine with shared memory, or on a hostfile's hosts",
          "[exec]") {
  exec::LaunchOptions o;
  o.ranks = 2;
  o.as_root = true;
  o.cores = 2;
  const auto local = exec::mpirun_command(o, "/x/ppsim", {"execute", "-s", "1f1b"});
  CHECK(exec::quoted(local) ==
        "mpirun -np 2 --allow-run-as-root --oversubscribe --mca btl self,vader --map-by "
        "slot:PE=1 --bind-to core /x/ppsim execute -s 1f1b");
  o.ranks = 4;
  o.as_root = false;
  const auto over = exec::mpirun_command(o, "ppsim", {});
  CHECK(exec::quoted(over) ==
        "mpirun -np 4 --oversubscribe --mca btl self,vader --bind-to none ppsim");
  o.hostfile = "my hosts";
  CHECK(exec::quoted(exec::mpirun_command(o, "ppsim", {"a'b"})) ==
        "mpirun -np 4 --hostfile 'my hosts' ppsim 'a'\\''b'");
}

TEST_CASE("run_process forwards the child's output and returns its exit status", "[exec]") {
  std::ostringstream out, err;
  CHECK(exec::run_process({"sh", "-c", "echo hello; echo oops >&2; exit 3"}, out, err) == 3);
  CHECK(out.str() == "hello\n");
  CHECK(err.str() == "oops\n");
  CHECK(exec::run_process({"sh", "-c", "kill -9 $$"}, out, err) == 128 + 9);
  CHECK_THROWS_AS(exec::run_process({"/nonexistent/mpirun"}, out, err), ConfigError);
}

TEST_CASE("the reported iteration is the median after the warm-up", "[exec]") {
  CHECK(exec::reported_iteration({5}) == 0);
  CHECK(exec::reported_iteration({50, 7}) == 1);
  CHECK(exec::reported_iteration({50, 3, 9, 4}) == 3);
  CHECK(exec::reported_iteration({50, 3, 9, 4, 8}) == 3);
  CHECK(exec::relative_error(105, 100) == Approx(0.05));
  CHECK(exec::relative_error(0, 0) == 0.0);
}

TEST_CASE("a measured run equal to the simulation has zero error in the report and the JSON",
          "[exec]") {
  const Schedule s = make_schedule("zb-h1", {.devices = 2, .microbatches = 4});
  exec::ExecResult result;
  result.costs = parse_costs("F=1,B=1,W=1");
  const Timeline tl = simulate(s, cost_model_for(result.costs, s));
  result.iterations = {tl, tl};
  result.hosts = {"a", "a"};
  result.gradients = {{0, 0, 0.0}, {1, 1, 2e-7}};
  result.gradients_ok = true;
  const exec::ExecReport r = exec::make_report(s, result, exec::ModelShape{16, 4, 2});
  CHECK(r.reported_iteration == 1);
  CHECK(r.measured.metrics.cost == r.predicted.metrics.cost);
  CHECK(r.measured.timeline.runs.size() == s.task_count());

  const auto j = nlohmann::json::parse(exec::execute_json(r));
  CHECK(j["schema"] == "ppsim.execute/1");
  CHECK(j["tasks"] == s.task_count());
  CHECK(j["measured"]["schema"] == "ppsim.metrics/1");
  CHECK(j["measured"]["cost_ms"] == j["predicted"]["cost_ms"]);
  CHECK(j["error"]["cost"] == 0.0);
  CHECK(j["error"]["bubble_rate_points"] == 0.0);
  CHECK(j["gradient_check"]["passed"] == true);
  CHECK(j["gradient_check"]["max_rel_diff"] == 2e-7);
  CHECK(j["iterations"]["cost_ms"].size() == 2);
  // The replay on the run's own durations (and the same comm, 0 here) is the run itself.
  CHECK(j["replayed"]["schema"] == "ppsim.metrics/1");
  CHECK(j["replayed"]["cost_ms"] == j["measured"]["cost_ms"]);
  CHECK(j["error"]["replay_cost"] == 0.0);

  std::ostringstream text;
  exec::write_execute_report(text, r);
  CHECK_THAT(text.str(), Catch::Contains("zb-h1 on 2 MPI ranks (a)") &&
                             Catch::Contains("cost_ms") && Catch::Contains("+0.0%") &&
                             Catch::Contains("gradient check: passed"));
}

TEST_CASE("the prediction of a blocking run uses the blocking mode and the measured link",
          "[exec][comm]") {
  // 1F1B p=2 m=2, F=B=W=1; the link measured: 0.2 ms latency, 1e6 bytes at 1.25 GB/s = 0.8 ms,
  // so every message takes 1 ms: cost 11 async, 12 blocking (tests/sim/comm_test.cpp).
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 2});
  exec::ExecResult result;
  result.costs = parse_costs("F=1,B=1,W=1");
  result.iterations = {simulate(s, cost_model_for(result.costs, s))};
  result.hosts = {"a", "a"};
  result.link.sized = true;
  result.link.latency = 200'000;
  result.link.bandwidth = 1.25;
  result.message_bytes = 1e6;
  const exec::ExecReport async = exec::make_report(s, result, exec::ModelShape{16, 4, 2});
  CHECK(async.predicted.metrics.cost == 11'000'000);
  result.comm_mode = CommMode::Blocking;
  const exec::ExecReport blocking = exec::make_report(s, result, exec::ModelShape{16, 4, 2});
  CHECK(blocking.predicted.metrics.cost == 12'000'000);
  CHECK(blocking.predicted.metrics.per_device[0].p2p_bytes_sent == 2e6);
  const auto j = nlohmann::json::parse(exec::execute_json(blocking));
  CHECK(j["comm_mode"] == "blocking");
  CHECK(j["link"]["latency_ms"] == 0.2);
  CHECK(j["link"]["bandwidth_gb_per_s"] == 1.25);
  // A sized --link given to execute replaces the measured one; its contention applies.
  CommOptions asked;
  asked.link.sized = true;
  asked.link.latency = 0;
  asked.link.contention = Contention::Duplex;
  const exec::ExecReport given = exec::make_report(s, result, exec::ModelShape{16, 4, 2}, asked);
  // Messages then take no time: m (F + BW) + (p - 1)(F + B + W) = 9.
  CHECK(given.predicted.metrics.cost == 9'000'000);
}
