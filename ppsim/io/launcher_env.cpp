#include "ppsim/io/launcher_env.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"

#include <cstdlib>

namespace ppsim {

namespace {

// The first of `names` that is set, as a whole number in [lo, hi]; `fallback` when it is
// malformed; nullopt when none is set.
std::optional<int> env_integer(std::initializer_list<const char*> names, int lo, int hi,
                               int fallback) {
  for (const char* name : names)
    if (const char* value = std::getenv(name)) {
      try {
        return static_cast<int>(parse_integer(value, name, lo, hi));
      } catch (const ConfigError&) {
        return fallback;
      }
    }
  return std::nullopt;
}

} // namespace

std::optional<LauncherRank> launcher_rank() {
  constexpr int most = 1 << 24;
  const auto rank = env_integer({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, 0, most, 0);
  const auto size = env_integer({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1, most, 0);
  if (!rank && !size) return std::nullopt;
  const auto local = env_integer({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 1, most, 0);
  return LauncherRank{.rank = rank.value_or(0), .size = size.value_or(0),
                      .local_size = local.value_or(0)};
}

} // namespace ppsim
