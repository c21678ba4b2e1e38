// `ppsim execute`: run a schedule for real on Open MPI ranks and compare with the simulator.
//
//   ppsim execute -s zb-h1 -p 2 -m 8 --dim 512 --tokens 512 --blocks 2 --trace out/zb-h1.json
//   mpirun -np 4 --hostfile hosts ppsim execute -s 1f1b -p 4 -m 8 --dim 1024 --tokens 1024 --blocks 2
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "exec/executor.hpp"
#include "exec/launcher.hpp"
#include "exec/plan.hpp"
#include "exec/report.hpp"
#include "model/calibrate.hpp"
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/viz/chrome_trace.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <mutex>
#include <ostream>
#include <stop_token>
#include <thread>
#include <unistd.h>

namespace ppsim::cli {

namespace {

struct ExecuteOptions {
  RunOptions run;
  int dim{0};
  int tokens{0};
  int blocks{0};
  int threads{1};
  int iterations{3};
  double watchdog{60};
  std::string seed;  ///< --seed as typed; empty = 1
  std::string trace;
  std::string hostfile;
  std::string fault;
  bool json{false};
  bool roster{false};  ///< each rank says where it runs (the launching ppsim asks for it)
};

/// The arguments each rank gets: the same command, so every rank builds the same schedule.
std::vector<std::string> rank_arguments(const ExecuteOptions& o) {
  std::vector<std::string> a{"execute", "-s", o.run.schedules};
  const auto add = [&](std::string_view flag, const std::string& value) {
    if (!value.empty()) a.insert(a.end(), {std::string(flag), value});
  };
  if (o.run.devices) add("-p", fmt::format("{}", *o.run.devices));
  if (o.run.microbatches) add("-m", fmt::format("{}", *o.run.microbatches));
  if (o.run.chunks != 0) add("-v", fmt::format("{}", o.run.chunks));
  add("--costs", o.run.costs);
  add("--costs-file", o.run.costs_file);
  add("--mem-limit", o.run.mem_limit);
  add("--dim", fmt::format("{}", o.dim));
  add("--tokens", fmt::format("{}", o.tokens));
  add("--blocks", fmt::format("{}", o.blocks));
  add("--threads", fmt::format("{}", o.threads));
  add("--iterations", fmt::format("{}", o.iterations));
  add("--watchdog", fmt::format("{}", o.watchdog));
  add("--seed", o.seed);
  add("--trace", o.trace);
  add("--fault", o.fault);
  if (o.run.comm_mode != "async") add("--comm-mode", o.run.comm_mode);
  add("--link", o.run.link);
  if (o.json) a.emplace_back("--json");
  a.emplace_back("--roster");
  return a;
}

/// A rank must not outlive the launcher that started it (mpirun here, its daemon on another
/// host): when `ppsim execute` is stopped and stops mpirun, the ranks follow within 50 ms.
/// NOTE: Open MPI puts every rank in a process group of its own, so a signal to mpirun's group
/// does not reach them, and a rank blocked in MPI never notices that mpirun is gone.
class Lifeline {
public:
  Lifeline()
      : watcher_([launcher = ::getppid()](std::stop_token stop) {
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock(m);
          while (!stop.stop_requested()) {
            if (::getppid() != launcher) ::_exit(kExitExecutionFailed);
            cv.wait_for(lock, stop, std::chrono::milliseconds(50), [] { return false; });
          }
        }) {}

private:
  std::jthread watcher_;
};

/// This rank's place for the roster line: host name, the address of its Open MPI daemon, pid.
exec::RankPlace this_place(int rank) {
  exec::RankPlace p;
  p.rank = rank;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0) p.host = host.data();
  // `2017525760.1;tcp://10.77.0.1:45695`: the address mpirun's reports call this host by.
  if (const char* uri = std::getenv("OMPI_MCA_orte_local_daemon_uri")) {
    const std::string_view u(uri);
    const auto at = u.find("tcp://");
    if (at != std::string_view::npos) {
      const auto rest = u.substr(at + 6);
      p.address = std::string(rest.substr(0, rest.find_first_of(":;,")));
    }
  }
  p.pid = static_cast<int>(::getpid());
  return p;
}

void check_range(long long value, long long low, long long high, std::string_view option) {
  if (value < low || value > high)
    throw ConfigError(fmt::format("{} {}: expected {}..{}", option, value, low, high));
}

/// Runs on one rank under mpirun: execute, then rank 0 reports.
int run_rank(const ExecuteOptions& o, const Schedule& schedule, const exec::ModelShape& shape,
             const CostSpec& costs, bool costs_given, Io io) {
  const Lifeline lifeline;
  exec::MpiSession mpi;
  if (o.roster) {
    const std::string line = exec::roster_line(this_place(mpi.rank())) + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
  try {
    if (mpi.size() != schedule.devices)
      throw ConfigError(fmt::format("{} has {} devices but mpirun started {} ranks (use -np {})",
                                    schedule.name, schedule.devices, mpi.size(),
                                    schedule.devices));
    exec::ExecOptions eo;
    eo.shape = shape;
    eo.threads = o.threads;
    eo.iterations = o.iterations;
    eo.watchdog_s = o.watchdog;
    eo.seed = o.seed.empty() ? 1 : parse_seed(o.seed);
    if (!o.fault.empty()) eo.fault = exec::parse_fault(o.fault);
    if (costs_given) eo.costs = costs;
    const RunRequest asked = to_request(o.run, o.run.schedules, costs);
    eo.comm_mode = asked.comm.mode;
    const exec::ExecResult result = exec::execute(schedule, eo);
    if (mpi.rank() != 0) return kExitOk;
    const exec::ExecReport report = exec::make_report(schedule, result, shape, asked.comm);
    if (!o.trace.empty()) {
      write_file_atomically(o.trace, [&](std::ostream& f) { write_chrome_trace(f, report.measured); });
      write_file_atomically(path_for(o.trace, "predicted", true),
                            [&](std::ostream& f) { write_chrome_trace(f, report.predicted); });
    }
    if (o.json) io.out << exec::execute_json(report) << "\n";
    else exec::write_execute_report(io.out, report);
    io.out.flush();
    if (!result.gradients_ok)
      throw ExecutionError(fmt::format("the weight gradients of {} differ from the "
                                       "single-process reference by more than {:.0e} (see "
                                       "gradient_check)",
                                       schedule.name, result.gradient_tolerance));
    return kExitOk;
  } catch (const std::exception& e) {
    if (mpi.rank() != 0) return exit_code_of(e);  // rank 0 reports the same error
    throw;
  }
}

} // namespace

void add_execute_command(CLI::App& app, Io io, Action& action) {
  auto o = std::make_shared<ExecuteOptions>();
  auto* cmd = app.add_subcommand(
      "execute", "run a schedule for real on Open MPI ranks (one per device) with the MLP's "
                 "oneDNN GEMMs, check the gradients, and compare with the simulator");
  add_run_options(*cmd, o->run, Schedules::one);
  cmd->add_option("--dim", o->dim, "model width D (blocks are Linear(D, 4D), Linear(4D, D))")
      ->required();
  cmd->add_option("--tokens", o->tokens, "rows of a micro-batch")->required();
  cmd->add_option("--blocks", o->blocks,
                  "MLP blocks per device-stage (a schedule with v chunks gives each blocks/v)")
      ->required();
  cmd->add_option("--threads", o->threads, "GEMM threads per rank (default 1)");
  cmd->add_option("--iterations", o->iterations,
                  "training iterations; the first is a warm-up when there are several (default 3)");
  cmd->add_option("--trace", o->trace,
                  "write the measured timeline as a Chrome trace to FILE, and the prediction to "
                  "FILE-predicted.json");
  cmd->add_flag("--json", o->json, "print the ppsim.execute/1 document");
  cmd->add_option("--watchdog", o->watchdog,
                  "seconds a rank may wait for another before every rank is aborted (default 60)");
  cmd->add_option("--seed", o->seed, "seed of the weights and data (default 1)");
  cmd->add_option("--hostfile", o->hostfile, "run the ranks on the hosts of an Open MPI hostfile");
  cmd->add_option("--fault", o->fault, "test only: die:RANK, hang:RANK or seed-bug:RANK")->group("");
  cmd->add_flag("--roster", o->roster, "internal: each rank names its host on stderr")->group("");
  cmd->callback([io, &action, o, cmd] {
    require_shape(*cmd, o->run);
    action = [io, o] {
      check_range(o->dim, 1, 1 << 16, "--dim");
      check_range(o->tokens, 1, 1 << 20, "--tokens");
      check_range(o->blocks, 1, 1024, "--blocks");
      check_range(o->threads, 1, 1024, "--threads");
      check_range(o->iterations, 1, 1000, "--iterations");
      if (!(o->watchdog > 0 && o->watchdog <= 86400))
        throw ConfigError(fmt::format("--watchdog {}: expected seconds in (0, 86400]", o->watchdog));
      if (!o->run.calibrate.empty())
        throw ConfigError("--calibrate: execute calibrates on its own ranks; give --costs or "
                          "--costs-file to predict with other costs");
      if (o->run.schedules.find(',') != std::string::npos)
        throw ConfigError(fmt::format("--schedule '{}': execute runs one schedule",
                                      o->run.schedules));
      if (!o->seed.empty()) (void)parse_seed(o->seed);
      if (!o->fault.empty()) (void)exec::parse_fault(o->fault);
      // Outputs are checked now: a run of minutes must not end in "cannot write".
      if (!o->trace.empty()) {
        check_output_path(o->trace, "--trace");
        check_output_path(path_for(o->trace, "predicted", true), "--trace");
      }
      if (!o->hostfile.empty())
        (void)exec::check_hostfile(read_text_file(o->hostfile, "hostfile"), o->hostfile);
      const bool costs_given = !o->run.costs.empty() || !o->run.costs_file.empty();
      const CostSpec costs = resolve_costs(o->run, io);
      // Validation and the simulator's deadlock check, before any rank starts.
      const Run checked = run_request(to_request(o->run, o->run.schedules, costs));
      const Schedule& schedule = checked.schedule;
      const int v = schedule.chunks();
      if (o->blocks % v != 0)
        throw ConfigError(fmt::format("--blocks {}: {} gives each device {} chunks; use a multiple "
                                      "of {}",
                                      o->blocks, schedule.name, v, v));
      const exec::ModelShape shape{o->dim, o->tokens, o->blocks / v};
      // The most memory one rank allocates: activations of its slots, weights, the reference.
      const double worst = exec::worst_rank_bytes(
          exec::make_plan(schedule),
          calibrate::MlpShape{shape.dim, shape.tokens, shape.blocks, calibrate::DType::f32});
      if (worst > calibrate::kMaxCalibrationBytes)
        throw ConfigError(fmt::format("execute: a rank would allocate {:.1f} GiB (limit {:.0f} "
                                      "GiB); use a smaller --dim, --tokens or --blocks",
                                      worst / (1u << 30),
                                      calibrate::kMaxCalibrationBytes / (1u << 30)));

      if (exec::under_mpi_launcher())
        return run_rank(*o, schedule, shape, costs, costs_given, io);

      exec::LaunchOptions lo;
      lo.ranks = schedule.devices;
      lo.threads = o->threads;
      lo.hostfile = o->hostfile;
      lo.as_root = ::geteuid() == 0;
      lo.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      const auto command =
          exec::mpirun_command(lo, exec::self_executable(), rank_arguments(*o));
      // The ranks' roster lines are taken out of stderr; mpirun's report is kept (its tail) to
      // name the ranks a failure lost.
      std::vector<exec::RankPlace> roster;
      std::string report;
      const auto take_line = [&](std::string_view line) {
        if (auto place = exec::parse_roster_line(line)) {
          roster.push_back(*place);
          return true;
        }
        report.append(line).append("\n");
        if (report.size() > (1u << 16)) report.erase(0, report.size() - (1u << 15));
        return false;
      };
      // Open MPI gives each rank a process group of its own: a stop reaches the local ones
      // directly (mpirun then ends at once, cleaning up), the remote ones through mpirun.
      const auto on_stop = [&](int sig) { exec::signal_local_ranks(roster, sig); };
      const exec::ProcessOutcome ran =
          exec::run_supervised(command, io.out, io.err, {take_line, on_stop});
      if (ran.stopped_by != 0) {
        io.err << fmt::format("ppsim: error: execute: stopped by {}: mpirun and its ranks were "
                              "stopped\n",
                              exec::signal_name(ran.stopped_by));
        return 128 + ran.stopped_by;
      }
      const int rc = ran.status;
      if (rc == kExitOk || rc == kExitBadInput || rc == kExitInvalidSchedule ||
          rc == kExitInfeasible || rc == kExitExecutionFailed)
        return rc;  // the ranks reported why
      std::string lost;
      const std::vector<int> named = exec::lost_ranks(report, roster);
      for (const int r : named) {
        const auto it = std::find_if(roster.begin(), roster.end(),
                                     [r](const exec::RankPlace& p) { return p.rank == r; });
        lost += fmt::format("{}rank {}", lost.empty() ? "; lost: " : ", ", r);
        if (it != roster.end())
          lost += fmt::format(" (host {}{}, pid {})", it->host,
                              it->address.empty() || it->address == it->host
                                  ? std::string()
                                  : ", " + it->address,
                              it->pid);
      }
      const std::vector<int> pipe = exec::broken_pipe_ranks(report);
      if (!pipe.empty() && pipe != named) {
        std::string which;
        for (const int r : pipe) which += fmt::format("{}{}", which.empty() ? "" : ", ", r);
        lost += fmt::format(" (rank{} {} died of a broken pipe: the other end of a connection was "
                            "lost)",
                            pipe.size() > 1 ? "s" : "", which);
      }
      if (lost.empty() && exec::daemon_lost_after_start(report, roster, schedule.devices))
        lost = fmt::format("; lost: a host, after every rank had started (mpirun says only that "
                           "a daemon failed; the ranks ran on {})",
                           exec::hosts_of(roster));
      io.err << fmt::format("ppsim: error: execute: a rank failed: mpirun exited with status {}{}"
                            "{}; see mpirun's report above\n  command: {}\n",
                            rc, rc > 128 ? fmt::format(" (signal {})", rc - 128) : "", lost,
                            exec::quoted(command));
      return static_cast<int>(kExitExecutionFailed);
    };
  });
}

} // namespace ppsim::cli
