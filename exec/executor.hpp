// Runs a schedule for real: one MPI rank per pipeline device, the seed's MLP on every stage.
#pragma once

#include "exec/model.hpp"
#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/exit_codes.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/timeline.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppsim::exec {

/// Largest allowed max |grad − reference| / max |reference| per stage (f32, sums in another
/// order than the reference's).
inline constexpr double kGradientTolerance = 1e-4;

/// A deliberate failure for tests: rank `rank` dies (SIGKILL) or hangs halfway through the first
/// iteration, or computes with the seed's unchained multi-block backward (wrong gradients).
struct Fault {
  enum class What : std::uint8_t { die, hang, seed_bug } what{What::die};
  int rank{0};
};

/// Parses `die:RANK`, `hang:RANK` or `seed-bug:RANK`; ConfigError otherwise.
[[nodiscard]] Fault parse_fault(const std::string& text);

struct ExecOptions {
  ModelShape shape;    ///< blocks per (virtual) stage
  int threads{1};      ///< GEMM threads per rank
  int iterations{3};   ///< the first is a warm-up when there are several
  double watchdog_s{60};  ///< longest wait for another rank before every rank is aborted
  std::uint64_t seed{1};
  std::optional<Fault> fault;
  /// Costs for the prediction; empty = calibrate on every rank at once before the run.
  std::optional<CostSpec> costs;
  /// Blocking: the seed's `isend` + `req.wait()`, each task waits for its sends to complete
  /// before the rank's next task (the wait is not part of the task's measured time).
  CommMode comm_mode{CommMode::Async};
};

/// The result of one stage's gradient check.
struct StageGradientCheck {
  int stage{0};
  int device{0};
  double rel_diff{0};
};

/// What rank 0 holds after a run (the other ranks get an empty result).
struct ExecResult {
  std::vector<Timeline> iterations;  ///< measured, ns since the iteration's barrier
  CostSpec costs;                    ///< the prediction's costs (per virtual stage when calibrated)
  double comm_ms{0};                 ///< half the median round trip of one activation, rank 0<->1
  /// The link measured by the same ping-pong at 4 bytes (latency: half the round trip) and at
  /// the activation's size (bandwidth: bytes / (half the round trip - latency)); sized.
  LinkModel link;
  double message_bytes{0};  ///< the bytes of every message (an activation or its gradient)
  CommMode comm_mode{CommMode::Async};
  std::vector<StageGradientCheck> gradients;
  double gradient_tolerance{kGradientTolerance};
  bool gradients_ok{false};
  std::vector<std::string> hosts;  ///< processor name of each rank
  int threads{1};
};

/// Whether this process was started by mpirun / an MPI launcher (Open MPI, PMIx or PMI).
[[nodiscard]] bool under_mpi_launcher();

/// Joins MPI (init with thread support FUNNELED) for its lifetime.
class MpiSession {
public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

private:
  int rank_{0};
  int size_{1};
};

/// Runs `schedule` (valid, one device per rank) on every rank of MPI_COMM_WORLD: measures the
/// comm latency, calibrates (unless options.costs), runs the iterations, gathers the timestamps
/// and checks the gradients on rank 0. A failure during the run prints the error with the rank
/// and aborts every rank with kExitExecutionFailed (ppsim/sim/exit_codes.hpp).
///
///   MpiSession mpi; ExecResult r = execute(schedule, options);  // collective
[[nodiscard]] ExecResult execute(const Schedule& schedule, const ExecOptions& options);

} // namespace ppsim::exec
