// The seed's zero-bubble MLP on one stage: buffers, oneDNN GEMM call sites, F/B/W/BW.
#include "model/mlp.hpp"

#include "ppsim/sim/errors.hpp"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>

namespace ppsim::calibrate {

std::string_view dtype_name(DType dtype) { return dtype == DType::bf16 ? "bf16" : "f32"; }

DType parse_dtype(std::string_view text) {
  if (text == "f32") return DType::f32;
  if (text == "bf16") return DType::bf16;
  throw ConfigError(fmt::format("dtype: unknown value '{}' (valid: f32, bf16)", text));
}

std::size_t element_bytes(DType dtype) { return dtype == DType::bf16 ? 2 : 4; }

double flops_per_block(int dim, int tokens) {
  const double d = dim, t = tokens;
  return 16.0 * t * d * d;
}

double stage_buffer_bytes(const MlpShape& s, int slots) {
  const double d = s.dim, t = s.tokens, n = s.blocks;
  const double e = static_cast<double>(element_bytes(s.dtype));
  // x and g: n+1 of T×D each; h and dh: n of T×4D each; W1, W2 in the dtype; dW1, dW2 in f32.
  const double activations = (2.0 * (n + 1.0) * t * d + 2.0 * n * t * 4.0 * d) * e;
  const double weights = n * 2.0 * 4.0 * d * d * e;
  const double grads = n * 2.0 * 4.0 * d * d * 4.0;
  return slots * activations + weights + grads;
}

ScopedGemmThreads::ScopedGemmThreads(int threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(std::max(1, threads));
}

ScopedGemmThreads::~ScopedGemmThreads() { omp_set_num_threads(previous_); }

int gemm_threads() { return omp_get_max_threads(); }

std::string onednn_isa() {
  switch (dnnl_get_effective_cpu_isa()) {
  case dnnl_cpu_isa_all: return "all";
  case dnnl_cpu_isa_sse41: return "sse41";
  case dnnl_cpu_isa_avx: return "avx";
  case dnnl_cpu_isa_avx2: return "avx2";
  case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
  case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
  case dnnl_cpu_isa_avx512_core: return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
  }
  return fmt::format("isa 0x{:x}", static_cast<unsigned>(dnnl_get_effective_cpu_isa()));
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  std::string text = fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
  if (v->hash != nullptr && std::string_view(v->hash) != "N/A" && *v->hash != '\0')
    text += fmt::format(" ({})", v->hash);
  return text;
}

bool bf16_supported() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;
}

namespace {

std::size_t as_size(std::int64_t n) { return static_cast<std::size_t>(n); }

std::uint16_t to_bf16(float f) {
  auto bits = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

/// splitmix64: a small portable generator, so the same seed gives the same weights everywhere.
struct Rng {
  std::uint64_t state;
  double uniform() {  // in [-1, 1)
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
};

/// A 64-byte aligned buffer of `count` elements of `bytes_each` bytes.
class Buffer {
public:
  Buffer(std::size_t count, std::size_t bytes_each)
      : count_(count), bytes_each_(bytes_each),
        data_(static_cast<std::byte*>(::operator new(std::max<std::size_t>(1, count * bytes_each),
                                                     std::align_val_t{64}))) {
    std::memset(data_.get(), 0, count * bytes_each);
  }
  [[nodiscard]] void* data() const { return data_.get(); }
  [[nodiscard]] std::size_t count() const { return count_; }

  void store(std::span<const float> values) {
    const std::size_t n = std::min(values.size(), count_);
    if (bytes_each_ == 4) {
      std::memcpy(data_.get(), values.data(), n * 4);
    } else {
      auto* out = static_cast<std::uint16_t*>(data());
      for (std::size_t i = 0; i < n; ++i) out[i] = to_bf16(values[i]);
    }
  }
  [[nodiscard]] std::vector<float> load() const {
    std::vector<float> values(count_);
    if (bytes_each_ == 4) {
      std::memcpy(values.data(), data_.get(), count_ * 4);
    } else {
      const auto* in = static_cast<const std::uint16_t*>(data());
      for (std::size_t i = 0; i < count_; ++i) values[i] = from_bf16(in[i]);
    }
    return values;
  }

private:
  struct Free {
    void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  std::size_t count_;
  std::size_t bytes_each_;
  std::unique_ptr<std::byte, Free> data_;
};

/// One GEMM call site with its buffers bound: C = op(A)·op(B) + beta·C, row-major, where
/// op(X) = Xᵀ when its flag is 'T'. f32 calls dnnl_sgemm; bf16 runs a matmul primitive whose
/// transposes are strides and whose beta = 1 is a sum post-op.
class Gemm {
public:
  struct Args {
    char transa, transb;
    std::int64_t M, N, K;
    const void* A;
    std::int64_t lda;
    const void* B;
    std::int64_t ldb;
    float beta;
    void* C;
    std::int64_t ldc;
    bool c_is_f32;  // bf16 only: the destination is an f32 gradient
  };

  Gemm(const Args& a, DType dtype, const dnnl::engine* engine) : a_(a) {
    if (dtype == DType::f32) return;
    using dt = dnnl::memory::data_type;
    using dims = dnnl::memory::dims;
    const dims src_strides = a.transa == 'N' ? dims{a.lda, 1} : dims{1, a.lda};
    const dims wei_strides = a.transb == 'N' ? dims{a.ldb, 1} : dims{1, a.ldb};
    const dnnl::memory::desc src({a.M, a.K}, dt::bf16, src_strides);
    const dnnl::memory::desc wei({a.K, a.N}, dt::bf16, wei_strides);
    const dnnl::memory::desc dst({a.M, a.N}, a.c_is_f32 ? dt::f32 : dt::bf16, dims{a.ldc, 1});
    dnnl::primitive_attr attr;
    if (a.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(a.beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, *engine);
    } catch (const dnnl::error& e) {
      throw ConfigError(fmt::format("dtype bf16: oneDNN {} has no bf16 matmul on ISA {}: {}",
                                    onednn_version(), onednn_isa(), e.what()));
    }
    impl_ = pd.impl_info_str();
    if (impl_.rfind("ref", 0) == 0)
      throw ConfigError(fmt::format(
          "dtype bf16: oneDNN {} would run its slow reference kernel ({}) on ISA {}; bf16 needs "
          "AVX-512 BF16 or AMX",
          onednn_version(), impl_, onednn_isa()));
    prim_.emplace(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(src, *engine, const_cast<void*>(a.A))},
             {DNNL_ARG_WEIGHTS, dnnl::memory(wei, *engine, const_cast<void*>(a.B))},
             {DNNL_ARG_DST, dnnl::memory(dst, *engine, a.C)}};
  }

  void run(dnnl::stream* stream) const {
    if (!prim_) {
      const dnnl_status_t status =
          dnnl_sgemm(a_.transa, a_.transb, a_.M, a_.N, a_.K, 1.0f, static_cast<const float*>(a_.A),
                     a_.lda, static_cast<const float*>(a_.B), a_.ldb, a_.beta,
                     static_cast<float*>(a_.C), a_.ldc);
      if (status != dnnl_success)
        throw InfeasibleError(fmt::format("oneDNN dnnl_sgemm({}, {}, M={}, N={}, K={}) failed "
                                          "with status {}",
                                          a_.transa, a_.transb, a_.M, a_.N, a_.K,
                                          static_cast<int>(status)));
      return;
    }
    prim_->execute(*stream, args_);
    stream->wait();
  }

  [[nodiscard]] const std::string& implementation() const { return impl_; }

private:
  Args a_;
  std::optional<dnnl::matmul> prim_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string impl_{"dnnl_sgemm"};
};

} // namespace

/// One micro-batch's activations with the GEMM call sites bound to them and to the weights.
struct Activations {
  std::vector<Buffer> x, h, g, dh;
  // Per block, in the order they run: F {h, o}; from the last block, B {dh, dx}, W {dW2, dW1}
  // and BW {dh, dW2, dx, dW1}.
  std::vector<Gemm> f, b, w, bw;
};

struct StageMlp::Impl {
  MlpShape s;
  bool seed_bug{false};
  std::optional<dnnl::engine> engine;
  mutable std::optional<dnnl::stream> stream;
  std::vector<Buffer> w1, w2, dw1, dw2;  // shared by every slot
  std::vector<Activations> slots;

  void run(const std::vector<Gemm>& calls) const {
    dnnl::stream* st = stream ? &*stream : nullptr;
    for (const auto& c : calls) c.run(st);
  }

  void add_slot() {
    const std::int64_t D = s.dim, T = s.tokens, H = 4 * D;
    const int n = s.blocks;
    const std::size_t e = element_bytes(s.dtype);
    const dnnl::engine* eng = engine ? &*engine : nullptr;
    const DType dt = s.dtype;
    Activations& a = slots.emplace_back();
    for (int k = 0; k <= n; ++k) {
      a.x.emplace_back(as_size(T * D), e);
      a.g.emplace_back(as_size(T * D), e);
    }
    for (int k = 0; k < n; ++k) {
      a.h.emplace_back(as_size(T * H), e);
      a.dh.emplace_back(as_size(T * H), e);
    }
    for (int k = 0; k < n; ++k) {
      const auto K = static_cast<std::size_t>(k);
      void* x = a.x[K].data();
      void* o = a.x[K + 1].data();
      void* h = a.h[K].data();
      a.f.emplace_back(Gemm::Args{'N', 'T', T, H, D, x, D, w1[K].data(), D, 0.0f, h, H, false}, dt,
                       eng);
      a.f.emplace_back(Gemm::Args{'N', 'T', T, D, H, h, H, w2[K].data(), H, 0.0f, o, D, false}, dt,
                       eng);
    }
    // B and BW run from the last block to the first; W in any order (here the same, as autograd).
    for (int k = n - 1; k >= 0; --k) {
      const auto K = static_cast<std::size_t>(k);
      // NOTE: the seed's bug feeds the stage's output gradient to every block.
      void* go = seed_bug ? a.g[as_size(n)].data() : a.g[K + 1].data();
      void* dh = a.dh[K].data();
      void* dx = a.g[K].data();
      // dh = do W2;  dx = dh W1;  dW2 += doᵀ h;  dW1 += dhᵀ x
      const Gemm::Args b_dh{'N', 'N', T, H, D, go, D, w2[K].data(), H, 0.0f, dh, H, false};
      const Gemm::Args b_dx{'N', 'N', T, D, H, dh, H, w1[K].data(), D, 0.0f, dx, D, false};
      const Gemm::Args w_2{'T', 'N', D, H, T, go, D, a.h[K].data(), H, 1.0f, dw2[K].data(), H,
                           true};
      const Gemm::Args w_1{'T', 'N', H, D, T, dh, H, a.x[K].data(), D, 1.0f, dw1[K].data(), D,
                           true};
      a.w.emplace_back(w_2, dt, eng);
      a.w.emplace_back(w_1, dt, eng);
      a.b.emplace_back(b_dh, dt, eng);
      a.b.emplace_back(b_dx, dt, eng);
      a.bw.emplace_back(b_dh, dt, eng);
      a.bw.emplace_back(w_2, dt, eng);
      a.bw.emplace_back(b_dx, dt, eng);
      a.bw.emplace_back(w_1, dt, eng);
    }
  }

  const Activations& slot(int k) const {
    if (k < 0 || k >= static_cast<int>(slots.size()))
      throw ConfigError(fmt::format("StageMlp: slot {} out of range (slots={})", k, slots.size()));
    return slots[static_cast<std::size_t>(k)];
  }
  Activations& slot(int k) { return const_cast<Activations&>(std::as_const(*this).slot(k)); }
};

StageMlp::StageMlp(const MlpShape& shape, std::uint64_t seed, bool seed_bug, int slots)
    : impl_(std::make_unique<Impl>()) {
  if (shape.dim < 1 || shape.tokens < 1 || shape.blocks < 1 || slots < 1)
    throw ConfigError(fmt::format("StageMlp: dim, tokens, blocks and slots must be >= 1 (got "
                                  "dim={}, tokens={}, blocks={}, slots={})",
                                  shape.dim, shape.tokens, shape.blocks, slots));
  auto& m = *impl_;
  m.s = shape;
  m.seed_bug = seed_bug;
  const std::int64_t D = shape.dim, H = 4 * D;
  const int n = shape.blocks;
  const std::size_t e = element_bytes(shape.dtype);
  Rng rng{seed};
  for (int k = 0; k < n; ++k) {
    m.w1.emplace_back(as_size(H * D), e);
    m.w2.emplace_back(as_size(D * H), e);
    m.dw1.emplace_back(as_size(H * D), 4);
    m.dw2.emplace_back(as_size(D * H), 4);
    std::vector<float> w1(as_size(H * D)), w2(as_size(D * H));
    const double b1 = 1.0 / std::sqrt(static_cast<double>(D));
    const double b2 = 1.0 / std::sqrt(static_cast<double>(H));
    for (auto& v : w1) v = static_cast<float>(b1 * rng.uniform());
    for (auto& v : w2) v = static_cast<float>(b2 * rng.uniform());
    m.w1.back().store(w1);
    m.w2.back().store(w2);
  }
  if (shape.dtype == DType::bf16) {
    if (!bf16_supported())
      throw ConfigError(fmt::format("dtype bf16: oneDNN {} dispatches to ISA {} on this CPU, "
                                    "which has no bf16 (needs avx512_core_bf16 or "
                                    "avx512_core_amx); use dtype f32",
                                    onednn_version(), onednn_isa()));
    m.engine.emplace(dnnl::engine::kind::cpu, 0);
    m.stream.emplace(*m.engine);
  }
  m.slots.reserve(static_cast<std::size_t>(slots));
  for (int k = 0; k < slots; ++k) m.add_slot();
}

StageMlp::~StageMlp() = default;
StageMlp::StageMlp(StageMlp&&) noexcept = default;
StageMlp& StageMlp::operator=(StageMlp&&) noexcept = default;

const MlpShape& StageMlp::shape() const { return impl_->s; }

namespace {

void expect_size(std::span<const float> values, std::size_t want, std::string_view what) {
  if (values.size() != want)
    throw ConfigError(fmt::format("StageMlp::{}: expected {} values, got {}", what, want,
                                  values.size()));
}

std::size_t checked_block(int block, int blocks) {
  if (block < 0 || block >= blocks)
    throw ConfigError(fmt::format("StageMlp: block {} out of range (blocks={})", block, blocks));
  return static_cast<std::size_t>(block);
}

} // namespace

int StageMlp::slots() const { return static_cast<int>(impl_->slots.size()); }

void StageMlp::set_input(std::span<const float> x, int slot) {
  auto& a = impl_->slot(slot);
  expect_size(x, a.x[0].count(), "set_input");
  a.x[0].store(x);
}

void StageMlp::set_output_grad(std::span<const float> g, int slot) {
  auto& a = impl_->slot(slot);
  expect_size(g, a.g.back().count(), "set_output_grad");
  a.g.back().store(g);
}

void StageMlp::set_weights(int block, std::span<const float> w1, std::span<const float> w2) {
  const auto k = checked_block(block, impl_->s.blocks);
  expect_size(w1, impl_->w1[k].count(), "set_weights W1");
  expect_size(w2, impl_->w2[k].count(), "set_weights W2");
  impl_->w1[k].store(w1);
  impl_->w2[k].store(w2);
}

void StageMlp::zero_weight_grads() {
  for (auto* grads : {&impl_->dw1, &impl_->dw2})
    for (auto& g : *grads) std::memset(g.data(), 0, g.count() * 4);
}

void StageMlp::forward(int slot) { impl_->run(impl_->slot(slot).f); }
void StageMlp::backward_input(int slot) { impl_->run(impl_->slot(slot).b); }
void StageMlp::backward_weight(int slot) { impl_->run(impl_->slot(slot).w); }
void StageMlp::backward_fused(int slot) { impl_->run(impl_->slot(slot).bw); }

std::vector<float> StageMlp::input(int slot) const { return impl_->slot(slot).x.front().load(); }
std::vector<float> StageMlp::output(int slot) const { return impl_->slot(slot).x.back().load(); }
std::vector<float> StageMlp::input_grad(int slot) const {
  return impl_->slot(slot).g.front().load();
}
std::vector<float> StageMlp::weight1(int block) const {
  return impl_->w1[checked_block(block, impl_->s.blocks)].load();
}
std::vector<float> StageMlp::weight2(int block) const {
  return impl_->w2[checked_block(block, impl_->s.blocks)].load();
}
std::vector<float> StageMlp::weight1_grad(int block) const {
  return impl_->dw1[checked_block(block, impl_->s.blocks)].load();
}
std::vector<float> StageMlp::weight2_grad(int block) const {
  return impl_->dw2[checked_block(block, impl_->s.blocks)].load();
}

std::string StageMlp::gemm_implementation() const {
  if (impl_->s.dtype == DType::f32) return "dnnl_sgemm";
  std::vector<std::string> impls;
  for (const auto& c : impl_->slots.front().f) impls.push_back(c.implementation());
  for (const auto& c : impl_->slots.front().w) impls.push_back(c.implementation());
  std::sort(impls.begin(), impls.end());
  impls.erase(std::unique(impls.begin(), impls.end()), impls.end());
  return fmt::format("matmul {}", fmt::join(impls, ", "));
}

} // namespace ppsim::calibrate
