// Tests of where a launcher started this process (ppsim/io/launcher_env.hpp), and of the command lines
// that share their work among its ranks (cli/cli.hpp's runs_on_ranks).
#include "cli/cli.hpp"
#include "ppsim/io/launcher_env.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace ppsim;

namespace {

// The launcher's variables as a test sets them, put back as they were when it ends.
class LauncherVars {
public:
  LauncherVars() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v != nullptr ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(name);
    }
  }
  ~LauncherVars() {
    for (const auto& [name, value] : saved_)
      if (value) ::setenv(name, value->c_str(), 1);
      else ::unsetenv(name);
  }
  LauncherVars(const LauncherVars&) = delete;
  LauncherVars& operator=(const LauncherVars&) = delete;
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK",
                                           "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

} // namespace

TEST_CASE("no launcher: one process, and sweep runs in the front", "[io][launcher]") {
  const LauncherVars vars;
  CHECK_FALSE(launcher_rank().has_value());
  CHECK_FALSE(launched_as_several_ranks());
  CHECK_FALSE(runs_on_ranks({"sweep", "-s", "1f1b", "-p", "2", "-m", "4"}));
  CHECK(runs_without_full_parts({"sweep", "-s", "1f1b", "-p", "2", "-m", "4"}));
}

TEST_CASE("Open MPI's rank, size and ranks per host are read", "[io][launcher]") {
  const LauncherVars vars;
  LauncherVars::set("OMPI_COMM_WORLD_RANK", "3");
  LauncherVars::set("OMPI_COMM_WORLD_SIZE", "8");
  LauncherVars::set("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
  const auto r = launcher_rank();
  REQUIRE(r.has_value());
  CHECK(r->rank == 3);
  CHECK(r->size == 8);
  CHECK(r->local_size == 4);
  CHECK(launched_as_several_ranks());
  // a sweep on several ranks goes to ppsim-full (MPI); other commands stay where they were
  CHECK(runs_on_ranks({"sweep", "-s", "1f1b", "-p", "2", "-m", "4"}));
  CHECK_FALSE(runs_without_full_parts({"sweep", "-s", "1f1b", "-p", "2", "-m", "4"}));
  CHECK_FALSE(runs_on_ranks({"simulate", "-s", "1f1b", "-p", "2", "-m", "4"}));
  CHECK(runs_without_full_parts({"simulate", "-s", "1f1b", "-p", "2", "-m", "4"}));
  CHECK_FALSE(runs_on_ranks({}));
}

TEST_CASE("mpirun -np 1 is one process", "[io][launcher]") {
  const LauncherVars vars;
  LauncherVars::set("OMPI_COMM_WORLD_RANK", "0");
  LauncherVars::set("OMPI_COMM_WORLD_SIZE", "1");
  REQUIRE(launcher_rank().has_value());
  CHECK_FALSE(launched_as_several_ranks());
  CHECK(runs_without_full_parts({"sweep", "-s", "1f1b", "-p", "2", "-m", "4"}));
}

TEST_CASE("PMIx and PMI launchers are read, a missing size left to MPI", "[io][launcher]") {
  {
    const LauncherVars vars;
    LauncherVars::set("PMIX_RANK", "2");
    const auto r = launcher_rank();
    REQUIRE(r.has_value());
    CHECK(r->rank == 2);
    CHECK(r->size == 0);  // PMIx names no size: MPI_Comm_size tells
    CHECK(launched_as_several_ranks());
  }
  {
    const LauncherVars vars;
    LauncherVars::set("PMI_RANK", "1");
    LauncherVars::set("PMI_SIZE", "2");
    LauncherVars::set("MPI_LOCALNRANKS", "2");
    const auto r = launcher_rank();
    REQUIRE(r.has_value());
    CHECK(r->rank == 1);
    CHECK(r->size == 2);
    CHECK(r->local_size == 2);
  }
}

TEST_CASE("a launcher's malformed values count as not given", "[io][launcher][robust]") {
  for (const char* bad : {"", "x", "-1", "1e3", "99999999999999999999", " 2", "2 "}) {
    CAPTURE(bad);
    const LauncherVars vars;
    LauncherVars::set("OMPI_COMM_WORLD_RANK", bad);
    LauncherVars::set("OMPI_COMM_WORLD_SIZE", bad);
    LauncherVars::set("OMPI_COMM_WORLD_LOCAL_SIZE", bad);
    const auto r = launcher_rank();
    REQUIRE(r.has_value());  // a launcher did start it
    CHECK(r->rank == 0);
    CHECK(r->size == 0);
    CHECK(r->local_size == 0);
  }
  const LauncherVars vars;
  LauncherVars::set("OMPI_COMM_WORLD_SIZE", "0");  // below one rank
  REQUIRE(launcher_rank().has_value());
  CHECK(launcher_rank()->size == 0);
}
