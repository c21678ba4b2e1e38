// Starting the ranks: the mpirun command line for one machine or a hostfile, and a supervised
// child process whose output is forwarded and which stops when this process is stopped.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim::exec {

struct LaunchOptions {
  int ranks{1};
  int threads{1};        ///< GEMM threads per rank (cores each rank is bound to)
  std::string hostfile;  ///< empty = every rank on this machine
  bool as_root{false};
  int cores{1};          ///< cores of this machine
};

/// `mpirun -np P [--allow-run-as-root] ...  EXE ARGS...`. On one machine: `--oversubscribe`,
/// the shared-memory transport (`--mca btl self,vader`), one core per GEMM thread of a rank
/// when the ranks fit on the cores, no binding otherwise. With a hostfile: `--hostfile FILE`
/// and Open MPI's choice of transport.
[[nodiscard]] std::vector<std::string> mpirun_command(const LaunchOptions& options,
                                                      const std::string& executable,
                                                      const std::vector<std::string>& args);

/// The hosts of an Open MPI hostfile (`node1 slots=4 max_slots=8`, `#` comments), checked before
/// mpirun starts: ConfigError `FILE:LINE: ...` for a line that is not a host name followed by
/// `key=N` options, for a host that does not resolve (getaddrinfo), and for a file without a
/// host. Nothing else of mpirun's own hostfile language is accepted.
[[nodiscard]] std::vector<std::string> check_hostfile(std::string_view text,
                                                      const std::string& where);

/// Where one rank runs, as it says itself at its start when the ppsim that launched mpirun asks
/// (`--roster`): its host name, the address of the launcher daemon it hangs off (Open MPI's
/// `orte_local_daemon_uri`, the name mpirun's reports use for hosts given by address), its pid.
struct RankPlace {
  int rank{-1};
  std::string host;
  std::string address;
  int pid{0};
};

/// The line a rank writes to stderr (it starts with \x1f, so no one mistakes it for a message).
[[nodiscard]] std::string roster_line(const RankPlace& place);
/// The place in a roster line, or nullopt for any other line.
[[nodiscard]] std::optional<RankPlace> parse_roster_line(std::string_view line);

/// The ranks an Open MPI failure report says were lost: `process rank N` (one process), and
/// every rank on a host named as the peer that disconnected (`Peer host: X`) or whose daemon
/// was lost (`Remote daemon: ... on node X`), by host name or address. A rank that died of a
/// broken pipe (signal 13) wrote to a peer that was gone: it is not counted lost, and when it is
/// all the report names, the lost are the ranks of the roster on the other hosts (where the
/// peer was). Sorted, unique.
[[nodiscard]] std::vector<int> lost_ranks(std::string_view report,
                                          const std::vector<RankPlace>& roster);
/// The ranks the report says died of a broken pipe (`process rank N ... exited on signal 13`).
/// Sorted, unique.
[[nodiscard]] std::vector<int> broken_pipe_ranks(std::string_view report);
/// Whether the report is Open MPI's "unable to reliably start one or more daemons" although
/// every rank had started (the roster holds all `ranks`): a host lost mid-run whose launch agent
/// (ssh) ended before its daemon's connection did. The report then names no host.
[[nodiscard]] bool daemon_lost_after_start(std::string_view report,
                                           const std::vector<RankPlace>& roster, int ranks);
/// Where the ranks ran, by host: "h1 (rank 0), h2 (ranks 1, 2)", in rank order of first use.
[[nodiscard]] std::string hosts_of(const std::vector<RankPlace>& roster);


/// How a supervised process ended.
struct ProcessOutcome {
  int status{0};      ///< its exit status, or 128 + the signal that ended it
  int stopped_by{0};  ///< SIGINT, SIGTERM or SIGHUP when this process got one and stopped it
};

/// Runs `argv` (argv[0] looked up in PATH) in a process group of its own, copying its stdout to
/// `out` and its stderr to `err` as they come. While it runs, SIGINT, SIGTERM and SIGHUP to this
/// process (unless they were ignored when it started, as under nohup) stop the whole group:
/// SIGTERM at once (mpirun then stops its ranks, also on other hosts), SIGKILL to what is left
/// after `grace_ms`; the child also gets SIGTERM if this process dies (PR_SET_PDEATHSIG).
/// Throws ConfigError when it cannot start.
/// What the caller adds to the supervision.
struct SupervisorHooks {
  /// Sees every complete line of stderr first; true keeps it from `err` (the roster lines).
  std::function<bool(std::string_view line)> take_line;
  /// Called with SIGTERM when a stop signal came (right after the group got it), and with
  /// SIGKILL at the escalation: to stop what is not in the group (the ranks).
  std::function<void(int signal)> on_stop;
};

[[nodiscard]] ProcessOutcome run_supervised(const std::vector<std::string>& argv,
                                            std::ostream& out, std::ostream& err,
                                            const SupervisorHooks& hooks = {},
                                            int grace_ms = 500);

/// Sends `signal` to every rank of the roster that runs on this host (by host name) and is
/// still a ppsim rank (its command line says so), so that no reused pid is hit.
void signal_local_ranks(const std::vector<RankPlace>& roster, int signal);

/// run_supervised(), returning only the status.
[[nodiscard]] int run_process(const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& err);

/// "SIGTERM" for SIGTERM, and so on.
[[nodiscard]] std::string signal_name(int signal);

/// The path of the running executable (/proc/self/exe).
[[nodiscard]] std::string self_executable();

/// The command line as one shell-quoted string, for messages.
[[nodiscard]] std::string quoted(const std::vector<std::string>& argv);

} // namespace ppsim::exec
