// Tests of the supervision of mpirun without MPI: stop signals reach the whole process group,
// escalate to SIGKILL, the ranks' roster lines are taken out of stderr, and Open MPI's failure
// reports name the lost ranks.
#include "exec/launcher.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace ppsim;
using namespace ppsim::exec;

namespace {

// Whether a process is gone (no entry, or a zombie), waiting up to a second for it.
bool gone_within_a_second(int pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return true;
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

} // namespace

TEST_CASE("a stop signal to the supervisor stops the child's whole process group",
          "[exec][robust]") {
  const auto sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
  CAPTURE(sig);
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  if (now.sa_handler == SIG_IGN) {
    // Ignored when this test started (nohup, a background job): the supervisor leaves it so.
    WARN("signal " << sig << " is ignored by this process; not tested");
    return;
  }
  std::ostringstream out, err;
  int grandchild = 0;
  SupervisorHooks hooks;
  hooks.take_line = [&](std::string_view line) {
    if (line.starts_with("pid ")) grandchild = std::stoi(std::string(line.substr(4)));
    // The child is running and its handlers are in place: signal ourselves as a user would.
    if (line == "ready") ::kill(::getpid(), sig);
    return true;
  };
  int stopped_with = 0;
  hooks.on_stop = [&](int s) {
    if (stopped_with == 0) stopped_with = s;
  };
  const auto start = std::chrono::steady_clock::now();
  const ProcessOutcome r = run_supervised(
      {"sh", "-c", "sleep 30 & echo pid $! >&2; echo ready >&2; wait"}, out, err, hooks);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(r.stopped_by == sig);
  CHECK(r.status == 128 + SIGTERM);  // the group got SIGTERM, whatever this process got
  CHECK(stopped_with == SIGTERM);
  CHECK(took < std::chrono::seconds(5));
  REQUIRE(grandchild > 0);
  CHECK(gone_within_a_second(grandchild));
  CHECK(err.str().empty());  // every line was taken
}

TEST_CASE("a child that ignores SIGTERM is killed after the grace time", "[exec][robust]") {
  std::ostringstream out, err;
  SupervisorHooks hooks;
  hooks.take_line = [](std::string_view line) {
    if (line == "ready") ::kill(::getpid(), SIGTERM);
    return line == "ready";
  };
  int last_stop = 0;
  hooks.on_stop = [&](int s) { last_stop = s; };
  const ProcessOutcome r = run_supervised(
      {"sh", "-c", "trap '' TERM; echo ready >&2; echo kept >&2; sleep 30"}, out, err, hooks, 200);
  CHECK(r.stopped_by == SIGTERM);
  CHECK(r.status == 128 + SIGKILL);
  CHECK(last_stop == SIGKILL);
  CHECK(err.str() == "kept\n");
}

TEST_CASE("without a signal the supervisor forwards output and returns the exit status",
          "[exec][robust]") {
  std::ostringstream out, err;
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  SupervisorHooks hooks;
  hooks.take_line = [](std::string_view line) { return line.starts_with("\x1f"); };
  const ProcessOutcome r = run_supervised(
      {"sh", "-c", "printf 'a\\n\\037hidden\\nb' >&2; echo out; exit 4"}, out, err, hooks);
  CHECK(r.stopped_by == 0);
  CHECK(r.status == 4);
  CHECK(out.str() == "out\n");
  CHECK(err.str() == "a\nb");  // a last line without its newline still comes through
  // A stop signal is this process's own again afterwards: the handler was restored.
  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  CHECK(now.sa_handler == before.sa_handler);
}

TEST_CASE("roster lines read back, other lines are not roster lines", "[exec][robust]") {
  const RankPlace p{3, "node-7", "10.0.0.7", 4242};
  const auto back = parse_roster_line(roster_line(p));
  REQUIRE(back);
  CHECK(back->rank == 3);
  CHECK(back->host == "node-7");
  CHECK(back->address == "10.0.0.7");
  CHECK(back->pid == 4242);
  const auto unknown = parse_roster_line(roster_line(RankPlace{0, "", "", 9}));
  REQUIRE(unknown);
  CHECK(unknown->address.empty());
  CHECK_FALSE(parse_roster_line("ppsim-rank 1 host=a address=b pid=2"));
  CHECK_FALSE(parse_roster_line("rank 0: waited 2.0 s for 1B2 from rank 1"));
  // Digits past any rank or pid (std::stoi threw out_of_range on them) are not a roster line.
  CHECK_FALSE(parse_roster_line("\x1fppsim-rank 99999999999999999999 host=a address=b pid=2"));
  CHECK_FALSE(parse_roster_line("\x1fppsim-rank 1 host=a address=b pid=99999999999999999999"));
  CHECK_FALSE(parse_roster_line("\x1fppsim-rank 5000 host=a address=b pid=2"));
}

TEST_CASE("Open MPI's failure reports name the lost ranks", "[exec][robust]") {
  const std::vector<RankPlace> roster{{0, "h1", "10.77.0.1", 100}, {1, "h2", "10.77.0.2", 200},
                                      {2, "h2", "10.77.0.2", 201}};
  // A host killed: a surviving rank reports its peer (as Open MPI 4.1 printed it here).
  const std::string peer = R"(An MPI communication peer process has unexpectedly disconnected.
  Local host: h1
  Local PID:  5165
  Peer host:  10.77.0.2
)";
  CHECK(lost_ranks(peer, roster) == std::vector<int>{1, 2});
  const std::string daemon = R"(ORTE has lost communication with a remote daemon.
  HNP daemon   : [[38893,0],0] on node vm
  Remote daemon: [[38893,0],1] on node h1
)";
  CHECK(lost_ranks(daemon, roster) == std::vector<int>{0});
  // A host killed while the survivor connects to it (Open MPI 4.1, the namespace test).
  const std::string connect = R"(WARNING: Open MPI failed to TCP connect to a peer MPI process.
  Local host: h1
  PID:        1599
  Message:    connect() to 10.77.0.2:1026 failed
  Error:      Operation now in progress (115)
)";
  CHECK(lost_ranks(connect, roster) == std::vector<int>{1, 2});
  const std::string exited =
      "mpirun noticed that process rank 2 with PID 201 on node h2 exited on signal 9 (Killed).";
  CHECK(lost_ranks(exited, roster) == std::vector<int>{2});  // one process, not its host
  CHECK(lost_ranks("mpirun noticed that process rank 0 with PID 0 on node x", {}) ==
        std::vector<int>{0});
  CHECK(lost_ranks("nothing to see", roster).empty());
}

TEST_CASE("A rank that died of a broken pipe was not lost: the ranks on the other hosts were",
          "[exec][robust]") {
  const std::vector<RankPlace> roster{{0, "h1", "10.77.0.1", 100}, {1, "h2", "10.77.0.2", 200},
                                      {2, "h2", "10.77.0.2", 201}};
  // Open MPI 4.1 over TCP, host h2 killed mid-run (the namespace test): mpirun names only the
  // survivor, which wrote to the dead connection.
  const std::string pipe = "mpirun noticed that process rank 0 with PID 100 on node 10.77.0.1 "
                           "exited on signal 13 (Broken pipe).";
  CHECK(broken_pipe_ranks(pipe) == std::vector<int>{0});
  CHECK(lost_ranks(pipe, roster) == std::vector<int>{1, 2});
  // With the peer named as well, that is what was lost; the broken pipe is not.
  const std::string both = pipe + "\n  Peer host:  10.77.0.2\n";
  CHECK(lost_ranks(both, roster) == std::vector<int>{1, 2});
  // Every rank on the survivor's host: nowhere else to look, so mpirun's word stands.
  CHECK(lost_ranks(pipe, {{0, "h1", "10.77.0.1", 100}, {1, "h1", "10.77.0.1", 101}}) ==
        std::vector<int>{0});
  // Other signals, and signal 130, are the rank's own end.
  const std::string killed =
      "mpirun noticed that process rank 2 with PID 201 on node h2 exited on signal 9 (Killed).";
  CHECK(broken_pipe_ranks(killed).empty());
  CHECK(broken_pipe_ranks("process rank 1 with PID 2 on node h exited on signal 130 (x).").empty());
}

TEST_CASE("A daemon that failed after every rank started is a host lost mid-run", "[exec][robust]") {
  const std::vector<RankPlace> roster{{1, "h2", "10.77.0.2", 200}, {0, "h1", "10.77.0.1", 100},
                                      {2, "h2", "10.77.0.2", 201}};
  // Open MPI 4.1 when a host's launch agent ends before its daemon's connection does.
  const std::string report = "ORTE was unable to reliably start one or more daemons.\n"
                             "This usually is caused by:\n";
  CHECK(lost_ranks(report, roster).empty());
  CHECK(daemon_lost_after_start(report, roster, 3));
  // A rank never started: the daemons really did not start.
  CHECK_FALSE(daemon_lost_after_start(report, {roster[0], roster[1]}, 3));
  CHECK_FALSE(daemon_lost_after_start(report, {roster[0], roster[0], roster[1]}, 3));
  CHECK_FALSE(daemon_lost_after_start("nothing to see", roster, 3));
  CHECK(hosts_of(roster) == "h1 (rank 0), h2 (ranks 1, 2)");
  CHECK(hosts_of({}).empty());
}
