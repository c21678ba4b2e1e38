// The command-line conventions every command keeps: a missing required option is a usage error
// (exit 2), help texts say what an option takes, --json alone on stdout, rounded numbers in
// tables, and the progress line only on a terminal.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::string schedule_file() { return source_path("data/examples/schedules/1f1b-p4-m8.csv"); }

// The help text of one option: the line that names it and its continuation lines.
std::string option_help(const std::string& help, const std::string& option) {
  const auto at = help.find(option);
  if (at == std::string::npos) return {};
  auto end = help.find("\n  -", at);
  return help.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

} // namespace

TEST_CASE("a missing required option is a usage error on every command: exit 2 with CLI11's "
          "message",
          "[cli][conventions]") {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::string file = schedule_file();
  const Case cases[] = {
      {{"simulate", "-s", "1f1b"}, "--stages is required"},
      {{"simulate", "-s", "1f1b", "-p", "4"}, "--microbatches is required"},
      {{"simulate", "-p", "4", "-m", "8"}, "--schedule is required"},
      {{"compare", "-s", "1f1b,zb-h1", "-m", "8"}, "--stages is required"},
      {{"compare", "-s", file + ",zb-h1", "-p", "4"}, "--microbatches is required"},
      {{"export", "-s", "1f1b", "-p", "4", "--format", "json"}, "--microbatches is required"},
      {{"export", "-s", "1f1b", "-p", "4", "-m", "8"}, "--format is required"},
      {{"execute", "-s", "1f1b", "--dim", "8", "--tokens", "8", "--blocks", "1"},
       "--stages is required"},
      {{"execute", "-s", "1f1b", "-p", "2", "-m", "2", "--tokens", "8", "--blocks", "1"},
       "--dim is required"},
      {{"sweep", "-s", "1f1b", "-p", "4"}, "--microbatches is required"},
      {{"check"}, "--baseline is required"},
      {{"validate"}, "FILE is required"},
      {{"calibrate", "--tokens", "8", "--blocks", "1"}, "--dim is required"},
      {{"costs", "-p", "4"}, "--model is required"},
      {{"costs", "--model", "zb-1.5b"}, "--stages is required"},
      {{"plan", "-p", "4", "--global-batch", "32"}, "--model is required"},
      {{"plan", "-p", "4", "--model", "zb-1.5b"}, "--global-batch is required"},
      {{"completion"}, "SHELL is required"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_ppsim(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: " + c.args.front() + ": ") &&
                          Catch::Contains(c.says) &&
                          Catch::Contains("Run 'ppsim " + c.args.front() + " --help'"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("a schedule file carries its shape: -p and -m may be left out", "[cli][conventions]") {
  const auto r = run_ppsim({"simulate", "-s", schedule_file(), "--json"});
  CHECK(r.code == 0);
  CHECK(nlohmann::json::parse(r.out).at("devices") == 4);
  const auto ex = run_ppsim({"export", "-s", schedule_file(), "--format", "json"});
  CHECK(ex.code == 0);
}

TEST_CASE("-s says one schedule where a command takes one, and a list where it takes many",
          "[cli][conventions]") {
  for (const char* one : {"simulate", "export", "execute"}) {
    CAPTURE(one);
    const auto help = run_ppsim({one, "--help"});
    REQUIRE(help.code == 0);
    const std::string s = option_help(help.out, "--schedule");
    CHECK_THAT(s, Catch::Contains("a schedule name or a schedule file"));
    CHECK_THAT(s, !Catch::Contains("comma") && !Catch::Contains("name(s)"));
  }
  for (const char* many : {"compare", "sweep"}) {
    CAPTURE(many);
    const auto help = run_ppsim({many, "--help"});
    REQUIRE(help.code == 0);
    CHECK_THAT(option_help(help.out, "--schedule"), Catch::Contains("comma-separated"));
  }
  // No command's help hedges between one and many.
  const auto all = run_ppsim({"--help-all"});
  CHECK_THAT(all.out, !Catch::Contains("name(s)"));
}

TEST_CASE("every command with a result prints one document alone on stdout with --json",
          "[cli][conventions]") {
  TempDir dir("conventions");
  const std::string baseline = dir / "gate.json";
  REQUIRE(run_ppsim({"check", "--baseline", baseline, "--init"}).code == 0);
  const std::vector<std::vector<std::string>> commands = {
      {"list", "--json"},
      {"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--json"},
      {"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--json", "--critical-path"},
      {"compare", "-s", "1f1b,zb-h2", "-p", "4", "-m", "8", "--mem-limit", "1p", "--json"},
      {"sweep", "-s", "1f1b,zb-h2", "-p", "4", "-m", "4,8", "--json"},
      {"check", "--baseline", baseline, "--json"},
      {"validate", schedule_file(), "--json"},
      {"export", "-s", "zb-h1", "-p", "4", "-m", "8", "--format", "pytorch-csv", "-o",
       dir / "zb-h1.csv", "--json"},
      {"calibrate", "--dim", "16", "--tokens", "8", "--blocks", "1", "--repeats", "1", "--json"},
      {"models", "--json"},
      {"costs", "--model", "zb-1.5b", "-p", "4", "--json"},
      {"plan", "--model", "zb-1.5b", "-p", "4", "--global-batch", "16", "--schedules",
       "1f1b,zb-h1", "--json"},
  };
  for (const auto& args : commands) {
    CAPTURE(args);
    const auto r = run_ppsim(args);
    CHECK(r.code == 0);
    nlohmann::json doc;
    CHECK_NOTHROW(doc = nlohmann::json::parse(r.out));  // the whole of stdout is one document
    CHECK((doc.is_object() || doc.is_array()));
  }
  // compare's infeasible row is a warning on stderr, not text among the JSON.
  const auto cmp = run_ppsim(commands[3]);
  CHECK_THAT(cmp.err, Catch::StartsWith("ppsim: warning: compare: zb-h2"));
  // The critical path is inside the document.
  const auto cp = nlohmann::json::parse(run_ppsim(commands[2]).out);
  CHECK(cp.at("critical_path").at("length_ms").get<double>() ==
        cp.at("makespan_ms").get<double>());
  CHECK(cp.at("critical_path").at("tasks").size() > 0);
  // export's document names what it wrote.
  const auto ex = nlohmann::json::parse(run_ppsim(commands[7]).out);
  CHECK(ex.at("schema") == "ppsim.export/1");
  CHECK(ex.at("tasks") == 96);
}

TEST_CASE("a text output next to --json is refused as a usage error", "[cli][conventions]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--json", "--ascii"},
           {"sweep", "-s", "1f1b", "-p", "4", "-m", "8", "--json", "--csv"},
           // without -o, export's output is the schedule itself (--format json for JSON)
           {"export", "-s", "1f1b", "-p", "4", "-m", "8", "--format", "json", "--json"}}) {
    CAPTURE(args);
    const auto r = run_ppsim(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
  }
}

TEST_CASE("tables round for people and keep known answers whole", "[cli][conventions]") {
  // Known answers stay integers: 1F1B 66, ZB-H1 54, ZB-H2 48 at the toy case.
  const auto toy = run_ppsim({"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8", "--costs",
                        "F=2,B=2,W=2"});
  REQUIRE(toy.code == 0);
  CHECK_THAT(toy.out, Catch::Matches(R"((.|\n)*\n1f1b +4 +8 +1 +66 +66 +48 (.|\n)*)"));
  CHECK_THAT(toy.out, Catch::Contains(" 54 ") && Catch::Contains(" 48 "));
  // Thirds of a millisecond: rounded in the table, exact in JSON.
  const std::vector<std::string> odd = {"simulate", "-s", "zb-h1", "-p", "4", "-m", "8",
                                        "--costs", "F=1.3333333,B=1.4444444,W=0.7777777"};
  const auto text = run_ppsim(odd);
  REQUIRE(text.code == 0);
  // Every line but the one that echoes --costs as typed.
  const auto costs_line = text.out.find("costs         --costs");
  REQUIRE(costs_line != std::string::npos);
  const std::string shown =
      text.out.substr(0, costs_line) + text.out.substr(text.out.find('\n', costs_line));
  CHECK_THAT(shown, Catch::Contains("34.44 ms") && !Catch::Contains("3333") &&
                        !Catch::Contains("4444") && !Catch::Contains("e+"));
  auto json_args = odd;
  json_args.emplace_back("--json");
  const auto doc = nlohmann::json::parse(run_ppsim(json_args).out);
  CHECK_THAT(doc.dump(), Catch::Contains("3333"));
}

TEST_CASE("no progress line when stderr is not a terminal, and on a terminal only after a second",
          "[cli][conventions][progress]") {
  const std::vector<std::string> sweep = {"sweep", "-s", "1f1b,zb-h1", "-p", "2,4", "-m", "4,8"};
  std::ostringstream plain_out, plain_err;
  REQUIRE(run_cli(sweep, plain_out, plain_err) == 0);
  CHECK(plain_err.str().empty());

  // A terminal and a clock on which every reading is half a second later: the sweep "takes"
  // seconds, so the line shows; it is cleared before the table, and stdout is unchanged.
  double now = 0;
  const Terminal slow{.err_is_terminal = true, .clock = [&now] { return now += 0.5; }};
  std::ostringstream out, err;
  REQUIRE(run_cli(sweep, out, err, slow) == 0);
  CHECK(out.str() == plain_out.str());
  CHECK_THAT(err.str(), Catch::StartsWith("\rppsim: sweep: ") && Catch::Contains("/8 points, "));
  CHECK(err.str().find('\n') == std::string::npos);  // one line, redrawn, never scrolled
  CHECK(err.str().back() == '\r');                    // cleared at the end

  // Not a terminal with the same clock: nothing.
  std::ostringstream out2, err2;
  REQUIRE(run_cli(sweep, out2, err2, Terminal{.err_is_terminal = false, .clock = slow.clock}) == 0);
  CHECK(err2.str().empty());
}
