// The text grid of a schedule's device lists, PyTorch style, with marked cells for messages.
#pragma once

#include "ppsim/sim/schedule.hpp"

#include <string>
#include <vector>

namespace ppsim {

/// A task's place in a schedule.
struct Slot {
  int device{0};
  int index{0};  ///< position in the device's list
  friend bool operator==(const Slot&, const Slot&) = default;
};

/// PyTorch-style grid of the device lists (`rank0: 0F0 0F1 ...`); each marked slot is shown in
/// brackets with `<-- here` after its row. Long rows are cut around the marks.
[[nodiscard]] std::string format_grid(const Schedule& schedule, const std::vector<Slot>& marks);

} // namespace ppsim
