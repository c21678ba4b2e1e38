// Where an MPI launcher (mpirun, srun) started this process, read from the environment it set,
// before MPI is joined and without linking it: the static front decides from this alone
// whether a command runs in one process or shares its work among the ranks.
//
//   mpirun -np 4 ppsim sweep ...   // each process: launcher_rank() == {rank 0..3, size 4}
#pragma once

#include <optional>

namespace ppsim {

/// This process's rank and the number of ranks, as the launcher put them in the environment:
/// Open MPI's OMPI_COMM_WORLD_RANK / _SIZE, PMIx's PMIX_RANK, PMI's PMI_RANK / PMI_SIZE.
struct LauncherRank {
  int rank{0};
  int size{0};  ///< 0 = not given (PMIx names no size): MPI_Comm_size tells
  int local_size{0};  ///< ranks on this host (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS); 0 = not given
};

/// The launcher's rank, or nullopt when no launcher started this process. A value that is not
/// a whole number in range counts as not given (rank 0, size 0).
[[nodiscard]] std::optional<LauncherRank> launcher_rank();

/// Whether the launcher started several ranks (or did not say how many).
[[nodiscard]] inline bool launched_as_several_ranks() {
  const auto r = launcher_rank();
  return r && r->size != 1;
}

} // namespace ppsim
