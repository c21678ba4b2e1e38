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

// Achieved GFLOP/s of F, B and W over one layer's GEMMs (in -> out widths) at `tokens` rows.
struct Rates {
  double F{0}, B{0}, W{0};
};

Rates layer_rates(const std::vector<std::pair<long long, long long>>& gemms, long long tokens) {
  double flops_total = 0, tf = 0, tb = 0, tw = 0;
  for (const auto& [k, n] : gemms) {
    const long long T = std::clamp<long long>(
        static_cast<long long>(kFlopsPerGemm / (2.0 * static_cast<double>(k) * static_cast<double>(n))), 16, tokens);
    std::vector<float> x(static_cast<std::size_t>(T * k), 0.5f), w(static_cast<std::size_t>(n * k), 0.25f),
        y(static_cast<std::size_t>(T * n), 0.0f), dx(static_cast<std::size_t>(T * k)),
        dw(static_cast<std::size_t>(n * k));
    const double flops = 2.0 * static_cast<double>(T) * static_cast<double>(k) * static_cast<double>(n);
    tf += median_ms([&] { sgemm('N', 'T', T, n, k, x.data(), k, w.data(), k, y.data(), n); });
    tb += median_ms([&] { sgemm('N', 'N', T, k, n, y.data(), n, w.data(), k, dx.data(), k); });
    tw += median_ms([&] { sgemm('T', 'N', n, k, T, y.data(), n, x.data(), k, dw.data(), k); });
    flops_total += flops;
  }
  const auto rate = [&](double ms) { return ms > 0 ? flops_total / (ms * 1e-3) / 1e9 : 0.0; };
  return Rates{rate(tf), rate(tb), rate(tw)};
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

DeviceSpec measure_cpu_device(const ModelSpec& m) {
  check_model(m, m.source.empty() ? "model" : m.source);
  const ScopedGemmThreads one(1);
  const long long h = m.hidden;
  const long long kv = h * m.kv_heads / m.heads;
  const long long up = (m.mlp == MlpKind::swiglu ? 2LL : 1LL) * m.ffn;
  const Rates r = layer_rates({{h, h + 2 * kv}, {h, h}, {h, up}, {m.ffn, h}},
                              static_cast<long long>(m.seq) * m.microbatch_size);
  const Rates peak = layer_rates({{1024, 1024}}, 1024);
  const double best = std::max({peak.F, r.F, r.B, r.W});
  DeviceSpec d;
  d.name = "cpu";
  d.peak_tflops = best / 1000;
  d.efficiency_F = std::min(1.0, r.F / best);
  d.efficiency_B = std::min(1.0, r.B / best);
  d.efficiency_W = std::min(1.0, r.W / best);
  d.memory_gib = memory_gib();
  // The link between two ranks on this machine: one activation copied in memory.
  const std::size_t bytes = static_cast<std::size_t>(m.seq) * static_cast<std::size_t>(m.microbatch_size) *
                            static_cast<std::size_t>(m.hidden) * static_cast<std::size_t>(m.dtype_bytes());
  std::vector<char> a(std::min<std::size_t>(bytes, std::size_t{1} << 28), 1), b(a.size());
  const double copy_ms = median_ms([&] { std::memcpy(b.data(), a.data(), a.size()); });
  d.link_latency_ms = 0.002;
  d.link_gbytes_per_s = copy_ms > 0 ? static_cast<double>(a.size()) / (copy_ms * 1e-3) / 1e9 : 0;
  d.source = fmt::format("measured on this CPU (oneDNN {} dnnl_sgemm f32, one thread, ISA {}): "
                         "F {:.1f}, B {:.1f}, W {:.1f} GFLOP/s, best {:.1f} GFLOP/s",
                         onednn_version(), onednn_isa(), r.F, r.B, r.W, best);
  return d;
}

} // namespace ppsim::calibrate
