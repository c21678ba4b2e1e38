// Work items shared among MPI ranks: `mpirun -np N ppsim sweep|plan ...` (the front runs
// ppsim-full under a launcher of several ranks, and that joins MPI here).
//
//   MpiPointExchange ex;                       // MPI_Init ... MPI_Finalize
//   run_sweep(grid, base, progress, {.threads = 0, .exchange = &ex});
#pragma once

#include "exec/executor.hpp"
#include "ppsim/run/shared_work.hpp"

#include <string>
#include <vector>

namespace ppsim::exec {

/// run/shared_work's PointExchange over MPI_COMM_WORLD: all_gather is MPI_Allgather of the
/// sizes, then MPI_Allgatherv of the bytes.
class MpiPointExchange final : public PointExchange {
public:
  [[nodiscard]] int rank() const override { return mpi_.rank(); }
  [[nodiscard]] int ranks() const override { return mpi_.size(); }
  /// std::runtime_error (on every rank) when the ranks' bytes together pass 2 GiB (MPI counts
  /// are int).
  [[nodiscard]] std::vector<std::string> all_gather(const std::string& mine) override;

private:
  MpiSession mpi_;
};

} // namespace ppsim::exec
