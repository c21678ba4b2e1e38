// `--device cpu`: the device a model would have on this CPU, measured with the model's own
// GEMM shapes through oneDNN, the same kernels `ppsim calibrate` times.
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"

namespace ppsim::calibrate {

/// Times the four GEMMs of one decoder layer (QKV, attention projection, MLP up and down) as F
/// (X W^T), B (dY W) and W (dY^T X) on one thread (one core per device, as calibrate), with the
/// token count capped so that each GEMM is at most about 1e10 FLOPs, and a 1024^3 GEMM as the
/// peak. The device's efficiencies are each kind's achieved rate over that peak; its link is a
/// memcpy of one activation; its memory this machine's.
[[nodiscard]] DeviceSpec measure_cpu_device(const ModelSpec& model);

} // namespace ppsim::calibrate
