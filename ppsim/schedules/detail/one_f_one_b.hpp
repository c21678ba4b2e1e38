// The 1F1B family builder shared by 1F1B, ZB-H1 and ZB-H2, and over sequence slices by
// seq1f1b and seq-zb-h1.
#pragma once

#include "ppsim/sim/schedule.hpp"

#include <string>

namespace ppsim {

/// One device-stage per device, micro-batches in order. Device d runs `warmup(d)` forwards
/// (clamped to m), then rounds of {backward; W of the oldest pending micro-batch once more
/// than `w_delay(d)` are pending; next forward}, then the remaining W. With `split` false the
/// backward is a fused BW and there is no W.
///
/// With `slices` k > 1 the same rounds run over the m k slices (a unit is mb * k + slice, the
/// schedule's `slices` is k): k - 1 more warm-up forwards, since a micro-batch's backward starts
/// at its last slice, and the backwards (and W) of each micro-batch from its last slice down
/// (backward_unit). This is Seq1F1B's order.
struct OneFOneBShape {
  int (*warmup)(int p, int d);
  int (*w_delay)(int p, int d);
  bool split;
};
[[nodiscard]] Schedule build_1f1b_family(std::string name, int devices, int microbatches,
                                         const OneFOneBShape& shape, int slices = 1);

/// The unit of a stage's i-th backward in a sliced order: micro-batch i / k, its slices from
/// the last (k = 1: i).
[[nodiscard]] constexpr int backward_unit(int i, int k) { return (i / k) * k + (k - 1 - i % k); }

} // namespace ppsim
