// `--device cpu` and `ppsim calibrate --device-file`: this CPU as a device, measured through
// oneDNN, the same kernels `ppsim calibrate` times: its GEMM efficiency by size, the
// efficiency of F, B and W on a layer's own shapes, its memory bandwidth and a kernel's cost.
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"

#include <span>
#include <utility>
#include <vector>

namespace ppsim::calibrate {

/// One timed GEMM kernel: its FLOPs and its median time.
struct GemmTiming {
  double flops{0};
  double ms{0};
};

/// A device's GEMM curve from timings of GEMMs of ascending FLOPs: each point is a timing's
/// rate over the best rate among them, and that best rate (GFLOP/s) is the device's peak.
struct GemmCurveFit {
  std::vector<GemmPoint> curve;
  double best_gflops{0};
};
[[nodiscard]] GemmCurveFit fit_gemm_curve(std::span<const GemmTiming> grid);

/// The efficiency of a kind whose GEMMs took `timings` on `device` (its peak and gemm_curve):
/// the one value e with sum(flops / (peak * e * gemm_fraction(flops))) = sum(ms), so that the
/// model gives back the measured time of those GEMMs. May exceed 1 (see measure_cpu).
[[nodiscard]] double fitted_efficiency(std::span<const GemmTiming> timings, const DeviceSpec& device);

/// The layer a device is measured on: its GEMMs as (in, out) widths and its rows.
struct LayerGemms {
  std::vector<std::pair<long long, long long>> gemms;
  long long tokens{0};
};

/// Times square GEMMs of 32 to 2048 (the curve and the peak), then `layer`'s GEMMs as F
/// (X W^T), B (dY W) and W (dY^T X) with the rows capped so that each GEMM is at most about
/// 1e10 FLOPs, on `threads` oneDNN threads; F, B and W get the efficiencies that give back
/// those times under the curve (the peak raised where one would exceed 1). Memory bandwidth is
/// a memcpy's (bytes read and written), a kernel's fixed cost that of a 1 x 1 x 1 GEMM, the
/// link between two ranks one activation copied in memory, the memory this machine's.
[[nodiscard]] DeviceSpec measure_cpu(const LayerGemms& layer, int threads, std::string_view what);

/// measure_cpu on one decoder layer of `model` (QKV, attention projection, MLP up and down) at
/// its micro-batch's tokens, one thread (one core per device, as calibrate).
[[nodiscard]] DeviceSpec measure_cpu_device(const ModelSpec& model);

} // namespace ppsim::calibrate
