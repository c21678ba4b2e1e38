// The 1F1B family builder shared by 1F1B, ZB-H1 and ZB-H2.
#pragma once

#include "sim/schedule.hpp"

#include <string>

namespace ppsim {

/// One device-stage per device, micro-batches in order. Device d runs `warmup(d)` forwards
/// (clamped to m), then rounds of {backward; W of the oldest pending micro-batch once more
/// than `w_delay(d)` are pending; next forward}, then the remaining W. With `split` false the
/// backward is a fused BW and there is no W.
struct OneFOneBShape {
  int (*warmup)(int p, int d);
  int (*w_delay)(int p, int d);
  bool split;
};
[[nodiscard]] Schedule build_1f1b_family(std::string name, int devices, int microbatches,
                                         const OneFOneBShape& shape);

} // namespace ppsim
