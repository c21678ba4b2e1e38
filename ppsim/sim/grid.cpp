// The grid view of a schedule.
#include "ppsim/sim/grid.hpp"

#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

namespace {

} // namespace

std::string format_grid(const Schedule& s, const std::vector<Slot>& marks) {
  constexpr std::size_t kMaxCells = 24;
  std::string out;
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    const auto& row = s.order[d];
    std::vector<std::size_t> marked;
    for (const Slot& m : marks)
      if (ix(m.device) == d) marked.push_back(ix(m.index));
    std::size_t lo = 0, hi = row.size();
    if (row.size() > kMaxCells) {
      const std::size_t centre = marked.empty() ? 0 : marked.front();
      lo = centre > kMaxCells / 2 ? centre - kMaxCells / 2 : 0;
      hi = std::min(row.size(), lo + kMaxCells);
    }
    out += fmt::format("rank{}:", d);
    if (lo > 0) out += fmt::format(" ...({} more)", lo);
    for (std::size_t i = lo; i < hi; ++i) {
      const bool here = std::find(marked.begin(), marked.end(), i) != marked.end();
      const std::string cell = to_string(row[i], s.notation);
      out += here ? fmt::format(" [{}]", cell) : " " + cell;
    }
    if (hi < row.size()) out += fmt::format(" ...({} more)", row.size() - hi);
    if (!marked.empty()) out += "  <-- here";
    out += '\n';
  }
  return out;
}

} // namespace ppsim
