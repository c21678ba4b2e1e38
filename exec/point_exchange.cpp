#include "exec/point_exchange.hpp"

#include "sim/index.hpp"

#include <mpi.h>

#include <climits>
#include <fmt/format.h>
#include <stdexcept>

namespace ppsim::exec {

std::vector<std::string> MpiPointExchange::gather(const std::string& mine) {
  const int me = rank();
  const int n = ranks();
  // The sizes first (64-bit, so that a too-large share is told, not wrapped), then the bytes.
  const auto size = static_cast<long long>(mine.size());
  std::vector<long long> sizes(me == 0 ? ix(n) : 0);
  MPI_Gather(&size, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  std::vector<int> counts(ix(n)), displs(ix(n));
  long long total = 0;
  bool fits = true;
  for (int r = 0; me == 0 && r < n; ++r) {
    fits = fits && sizes[ix(r)] >= 0 && total + sizes[ix(r)] <= INT_MAX;
    if (!fits) break;
    displs[ix(r)] = static_cast<int>(total);
    counts[ix(r)] = static_cast<int>(sizes[ix(r)]);
    total += sizes[ix(r)];
  }
  // Every rank learns whether rank 0 can take it all, so that none is left in the Gatherv.
  int ok = fits ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (ok == 0) {
    if (me != 0) return {};
    throw std::runtime_error(
        "sweep: the ranks' outcomes pass 2 GiB together: run fewer points per sweep");
  }
  std::string all(me == 0 ? ix(total) : 0, '\0');
  MPI_Gatherv(mine.data(), static_cast<int>(size), MPI_CHAR, all.data(), counts.data(),
              displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; me == 0 && r < n; ++r)
    out.push_back(all.substr(ix(displs[ix(r)]), ix(counts[ix(r)])));
  return out;
}

} // namespace ppsim::exec
