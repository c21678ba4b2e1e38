// The model's GEMM shapes timed on this CPU with oneDNN's dnnl_sgemm.
#include "model/cpu_device.hpp"

#include "model/mlp.hpp"
#include "ppsim/sim/errors.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dnnl.h>
#include <fmt/format.h>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace ppsim::calibrate {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kFlopsPerGemm = 1e10;
constexpr int kRepeats = 3;

// The median time of `fn` (ms) after one warm-up run.
template <class Fn> double median_ms(Fn&& fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < kRepeats; ++i) {
    const auto start = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void sgemm(char ta, char tb, long long M, long long N, long long K, const float* A, long long lda,
           const float* B, long long ldb, float* C, long long ldc) {
  if (dnnl_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc) != dnnl_success)
    throw ConfigError(fmt::format("--device cpu: dnnl_sgemm(M={}, N={}, K={}) failed", M, N, K));
}

// The median times of one layer's GEMMs (in -> out widths) at `tokens` rows, as F, B and W.
struct KindTimings {
  std::vector<GemmTiming> F, B, W;
};

KindTimings layer_timings(const LayerGemms& layer) {
  KindTimings out;
  for (const auto& [k, n] : layer.gemms) {
    const long long T = std::clamp<long long>(
        static_cast<long long>(kFlopsPerGemm / (2.0 * static_cast<double>(k) * static_cast<double>(n))), 16,
        std::max<long long>(16, layer.tokens));
    std::vector<float> x(static_cast<std::size_t>(T * k), 0.5f), w(static_cast<std::size_t>(n * k), 0.25f),
        y(static_cast<std::size_t>(T * n), 0.0f), dx(static_cast<std::size_t>(T * k)),
        dw(static_cast<std::size_t>(n * k));
    const double flops = 2.0 * static_cast<double>(T) * static_cast<double>(k) * static_cast<double>(n);
    out.F.push_back({flops, median_ms([&] { sgemm('N', 'T', T, n, k, x.data(), k, w.data(), k, y.data(), n); })});
    out.B.push_back({flops, median_ms([&] { sgemm('N', 'N', T, k, n, y.data(), n, w.data(), k, dx.data(), k); })});
    out.W.push_back({flops, median_ms([&] { sgemm('T', 'N', n, k, T, y.data(), n, x.data(), k, dw.data(), k); })});
  }
  return out;
}

// Square GEMMs of 32 .. 2048: the curve's grid (at most 17 GFLOP each).
std::vector<GemmTiming> grid_timings() {
  std::vector<GemmTiming> out;
  for (const long long s : {32LL, 64LL, 128LL, 256LL, 512LL, 1024LL, 2048LL}) {
    std::vector<float> a(static_cast<std::size_t>(s * s), 0.5f), b(a.size(), 0.25f), c(a.size());
    const double flops = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
    out.push_back({flops, median_ms([&] { sgemm('N', 'N', s, s, s, a.data(), s, b.data(), s, c.data(), s); })});
  }
  return out;
}

// One 1 x 1 x 1 GEMM: what a kernel costs beside its work, in microseconds.
double kernel_overhead_us() {
  constexpr int kCalls = 1000;
  float a = 1, b = 1, c = 0;
  return median_ms([&] {
           for (int i = 0; i < kCalls; ++i) sgemm('N', 'N', 1, 1, 1, &a, 1, &b, 1, &c, 1);
         }) * 1e3 / kCalls;
}

double memory_gib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kib;
      break;
    }
    std::getline(in, key);
  }
  return kib / (1024.0 * 1024.0);
}

} // namespace

GemmCurveFit fit_gemm_curve(std::span<const GemmTiming> grid) {
  GemmCurveFit fit;
  const auto rate = [](const GemmTiming& t) { return t.ms > 0 ? t.flops / (t.ms * 1e-3) / 1e9 : 0.0; };
  for (const GemmTiming& t : grid) fit.best_gflops = std::max(fit.best_gflops, rate(t));
  if (fit.best_gflops <= 0) throw ConfigError("--device cpu: no GEMM of the grid took measurable time");
  for (const GemmTiming& t : grid)
    fit.curve.push_back({t.flops * 1e-9, std::clamp(rate(t) / fit.best_gflops, 1e-6, 1.0)});
  return fit;
}

double fitted_efficiency(std::span<const GemmTiming> timings, const DeviceSpec& d) {
  double at_peak_ms = 0, measured_ms = 0;
  for (const GemmTiming& t : timings) {
    at_peak_ms += t.flops / (d.peak_tflops * 1e12 * gemm_fraction(d, t.flops)) * 1e3;
    measured_ms += t.ms;
  }
  return measured_ms > 0 ? at_peak_ms / measured_ms : 1.0;
}

DeviceSpec measure_cpu(const LayerGemms& layer, int threads, std::string_view what) {
  const ScopedGemmThreads scoped(threads);
  const GemmCurveFit fit = fit_gemm_curve(grid_timings());
  const KindTimings k = layer_timings(layer);
  DeviceSpec d;
  d.name = "cpu";
  d.gemm_curve = fit.curve;
  d.peak_tflops = fit.best_gflops / 1000;
  double e[3] = {fitted_efficiency(k.F, d), fitted_efficiency(k.B, d), fitted_efficiency(k.W, d)};
  // NOTE: a layer's GEMM may run faster than the square one of its size (a better blocking):
  // the peak rises so that every efficiency is a fraction and peak x efficiency is unchanged.
  const double most = std::max({e[0], e[1], e[2]});
  if (most > 1) {
    d.peak_tflops *= most;
    for (double& v : e) v /= most;
  }
  d.efficiency_F = e[0];
  d.efficiency_B = e[1];
  d.efficiency_W = e[2];
  d.kernel_overhead_us = kernel_overhead_us();
  d.memory_gib = memory_gib();
  // The memory a kernel streams through, and the link between two ranks on this machine: one
  // activation copied in memory (at least 64 MiB, past the caches, at most 256 MiB).
  const std::size_t bytes = static_cast<std::size_t>(std::max<long long>(layer.tokens, 1)) *
                            static_cast<std::size_t>(layer.gemms.empty() ? 1 : layer.gemms.front().first) * 4;
  std::vector<char> a(std::clamp<std::size_t>(bytes, std::size_t{1} << 26, std::size_t{1} << 28), 1), b(a.size());
  const double copy_ms = median_ms([&] { std::memcpy(b.data(), a.data(), a.size()); });
  const double copy_gbytes_per_s = copy_ms > 0 ? static_cast<double>(a.size()) / (copy_ms * 1e-3) / 1e9 : 1;
  d.link_latency_ms = 0.002;
  d.link_gbytes_per_s = copy_gbytes_per_s;
  d.hbm_gbytes_per_s = 2 * copy_gbytes_per_s;  // a copy reads and writes each byte
  d.hbm_efficiency = 1;                        // measured: what a streaming kernel reaches
  d.source = fmt::format("measured on this CPU for {} (oneDNN {} dnnl_sgemm f32, {} thread{}, ISA {}): "
                         "peak {:.1f} GFLOP/s, F {:.0f} %, B {:.0f} %, W {:.0f} %, memory {:.1f} GB/s",
                         what, onednn_version(), threads, threads == 1 ? "" : "s", onednn_isa(),
                         d.peak_tflops * 1000, 100 * d.efficiency_F, 100 * d.efficiency_B,
                         100 * d.efficiency_W, d.hbm_gbytes_per_s);
  return d;
}

DeviceSpec measure_cpu_device(const ModelSpec& m) {
  check_model(m, m.source.empty() ? "model" : m.source);
  const long long h = m.hidden;
  const long long kv = h * m.kv_heads / m.heads;
  const long long up = (m.mlp == MlpKind::swiglu ? 2LL : 1LL) * m.ffn;
  return measure_cpu({{{h, h + 2 * kv}, {h, h}, {h, up}, {m.ffn, h}},
                      static_cast<long long>(m.seq) * m.microbatch_size},
                     1, m.name.empty() ? "the model" : m.name);
}

} // namespace ppsim::calibrate
