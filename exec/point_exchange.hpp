// A sweep's points shared among MPI ranks: `mpirun -np N ppsim sweep ...` (the front runs
// ppsim-full under a launcher of several ranks, and that joins MPI here).
//
//   MpiPointExchange ex;                       // MPI_Init ... MPI_Finalize
//   run_sweep(grid, base, progress, {.threads = 0, .exchange = &ex});
#pragma once

#include "exec/executor.hpp"
#include "run/sweep.hpp"

#include <string>
#include <vector>

namespace ppsim::exec {

/// run/sweep's PointExchange over MPI_COMM_WORLD: gather is MPI_Gather of the sizes, then
/// MPI_Gatherv of the bytes, on rank 0.
class MpiPointExchange final : public PointExchange {
public:
  [[nodiscard]] int rank() const override { return mpi_.rank(); }
  [[nodiscard]] int ranks() const override { return mpi_.size(); }
  /// std::runtime_error when the ranks' bytes together pass 2 GiB (MPI counts are int).
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) override;

private:
  MpiSession mpi_;
};

} // namespace ppsim::exec
