// Accelerators as users describe them (`--device NAME|FILE`, schema ppsim.device/1): peak
// dense throughput, the fraction of it each task kind achieves, memory, and the
// point-to-point link between pipeline stages.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// One point of a device's GEMM efficiency by size: one GEMM kernel of `gflop` GFLOP reaches
/// `fraction` of its kind's efficiency (efficiency_F, _B or _W).
struct GemmPoint {
  double gflop{0};
  double fraction{1};
};

struct DeviceSpec {
  std::string name;
  double peak_tflops{0};  ///< dense, at the model's dtype
  /// Achieved fraction of peak for the GEMMs of F, B (input gradients) and W (weight
  /// gradients); attention and the output layer use the same fractions.
  double efficiency_F{0.6};
  double efficiency_B{0.6};
  double efficiency_W{0.6};
  double memory_gib{0};          ///< per device; 0 = unknown (no OOM check)
  double link_latency_ms{0};     ///< per message between neighbouring stages
  double link_gbytes_per_s{0};   ///< GB/s of that link (1 GB = 1e9 bytes); 0 = no size term
  /// The device <-> host link of its copy stream (--offload): GB/s per direction (0 = unknown),
  /// the latency of one copy, and whether copies share the link with pipeline messages.
  double host_link_gbytes_per_s{0};
  double host_link_latency_ms{0};
  bool host_link_shared{false};
  double host_memory_gib{0};     ///< host memory per device for offloaded activations; 0 = unknown
  /// The work that is not a large GEMM (ppsim/run/kernel_time.hpp): HBM bandwidth (GB/s, data sheet;
  /// 0 = unknown: every time is FLOPs / (peak * efficiency) as before), the fraction of it an
  /// elementwise kernel achieves, the fixed cost of one kernel (launch and tail), and the bus
  /// bandwidth of the tensor-parallel group's collectives (NVLink; NCCL's busbw; 0 = unknown).
  double hbm_gbytes_per_s{0};
  double hbm_efficiency{0.8};
  double kernel_overhead_us{0};
  double tp_link_gbytes_per_s{0};
  /// Devices on one node, joined by the tp_link (NVLink); a group larger than a node (an
  /// expert-parallel all-to-all over --tp x --ep devices) crosses it on `link` (InfiniBand).
  int gpus_per_node{8};
  /// GEMM efficiency by size (small GEMMs reach less of the peak), ascending in gflop: a kernel
  /// between two points gets the fraction interpolated in log GFLOP, beyond the ends the end's.
  /// Applies where GEMMs are timed one by one (kernel_level). Empty: every GEMM at its kind's
  /// efficiency (the presets, fitted on published runs). `ppsim calibrate --device-file` and
  /// `--device cpu` measure it on this CPU.
  std::vector<GemmPoint> gemm_curve;
  std::string source;            ///< preset, file, or measurement, for reports
};

/// The presets: a100 (A100 SXM 80 GB), h100 (H100 SXM 80 GB), h200 (H200 141 GB), gh200 (GH200
/// Grace Hopper, 96 GB HBM3), each with the dense BF16 peak of its data sheet, efficiencies
/// typical of large-transformer GEMMs, an InfiniBand link between pipeline stages (pipeline
/// ranks usually span nodes) and its host link (PCIe, or GH200's NVLink-C2C) and host memory.
[[nodiscard]] std::span<const DeviceSpec> device_presets();

/// A preset by name, or a ppsim.device/1 file (a name ending in .json). ConfigError naming the
/// valid presets, or the file and JSON path of what is wrong.
[[nodiscard]] DeviceSpec load_device(const std::string& name_or_file);

/// Reads `{"schema": "ppsim.device/1", "name"?, "peak_tflops", "efficiency"?: {"F", "B", "W"},
/// "memory_gib"?, "link"?: {"latency_ms", "gbytes_per_s"}, "host_link"?: {"gbytes_per_s",
/// "latency_ms"?, "shared"?}, "host_memory_gib"?, "hbm"?: {"gbytes_per_s", "efficiency"?},
/// "kernel_overhead_us"?, "tp_link"?: {"gbytes_per_s"}, "gpus_per_node"?, "gemm_curve"?:
/// [{"gflop", "fraction"}, ...] (1..limits' kMaxGemmCurvePoints, gflop strictly ascending)}`.
[[nodiscard]] DeviceSpec parse_device_json(std::string_view text, std::string_view where);

/// The most points a gemm_curve holds.
inline constexpr std::size_t kMaxGemmCurvePoints = 64;

/// The fraction of its kind's efficiency one GEMM kernel of `flops` reaches on `device`: 1
/// without a curve, else the curve at log10(flops / 1e9), clamped to its ends.
[[nodiscard]] double gemm_fraction(const DeviceSpec& device, double flops);

/// `device` as a ppsim.device/1 document that parse_device_json reads back to the same
/// numbers (its name and source as "name" and "source").
[[nodiscard]] std::string device_json(const DeviceSpec& device);

} // namespace ppsim
