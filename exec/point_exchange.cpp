#include "exec/point_exchange.hpp"

#include "ppsim/sim/index.hpp"

#include <mpi.h>

#include <climits>
#include <stdexcept>

namespace ppsim::exec {

std::vector<std::string> MpiPointExchange::all_gather(const std::string& mine) {
  const int n = ranks();
  // The sizes first (64-bit, so that a share too large is told, not wrapped), then the bytes.
  const auto size = static_cast<long long>(mine.size());
  std::vector<long long> sizes(ix(n));
  MPI_Allgather(&size, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
  std::vector<int> counts(ix(n)), displs(ix(n));
  long long total = 0;
  for (int r = 0; r < n; ++r) {
    // Every rank sees the same sizes, so every rank refuses together: none is left waiting.
    if (sizes[ix(r)] < 0 || total + sizes[ix(r)] > INT_MAX)
      throw std::runtime_error(
          "the ranks' results pass 2 GiB together: split the work into smaller commands");
    displs[ix(r)] = static_cast<int>(total);
    counts[ix(r)] = static_cast<int>(sizes[ix(r)]);
    total += sizes[ix(r)];
  }
  std::string all(ix(total), '\0');
  MPI_Allgatherv(mine.data(), static_cast<int>(size), MPI_CHAR, all.data(), counts.data(),
                 displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  out.reserve(ix(n));
  for (int r = 0; r < n; ++r) out.push_back(all.substr(ix(displs[ix(r)]), ix(counts[ix(r)])));
  return out;
}

} // namespace ppsim::exec
