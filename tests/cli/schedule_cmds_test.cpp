// Tests of `ppsim validate` and `ppsim export` through run_cli.
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

} // namespace

TEST_CASE("validate accepts a good schedule file and summarises it", "[cli][schedule-io]") {
  const auto file = example_schedule("1f1b-p4-m8.csv");
  const auto r = run_ppsim({"validate", file});
  CHECK(r.code == 0);
  CHECK(r.out == file + ": valid: 64 tasks on 4 devices, 4 stages, 8 micro-batches\n");
  CHECK(r.err.empty());

  const auto fb = run_ppsim({"validate", example_schedule("v-shape-fb.csv")});
  CHECK(fb.code == 0);
  CHECK_THAT(fb.out, Catch::EndsWith("valid: 18 tasks on 2 devices, 4 stages, 2 micro-batches\n"));
}

TEST_CASE("validate reports every violation with the marked grid and exits 4",
          "[cli][schedule-io]") {
  const auto dup = run_ppsim({"validate", example_schedule("bad-duplicate.csv")});
  CHECK(dup.code == 4);
  CHECK(dup.out.empty());
  CHECK_THAT(dup.err, Catch::StartsWith("ppsim: error: validate: ") &&
                          Catch::Contains("bad-duplicate.csv") &&
                          Catch::Contains("duplicate of 0F1") &&
                          Catch::Contains("rank0: 0F0 0F1 0B0 [0F1] 0B1  <-- here"));

  const auto missing = run_ppsim({"validate", example_schedule("bad-missing-task.csv")});
  CHECK(missing.code == 4);
  // the file's own vocabulary: its B is a full backward, I and W together
  CHECK_THAT(missing.err, Catch::Contains("missing 1B1 (or 1I1 and 1W1) (device 1)"));

  const auto wb = run_ppsim({"validate", example_schedule("bad-w-before-b.csv")});
  CHECK(wb.code == 4);
  CHECK_THAT(wb.err, Catch::Contains("0W0: runs before its prerequisite 0I0") &&
                         Catch::Contains("<-- here"));

  const auto two = run_ppsim({"validate", example_schedule("bad-stage-two-ranks.csv")});
  CHECK(two.code == 4);
  CHECK_THAT(two.err, Catch::Contains("bad-stage-two-ranks.csv:2:1"));
}

TEST_CASE("validate finds a deadlocking order and names the cycle", "[cli][schedule-io]") {
  const auto r = run_ppsim({"validate", example_schedule("deadlock.csv")});
  CHECK(r.code == 4);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("deadlock") && Catch::Contains("cycle (each must finish") &&
                        Catch::Contains("deadlock.csv"));
}

TEST_CASE("validate rejects unreadable files with exit 3", "[cli][schedule-io]") {
  const auto cell = run_ppsim({"validate", example_schedule("bad-cell.csv")});
  CHECK(cell.code == 3);
  CHECK_THAT(cell.err, Catch::Contains("bad-cell.csv:2:2: cannot read '1X0'"));
  const auto key = run_ppsim({"validate", example_schedule("bad-unknown-key.json")});
  CHECK(key.code == 3);
  CHECK_THAT(key.err, Catch::Contains("/colour: unknown key"));
  CHECK(run_ppsim({"validate", example_schedule("bad-malformed.json")}).code == 3);
  CHECK(run_ppsim({"validate", example_schedule("no-such-file.csv")}).code == 3);
  CHECK(run_ppsim({"validate", "1f1b"}).code == 3);
  CHECK(run_ppsim({"validate"}).code == 2);
}

TEST_CASE("export prints PyTorch's CSV of a generated schedule", "[cli][schedule-io]") {
  const auto r = run_ppsim({"export", "-s", "1f1b", "-p", "4", "-m", "8", "--format", "pytorch-csv"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == slurp(example_schedule("1f1b-p4-m8.csv")));
}

TEST_CASE("export writes JSON and CSV files that load back to the same schedule",
          "[cli][schedule-io]") {
  TempDir dir("schedule-cmds-roundtrip");
  const auto json_path = dir / "zbh1.json";
  const auto r = run_ppsim({"export", "-s", "zb-h1", "-p", "4", "-m", "8", "--format", "json", "-o",
                      json_path});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(json_path));
  const Schedule expected = make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
  CHECK(load_schedule_file(json_path) == expected);

  // A file converts to the other format.
  const auto csv_path = dir / "zbh1.csv";
  CHECK(run_ppsim({"export", "-s", json_path, "--format", "pytorch-csv", "-o", csv_path}).code == 0);
  Schedule back = load_schedule_file(csv_path);
  CHECK(back.notation == Notation::pytorch);  // its messages speak the file's vocabulary
  back.name = expected.name;
  back.notation = expected.notation;
  CHECK(back == expected);
  CHECK(dir.entries() == 2);
}

TEST_CASE("export errors leave no file behind", "[cli][schedule-io]") {
  TempDir dir("schedule-cmds-errors");
  const auto path = dir / "out.csv";

  // DualPipe runs two model replicas (two routes): PyTorch's CSV cannot express it.
  const auto dual = run_ppsim({"export", "-s", "dualpipe", "-p", "4", "-m", "8", "--format",
                         "pytorch-csv", "-o", path});
  CHECK(dual.code == 3);
  CHECK_THAT(dual.err, Catch::Contains("cannot be written as a PyTorch CSV"));
  CHECK(dir.entries() == 0);

  const auto unknown = run_ppsim({"export", "-s", "nope", "-p", "4", "-m", "8", "--format", "json", "-o",
                            path});
  CHECK(unknown.code == 3);
  CHECK_THAT(unknown.err, Catch::Contains("unknown schedule 'nope'"));

  const auto invalid = run_ppsim({"export", "-s", example_schedule("bad-duplicate.csv"), "--format", "json", "-o",
                            path});
  CHECK(invalid.code == 4);

  CHECK(run_ppsim({"export", "-s", "1f1b", "-p", "4", "-m", "8", "--format", "yaml", "-o", path}).code ==
        2);
  CHECK(run_ppsim({"export", "-s", "1f1b", "-p", "4", "-m", "8", "-o", path}).code == 2);
  CHECK(run_ppsim({"export", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--format", "json"}).code == 3);
  CHECK(run_ppsim({"export", "-s", "1f1b", "--format", "json"}).code == 2);  // no -p: usage
  CHECK(dir.entries() == 0);

  // Without -o, an error prints nothing to stdout.
  const auto to_stdout =
      run_ppsim({"export", "-s", "dualpipe", "-p", "4", "-m", "8", "--format", "pytorch-csv"});
  CHECK(to_stdout.code == 3);
  CHECK(to_stdout.out.empty());
}

TEST_CASE("validate --json is one document, valid or not, with the exit code of the check",
          "[cli]") {
  const auto good = run_ppsim({"validate", "--json", example_schedule("1f1b-p4-m8.csv")});
  CHECK(good.code == 0);
  const auto g = nlohmann::json::parse(good.out);
  CHECK(g["schema"] == "ppsim.validate/1");
  CHECK(g["valid"] == true);
  CHECK(g["tasks"] == 64);
  const auto bad = run_ppsim({"validate", "--json", example_schedule("bad-missing-task.csv")});
  CHECK(bad.code == 4);
  const auto b = nlohmann::json::parse(bad.out);
  CHECK(b["valid"] == false);
  CHECK(b["violations_total"] == 1);
  CHECK_THAT(b["violations"][0]["what"].get<std::string>(), Catch::Contains("missing 1B1"));
}

TEST_CASE("a --json output is alone on stdout: --ascii --json is refused as a usage error", "[cli]") {
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--ascii", "--json"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--json excludes --ascii") || Catch::Contains("--ascii excludes --json"));
}
