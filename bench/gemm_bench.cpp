// GEMM throughput: oneDNN's dnnl_sgemm vs a plain blocked reference at the calibration shapes,
// and the calibrated MLP's F, B and W kernels (single thread, fp32 unless named).
//
//   build/release/ppsim_bench --benchmark_filter='Sgemm|Reference|Stage'
#include "model/mlp.hpp"

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using ppsim::calibrate::DType;
using ppsim::calibrate::MlpShape;
using ppsim::calibrate::ScopedGemmThreads;
using ppsim::calibrate::StageMlp;

/// The six GEMMs of one block at dim D, tokens T (row-major C = op(A) op(B)), by index:
/// 0 F h = x W1ᵀ, 1 F o = h W2ᵀ, 2 B dh = do W2, 3 B dx = dh W1, 4 W dW2 = doᵀ h, 5 W dW1 = dhᵀ x.
struct Shape {
  char ta, tb;
  std::int64_t M, N, K;
};

Shape block_gemm(int which, std::int64_t D, std::int64_t T) {
  const std::int64_t H = 4 * D;
  switch (which) {
  case 0: return {'N', 'T', T, H, D};
  case 1: return {'N', 'T', T, D, H};
  case 2: return {'N', 'N', T, H, D};
  case 3: return {'N', 'N', T, D, H};
  case 4: return {'T', 'N', D, H, T};
  default: return {'T', 'N', H, D, T};
  }
}

struct Operands {
  std::vector<float> a, b, c;
  std::int64_t lda, ldb, ldc;
  explicit Operands(const Shape& s)
      : a(static_cast<std::size_t>(s.M * s.K)), b(static_cast<std::size_t>(s.K * s.N)),
        c(static_cast<std::size_t>(s.M * s.N)), lda(s.ta == 'N' ? s.K : s.M),
        ldb(s.tb == 'N' ? s.N : s.K), ldc(s.N) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 13) * 0.01f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 7) * 0.02f;
  }
};

/// A plain blocked GEMM: op(B) packed once into K×N rows, then i-p-j loops over cache blocks so
/// the innermost loop streams contiguous rows the compiler can vectorise.
void reference_gemm(const Shape& s, const Operands& o, float* c, std::vector<float>& packed) {
  const auto M = s.M, N = s.N, K = s.K;
  packed.resize(static_cast<std::size_t>(K * N));
  for (std::int64_t p = 0; p < K; ++p)
    for (std::int64_t j = 0; j < N; ++j)
      packed[static_cast<std::size_t>(p * N + j)] =
          o.b[static_cast<std::size_t>(s.tb == 'N' ? p * o.ldb + j : j * o.ldb + p)];
  std::fill(c, c + M * N, 0.0f);
  constexpr std::int64_t bi = 64, bp = 256, bj = 512;
  for (std::int64_t i0 = 0; i0 < M; i0 += bi)
    for (std::int64_t p0 = 0; p0 < K; p0 += bp)
      for (std::int64_t j0 = 0; j0 < N; j0 += bj) {
        const auto i1 = std::min(M, i0 + bi), p1 = std::min(K, p0 + bp), j1 = std::min(N, j0 + bj);
        for (std::int64_t i = i0; i < i1; ++i) {
          float* crow = c + i * N;
          for (std::int64_t p = p0; p < p1; ++p) {
            const float aip =
                o.a[static_cast<std::size_t>(s.ta == 'N' ? i * o.lda + p : p * o.lda + i)];
            const float* brow = packed.data() + p * N;
            for (std::int64_t j = j0; j < j1; ++j) crow[j] += aip * brow[j];
          }
        }
      }
}

// NOTE: rates are per CPU second of the benchmark thread (no UseRealTime): with one GEMM thread
// that is the core's throughput even when other processes share the machine.
void set_flops(benchmark::State& state, double flops) {
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

// Arguments: {gemm index 0..5, dim, tokens}.
void Sgemm(benchmark::State& state) {
  const ScopedGemmThreads one(1);
  const Shape s = block_gemm(static_cast<int>(state.range(0)), state.range(1), state.range(2));
  Operands o(s);
  for (auto _ : state) {
    dnnl_sgemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, o.a.data(), o.lda, o.b.data(), o.ldb, 0.0f,
               o.c.data(), o.ldc);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * static_cast<double>(s.M * s.N * s.K));
}

void Reference(benchmark::State& state) {
  const Shape s = block_gemm(static_cast<int>(state.range(0)), state.range(1), state.range(2));
  Operands o(s);
  std::vector<float> packed;
  for (auto _ : state) {
    reference_gemm(s, o, o.c.data(), packed);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * static_cast<double>(s.M * s.N * s.K));
}

void gemm_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"gemm", "dim", "tokens"});
  for (int g = 0; g < 6; ++g) b->Args({g, 512, 512});
  for (int g = 0; g < 6; ++g) b->Args({g, 1024, 1024});
}

void reference_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"gemm", "dim", "tokens"});
  for (int g = 0; g < 6; ++g) b->Args({g, 512, 512});
}

BENCHMARK(Sgemm)->Apply(gemm_args)->Unit(benchmark::kMillisecond);
BENCHMARK(Reference)->Apply(reference_args)->Unit(benchmark::kMillisecond);

// The calibrated kernels of one block; arguments {kind 0=F 1=B 2=W, dim, tokens, dtype 0=f32 1=bf16}.
void Stage(benchmark::State& state) {
  const ScopedGemmThreads one(1);
  const auto dtype = state.range(3) == 1 ? DType::bf16 : DType::f32;
  if (dtype == DType::bf16 && !ppsim::calibrate::bf16_supported()) {
    state.SkipWithError("bf16 is not supported by oneDNN on this CPU");
    return;
  }
  const int dim = static_cast<int>(state.range(1)), tokens = static_cast<int>(state.range(2));
  StageMlp mlp(MlpShape{dim, tokens, 1, dtype});
  mlp.set_input(std::vector<float>(static_cast<std::size_t>(dim) * static_cast<std::size_t>(tokens), 0.5f));
  mlp.set_output_grad(std::vector<float>(static_cast<std::size_t>(dim) * static_cast<std::size_t>(tokens), 1e-3f));
  mlp.forward();
  mlp.backward_input();
  for (auto _ : state) {
    switch (state.range(0)) {
    case 0: mlp.forward(); break;
    case 1: mlp.backward_input(); break;
    default: mlp.backward_weight(); break;
    }
  }
  state.SetLabel(mlp.gemm_implementation());
  set_flops(state, ppsim::calibrate::flops_per_block(dim, tokens));
}

void stage_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "dim", "tokens", "bf16"});
  for (int dtype = 0; dtype < 2; ++dtype)
    for (int kind = 0; kind < 3; ++kind) b->Args({kind, 512, 512, dtype});
  for (int kind = 0; kind < 3; ++kind) b->Args({kind, 1024, 1024, 0});
}

BENCHMARK(Stage)->Apply(stage_args)->Unit(benchmark::kMillisecond);

} // namespace
