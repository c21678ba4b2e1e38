// Calibration: options, gradient check, timing of F/B/W/BW and the comm copy, the cost file.
#include "model/calibrate.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

namespace ppsim::calibrate {

namespace {

using Clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

constexpr int kMaxDim = 1 << 20;
constexpr int kMaxTokens = 1 << 24;
constexpr int kMaxBlocks = 4096;
constexpr int kMaxStages = limits::kMaxDevices;
constexpr int kMaxThreads = 1024;
constexpr int kMaxRepeats = 100000;
constexpr int kWarmups = 2;
constexpr int kMinAutoRepeats = 5;
constexpr int kMaxAutoRepeats = 51;
constexpr double kTargetMsPerMeasurement = 1000.0;  // all repeats of F+B+W+BW of one stage
constexpr int kMaxCheckBlocks = 4;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::size_t as_size(int n) { return static_cast<std::size_t>(n); }

double round_to(double value, double scale) { return std::round(value * scale) / scale; }
/// Times are kept at whole nanoseconds, so the file and the simulator's ticks agree exactly.
double round_ms(double ms) { return ticks_to_ms(ms_to_ticks(ms, "calibration time")); }

int int_in(std::string_view text, long long lo, long long hi, std::string_view where) {
  return static_cast<int>(parse_integer(text, where, lo, hi));
}

std::string blocks_text(const std::vector<int>& blocks) { return fmt::format("{}", fmt::join(blocks, ",")); }

} // namespace

CalibrationOptions parse_calibration_spec(std::string_view text) {
  const std::string where = fmt::format("--calibrate '{}'", text);
  CalibrationOptions o;
  std::set<std::string, std::less<>> seen;
  int stages = 0;
  for_each_key_value(text, where, [&](std::string_view key, std::string_view value) {
    const std::string kw = fmt::format("{}: {}", where, key);
    if (!seen.emplace(key).second)
      throw ConfigError(fmt::format("{}: '{}' given twice", where, key));
    if (key == "dim") o.dim = int_in(value, 1, kMaxDim, kw);
    else if (key == "tokens") o.tokens = int_in(value, 1, kMaxTokens, kw);
    else if (key == "stages") stages = int_in(value, 1, kMaxStages, kw);
    else if (key == "threads") o.threads = int_in(value, 1, kMaxThreads, kw);
    else if (key == "repeats") o.repeats = int_in(value, 0, kMaxRepeats, kw);
    else if (key == "dtype") o.dtype = std::string(dtype_name(parse_dtype(value)));
    else if (key == "comm") {
      o.comm_ms = parse_non_negative(value, kw);
    } else if (key == "blocks") {
      for_each_field(value, ':', [&](std::string_view field) {
        o.blocks_per_stage.push_back(int_in(field, 1, kMaxBlocks, kw));
        return true;
      });
    } else {
      throw ConfigError(fmt::format(
          "{}: unknown key '{}' (valid: dim, tokens, blocks, stages, threads, repeats, dtype, comm)",
          where, key));
    }
  });
  for (const char* required : {"dim", "tokens", "blocks"})
    if (!seen.contains(std::string_view(required)))
      throw ConfigError(fmt::format("{}: missing {}=..", where, required));
  if (stages > 0) {
    if (o.blocks_per_stage.size() == 1) {
      o.blocks_per_stage.assign(as_size(stages), o.blocks_per_stage.front());
    } else if (o.blocks_per_stage.size() != as_size(stages)) {
      throw ConfigError(fmt::format("{}: blocks={} lists {} stages but stages={}", where,
                                    fmt::join(o.blocks_per_stage, ":"), o.blocks_per_stage.size(),
                                    stages));
    }
  }
  validate_options(o);
  return o;
}

double calibration_bytes(const CalibrationOptions& o) {
  int most = 0;
  for (int b : o.blocks_per_stage) most = std::max(most, b);
  const DType dtype = o.dtype == "bf16" ? DType::bf16 : DType::f32;
  return stage_buffer_bytes(MlpShape{o.dim, o.tokens, most, dtype}, std::max(1, o.slots));
}

void validate_options(const CalibrationOptions& o) {
  const auto range = [](long long v, long long lo, long long hi, std::string_view name) {
    if (v < lo || v > hi)
      throw ConfigError(fmt::format("{}={} is out of range (expected {}..{})", name, v,
                                    lo, hi));
  };
  range(o.dim, 1, kMaxDim, "dim");
  range(o.tokens, 1, kMaxTokens, "tokens");
  if (o.blocks_per_stage.empty()) throw ConfigError("blocks: give at least one stage");
  range(static_cast<long long>(o.blocks_per_stage.size()), 1, kMaxStages, "stages");
  for (std::size_t s = 0; s < o.blocks_per_stage.size(); ++s)
    range(o.blocks_per_stage[s], 1, kMaxBlocks, fmt::format("blocks (stage {})", s));
  range(o.threads, 1, kMaxThreads, "threads");
  range(o.repeats, 0, kMaxRepeats, "repeats");
  range(o.slots, 1, 1024, "slots");
  (void)parse_dtype(o.dtype);
  if (o.comm_ms && (!std::isfinite(*o.comm_ms) || *o.comm_ms < 0 || *o.comm_ms > 1e12))
    throw ConfigError(fmt::format("comm={} ms: expected a finite time >= 0", *o.comm_ms));
  const double bytes = calibration_bytes(o);
  if (bytes > kMaxCalibrationBytes)
    throw ConfigError(fmt::format(
        "dim={}, tokens={}, blocks={} would allocate {:.2f} GiB of tensors, more than "
        "the {:.0f} GiB limit; use a smaller dim, tokens or blocks",
        o.dim, o.tokens, *std::max_element(o.blocks_per_stage.begin(), o.blocks_per_stage.end()),
        bytes / kGiB, kMaxCalibrationBytes / kGiB));
}

// ----------------------------------------------------------------------------------------------
// Gradient check

namespace {

/// A dense row-major double matrix for the reference.
struct Mat {
  std::size_t rows{0}, cols{0};
  std::vector<double> v;
  Mat(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, 0.0) {}
  Mat(std::size_t r, std::size_t c, const std::vector<float>& f) : rows(r), cols(c), v(f.begin(), f.end()) {}
  double& at(std::size_t i, std::size_t j) { return v[i * cols + j]; }
  [[nodiscard]] double at(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
};

/// C = op(A) op(B) with op = transpose when the flag is set.
Mat matmul(const Mat& a, bool ta, const Mat& b, bool tb) {
  const std::size_t m = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  const std::size_t n = tb ? b.rows : b.cols;
  Mat c(m, n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) {
      const double aip = ta ? a.at(p, i) : a.at(i, p);
      if (aip == 0.0) continue;
      for (std::size_t j = 0; j < n; ++j) c.at(i, j) += aip * (tb ? b.at(j, p) : b.at(p, j));
    }
  return c;
}

struct Reference {
  std::vector<Mat> w1, w2;  // per block
  Mat x, label;

  /// Forward in double; fills xs (n+1) and hs (n) when given; returns the MSE loss.
  double forward(std::vector<Mat>* xs, std::vector<Mat>* hs) const {
    Mat cur = x;
    for (std::size_t k = 0; k < w1.size(); ++k) {
      Mat h = matmul(cur, false, w1[k], true);
      Mat o = matmul(h, false, w2[k], true);
      if (xs) xs->push_back(cur);
      if (hs) hs->push_back(std::move(h));
      cur = std::move(o);
    }
    double loss = 0;
    for (std::size_t i = 0; i < cur.v.size(); ++i) {
      const double d = cur.v[i] - label.v[i];
      loss += d * d;
    }
    if (xs) xs->push_back(cur);
    return loss / static_cast<double>(cur.v.size());
  }
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

/// max |got − want| / max |want|: a norm-wise relative error that tiny entries cannot inflate.
double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
  const double scale = max_abs(want);
  return scale > 0 ? diff / scale : diff;
}

} // namespace

GradientCheck check_gradients(int dim, int tokens, int blocks, const GradientCheckOptions& opt) {
  if (dim < 1 || tokens < 1 || blocks < 1 || dim > 1024 || tokens > 4096 || blocks > 64)
    throw ConfigError(fmt::format("check_gradients: dim={}, tokens={}, blocks={} out of range "
                                  "(1..1024, 1..4096, 1..64)",
                                  dim, tokens, blocks));
  const auto D = as_size(dim), T = as_size(tokens), H = 4 * D;
  StageMlp mlp(MlpShape{dim, tokens, blocks, opt.dtype}, opt.seed, opt.seed_bug);

  std::uint64_t state = opt.seed * 0x2545f4914f6cdd1dull + 1;
  const auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * 0x1.0p-53 * 2.0 - 1.0;
  };
  std::vector<float> x(T * D), label(T * D);
  for (auto& v : x) v = static_cast<float>(uniform());
  for (auto& v : label) v = static_cast<float>(0.5 * uniform());

  // The split path: F, the loss gradient do = 2(o − label)/numel, then B and W.
  mlp.set_input(x);
  mlp.forward();
  const auto out = mlp.output();
  std::vector<float> grad(T * D);
  const double numel = static_cast<double>(T * D);
  for (std::size_t i = 0; i < grad.size(); ++i)
    grad[i] = static_cast<float>(2.0 * (static_cast<double>(out[i]) - label[i]) / numel);
  mlp.set_output_grad(grad);
  mlp.zero_weight_grads();
  mlp.backward_input();
  mlp.backward_weight();

  // The reference: the same (dtype-rounded) inputs and weights, a full backward in double.
  Reference ref{{}, {}, Mat(T, D, mlp.input()), Mat(T, D, label)};
  for (int k = 0; k < blocks; ++k) {
    ref.w1.emplace_back(H, D, mlp.weight1(k));
    ref.w2.emplace_back(D, H, mlp.weight2(k));
  }
  std::vector<Mat> xs, hs;
  (void)ref.forward(&xs, &hs);
  Mat g(T, D);
  for (std::size_t i = 0; i < g.v.size(); ++i)
    g.v[i] = 2.0 * (xs.back().v[i] - ref.label.v[i]) / numel;
  std::vector<Mat> dw1(as_size(blocks), Mat(H, D)), dw2(as_size(blocks), Mat(D, H));
  for (int k = blocks - 1; k >= 0; --k) {
    const auto K = as_size(k);
    dw2[K] = matmul(g, true, hs[K], false);   // dW2 = doᵀ h
    Mat dh = matmul(g, false, ref.w2[K], false);  // dh = do W2
    dw1[K] = matmul(dh, true, xs[K], false);  // dW1 = dhᵀ x
    g = matmul(dh, false, ref.w1[K], false);  // dx = dh W1, the do of block k − 1
  }

  GradientCheck check;
  check.dim = dim;
  check.tokens = tokens;
  check.blocks = blocks;
  check.dtype = std::string(dtype_name(opt.dtype));
  check.tolerance = opt.dtype == DType::bf16 ? 5e-2 : 1e-4;
  double worst = rel_error(mlp.input_grad(), g.v);
  for (int k = 0; k < blocks; ++k) {
    worst = std::max(worst, rel_error(mlp.weight1_grad(k), dw1[as_size(k)].v));
    worst = std::max(worst, rel_error(mlp.weight2_grad(k), dw2[as_size(k)].v));
  }

  // Central differences of the double loss at a few weights of every block. The loss is
  // quadratic in any single weight, so the difference is exact up to rounding.
  double fd_worst = 0;
  int probes = 0;
  const double eps = 1e-3;
  for (int k = 0; k < blocks; ++k) {
    const auto K = as_size(k);
    for (int which = 0; which < 2; ++which) {
      auto& weights = which == 0 ? ref.w1[K] : ref.w2[K];
      const auto split = which == 0 ? mlp.weight1_grad(k) : mlp.weight2_grad(k);
      const double scale = max_abs(which == 0 ? dw1[K].v : dw2[K].v);
      for (int p = 0; p < opt.fd_probes_per_tensor; ++p) {
        const std::size_t idx = (as_size(p) * 7919 + K * 104729 + as_size(which) * 31) % weights.v.size();
        const double saved = weights.v[idx];
        weights.v[idx] = saved + eps;
        const double up = ref.forward(nullptr, nullptr);
        weights.v[idx] = saved - eps;
        const double down = ref.forward(nullptr, nullptr);
        weights.v[idx] = saved;
        const double fd = (up - down) / (2 * eps);
        const double err = std::abs(fd - static_cast<double>(split[idx]));
        fd_worst = std::max(fd_worst, scale > 0 ? err / scale : err);
        ++probes;
      }
    }
  }
  check.max_rel_error = worst;
  check.fd_max_rel_error = fd_worst;
  check.fd_probes = probes;
  check.passed = std::isfinite(worst) && std::isfinite(fd_worst) && worst <= check.tolerance &&
                 fd_worst <= check.tolerance;
  return check;
}

// ----------------------------------------------------------------------------------------------
// The repeat rule

namespace {

// The q-quantile of sorted samples, interpolating between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

constexpr std::array<const char*, 4> kKindNames{"F", "B", "W", "BW"};

std::string rounds_text(int n) { return fmt::format("{} extra round{}", n, n == 1 ? "" : "s"); }

} // namespace

double median_of(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return quantile(samples, 0.5);
}

double noise_of(std::vector<double> samples) {
  if (samples.size() < 2) return 0;
  std::sort(samples.begin(), samples.end());
  const double median = quantile(samples, 0.5);
  return median > 0 ? (quantile(samples, 0.75) - quantile(samples, 0.25)) / median : 0.0;
}

RepeatDecision decide_repeats(const std::vector<std::vector<double>>& samples,
                              const std::vector<double>& previous_medians, double elapsed_ms,
                              const RepeatRule& rule) {
  using Verdict = RepeatDecision::Verdict;
  bool any_noisy = false, settled = !previous_medians.empty();
  std::size_t most = 0;
  for (std::size_t k = 0; k < samples.size(); ++k) {
    most = std::max(most, samples[k].size());
    if (static_cast<int>(samples[k].size()) < rule.min_judged) continue;
    if (noise_of(samples[k]) <= rule.noisy_spread) continue;
    any_noisy = true;
    if (k >= previous_medians.size() || previous_medians[k] <= 0) {
      settled = false;
      continue;
    }
    const double change = std::abs(median_of(samples[k]) - previous_medians[k]) / previous_medians[k];
    settled = settled && change <= rule.stable_change;
  }
  if (!any_noisy) return {Verdict::quiet, 0};
  if (settled) return {Verdict::stable, 0};
  const auto cap = static_cast<std::size_t>(std::max(rule.max_samples, 0));
  if (elapsed_ms >= rule.time_cap_ms || most >= cap) return {Verdict::capped, 0};
  const std::size_t extra = std::min(std::max<std::size_t>(most / 2, 5), cap - most);
  return {Verdict::more, static_cast<int>(extra)};
}

std::string noisy_kinds(const BlockMeasurement& m, const RepeatRule& rule) {
  std::string kinds;
  const KernelStats* stats[] = {&m.F, &m.B, &m.W, &m.BW};
  int samples = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const KernelStats& s = *stats[k];
    if (s.samples < rule.min_judged || s.noise <= rule.noisy_spread) continue;
    kinds += fmt::format("{}{} {:.0f}%", kinds.empty() ? "" : ", ", kKindNames[k], 100 * s.noise);
    samples = std::max(samples, s.samples);
  }
  if (kinds.empty()) return kinds;
  return fmt::format("{} of {} block{} over {} samples{}", kinds, m.blocks,
                     m.blocks == 1 ? "" : "s", samples,
                     m.capped ? fmt::format(", still moving at the cap ({:.0f} s or {} samples)",
                                            rule.time_cap_ms / 1000, rule.max_samples)
                     : m.extra_rounds > 0 ? fmt::format(" ({})", rounds_text(m.extra_rounds))
                                          : std::string());
}

std::string noise_warning(const std::vector<std::string>& kinds, const RepeatRule& rule) {
  std::string joined;
  for (const std::string& k : kinds) joined += (joined.empty() ? "" : "; ") + k;
  return fmt::format("timings are noisy: {} (interquartile range / median over {:.0f}%); costs "
                     "may be off as much: calibrate on a quiet machine",
                     joined, 100 * rule.noisy_spread);
}

std::vector<std::string> noise_warnings(const BlockMeasurement& m, const RepeatRule& rule) {
  std::string kinds = noisy_kinds(m, rule);
  if (kinds.empty()) return {};
  return {noise_warning({std::move(kinds)}, rule)};
}

// ----------------------------------------------------------------------------------------------
// Timing

namespace {

template <class Fn> double time_ms(Fn&& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

KernelStats stats_of(std::vector<double> samples, double flops) {
  KernelStats s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.samples = static_cast<int>(n);
  s.median_ms = round_ms(median);
  s.min_ms = round_ms(samples.front());
  s.max_ms = round_ms(samples.back());
  s.spread = median > 0 ? round_to((samples.back() - samples.front()) / median, 1e4) : 0.0;
  s.noise = round_to(noise_of(samples), 1e4);
  s.gflops = median > 0 ? round_to(flops / (median * 1e-3) / 1e9, 1e2) : 0.0;
  return s;
}

BlockMeasurement measure(const CalibrationOptions& o, DType dtype, int blocks, int& repeats,
                         std::string& gemm) {
  const int slots = std::max(1, o.slots);
  StageMlp mlp(MlpShape{o.dim, o.tokens, blocks, dtype}, 1, false, slots);
  const auto n = as_size(o.tokens) * as_size(o.dim);
  std::vector<float> x(n), g(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((static_cast<double>(i % 97) - 48.0) / 48.0);
    g[i] = static_cast<float>((static_cast<double>(i % 89) - 44.0) / 44.0 * 1e-3);
  }
  for (int s = 0; s < slots; ++s) {
    mlp.set_input(x, s);
    mlp.set_output_grad(g, s);
  }
  // One round: each kind on every slot in turn (with one slot: F, B, W, BW back to back).
  std::vector<double> f, b, w, bw;
  const auto one_round = [&](bool keep) {
    double total = 0;
    const auto each = [&](std::vector<double>& into, auto&& kernel) {
      for (int s = 0; s < slots; ++s) {
        const double t = time_ms([&] { kernel(s); });
        total += t;
        if (keep) into.push_back(t);
      }
    };
    each(f, [&](int s) { mlp.forward(s); });
    each(b, [&](int s) { mlp.backward_input(s); });
    each(w, [&](int s) { mlp.backward_weight(s); });
    each(bw, [&](int s) { mlp.backward_fused(s); });
    return total;
  };
  // Warm-up: the first round creates oneDNN's JIT kernels; the second sizes the repeats.
  double last = 0;
  for (int k = 0; k < kWarmups; ++k) last = one_round(false);
  const bool automatic = repeats <= 0;
  if (automatic) {
    const double wanted = last > 0 ? std::ceil(kTargetMsPerMeasurement / last) : kMaxAutoRepeats;
    repeats = static_cast<int>(std::clamp(wanted, double{kMinAutoRepeats}, double{kMaxAutoRepeats}));
  }
  double elapsed = 0;
  for (int r = 0; r < repeats; ++r) elapsed += one_round(true);
  BlockMeasurement m;
  // The repeat rule: while some kind is noisy, more rounds until its median settles or a cap.
  std::vector<double> previous;
  while (automatic) {
    const std::vector<std::vector<double>> all{f, b, w, bw};
    const RepeatDecision d = decide_repeats(all, previous, elapsed);
    if (d.verdict != RepeatDecision::Verdict::more) {
      m.capped = d.verdict == RepeatDecision::Verdict::capped;
      break;
    }
    previous.clear();
    for (const auto& kind : all) previous.push_back(median_of(kind));
    const int rounds = (d.extra + slots - 1) / slots;
    for (int r = 0; r < rounds; ++r) elapsed += one_round(true);
    ++m.extra_rounds;
  }
  m.blocks = blocks;
  m.flops = flops_per_block(o.dim, o.tokens) * blocks;
  m.F = stats_of(std::move(f), m.flops);
  m.B = stats_of(std::move(b), m.flops);
  m.W = stats_of(std::move(w), m.flops);
  m.BW = stats_of(std::move(bw), 2 * m.flops);
  if (gemm.empty()) gemm = mlp.gemm_implementation();
  return m;
}

CommEstimate measure_comm(const CalibrationOptions& o, DType dtype) {
  CommEstimate c;
  const std::size_t bytes = as_size(o.tokens) * as_size(o.dim) * element_bytes(dtype);
  c.bytes = static_cast<double>(bytes);
  std::vector<unsigned char> src(bytes), dst(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131u);
  volatile unsigned char sink = 0;
  const auto copy = [&] {
    std::memcpy(dst.data(), src.data(), bytes);
    sink = static_cast<unsigned char>(sink ^ dst[bytes / 2]);
  };
  copy();
  copy();
  const double once = std::max(time_ms(copy), 1e-6);
  const int repeats = static_cast<int>(std::clamp(std::ceil(50.0 / once), 11.0, 1001.0));
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) samples.push_back(time_ms(copy));
  std::sort(samples.begin(), samples.end());
  const double median = samples[samples.size() / 2];
  c.measured_ms = round_ms(median);
  c.gbytes_per_s = median > 0 ? round_to(c.bytes / (median * 1e-3) / 1e9, 1e2) : 0.0;
  c.overridden = o.comm_ms.has_value();
  c.used_ms = round_ms(o.comm_ms.value_or(c.measured_ms));
  return c;
}

} // namespace

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, family, model;
  const auto value = [](const std::string& l) {
    const auto colon = l.find(':');
    return colon == std::string::npos ? std::string{} : std::string(trim(l.substr(colon + 1)));
  };
  while (std::getline(in, line) && (name.empty() || family.empty() || model.empty())) {
    if (line.rfind("model name", 0) == 0 && name.empty()) name = value(line);
    else if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value(line);
    else if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0 && model.empty())
      model = value(line);
  }
  if (name.empty()) return "unknown";
  if (!family.empty() && !model.empty())
    return fmt::format("{} (family {}, model {})", name, family, model);
  return name;
}

CalibrationResult run_calibration(const CalibrationOptions& options, Progress* progress) {
  validate_options(options);
  const DType dtype = parse_dtype(options.dtype);
  const ScopedGemmThreads threads(options.threads);
  CalibrationResult r;
  r.options = options;
  r.warmups = kWarmups;
  const int most = *std::max_element(options.blocks_per_stage.begin(), options.blocks_per_stage.end());

  r.gradient_check = check_gradients(kCheckDim, kCheckTokens, std::min(most, kMaxCheckBlocks),
                                     GradientCheckOptions{dtype});
  if (!r.gradient_check.passed)
    throw InfeasibleError(fmt::format(
        "gradient check failed on this machine ({} GEMMs, oneDNN {}, ISA {}): split "
        "B + W vs double reference max_rel_error={:.3g}, finite differences {:.3g}, tolerance "
        "{:.3g}; the kernels cannot be trusted for timing",
        r.gradient_check.dtype, onednn_version(), onednn_isa(), r.gradient_check.max_rel_error,
        r.gradient_check.fd_max_rel_error, r.gradient_check.tolerance));

  int repeats = options.repeats;
  const std::set<int> sizes(options.blocks_per_stage.begin(), options.blocks_per_stage.end());
  std::vector<std::string> noisy;  // one warning for all the stage sizes
  for (int b : options.blocks_per_stage) {
    const bool done = std::any_of(r.measurements.begin(), r.measurements.end(),
                                  [b](const BlockMeasurement& m) { return m.blocks == b; });
    if (done) continue;
    r.measurements.push_back(measure(options, dtype, b, repeats, r.machine.gemm));
    if (std::string k = noisy_kinds(r.measurements.back(), {}); !k.empty())
      noisy.push_back(std::move(k));
    report(progress, "stage sizes timed", r.measurements.size(), sizes.size());
  }
  if (!noisy.empty()) r.warnings.push_back(noise_warning(noisy, {}));
  r.repeats = repeats;

  const double act = static_cast<double>(as_size(options.tokens) * as_size(options.dim) *
                                         element_bytes(dtype));
  // After F a block keeps x (T×D) and h (T×4D); W still needs x, h, do (T×D) and dh (T×4D).
  r.memory_unit_bytes = options.blocks_per_stage.front() * 5.0 * act;
  for (int b : options.blocks_per_stage) {
    const auto& m = *std::find_if(r.measurements.begin(), r.measurements.end(),
                                  [b](const BlockMeasurement& x) { return x.blocks == b; });
    StageResult s;
    s.blocks = b;
    s.F_ms = m.F.median_ms;
    s.B_ms = m.B.median_ms;
    s.W_ms = m.W.median_ms;
    s.BW_ms = m.BW.median_ms;
    s.MB_bytes = b * 5.0 * act;
    s.MW_bytes = b * 10.0 * act;
    s.MB = s.MB_bytes / r.memory_unit_bytes;
    s.MW = s.MW_bytes / r.memory_unit_bytes;
    s.act_bytes = act;
    s.grad_bytes = act;
    r.stages.push_back(s);
  }
  r.comm = measure_comm(options, dtype);

  r.machine.cpu_model = cpu_model();
  r.machine.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  r.machine.onednn_version = onednn_version();
  r.machine.isa = onednn_isa();
  if (std::ifstream load("/proc/loadavg"); !(load >> r.machine.load_average))
    r.machine.load_average = -1;
  return r;
}

// ----------------------------------------------------------------------------------------------
// The cost file

namespace {

/// Byte and FLOP counts are whole numbers; written as integers they read better.
std::int64_t as_bytes(double v) { return static_cast<std::int64_t>(std::llround(v)); }

ordered_json stats_json(const KernelStats& s) {
  ordered_json j;
  j["median_ms"] = s.median_ms;
  j["min_ms"] = s.min_ms;
  j["max_ms"] = s.max_ms;
  j["spread"] = s.spread;
  j["noise"] = s.noise;
  j["gflops"] = s.gflops;
  j["samples"] = s.samples;
  return j;
}

ordered_json kinds_json(const BlockMeasurement& m) {
  ordered_json j;
  j["blocks"] = m.blocks;
  j["flops"] = as_bytes(m.flops);
  j["F"] = stats_json(m.F);
  j["B"] = stats_json(m.B);
  j["W"] = stats_json(m.W);
  j["BW"] = stats_json(m.BW);
  j["extra_rounds"] = m.extra_rounds;
  j["capped"] = m.capped;
  return j;
}

std::string machine_text(const CalibrationResult& r) {
  return fmt::format("{}, {} logical CPUs; oneDNN {} (ISA {}, {}); {} GEMM thread{}",
                     r.machine.cpu_model, r.machine.logical_cpus, r.machine.onednn_version,
                     r.machine.isa, r.machine.gemm, r.options.threads,
                     r.options.threads == 1 ? "" : "s");
}

} // namespace

std::string cost_file_json(const CalibrationResult& r) {
  const auto& o = r.options;
  ordered_json doc;
  doc["schema"] = "ppsim.costs/1";
  doc["description"] = fmt::format(
      "ppsim calibrate: zero-bubble MLP (Linear(dim, 4dim), Linear(4dim, dim), no bias), "
      "dim={}, tokens={}, blocks per stage {}, {}; per-stage medians of real oneDNN GEMMs",
      o.dim, o.tokens, blocks_text(o.blocks_per_stage), o.dtype);
  doc["machine"] = machine_text(r);
  ordered_json stages = ordered_json::array();
  for (const auto& s : r.stages) {
    ordered_json j;
    j["blocks"] = s.blocks;
    j["F"] = s.F_ms;
    j["B"] = s.B_ms;
    j["W"] = s.W_ms;
    j["BW"] = s.BW_ms;
    j["MB"] = s.MB;
    j["MW"] = s.MW;
    j["MB_bytes"] = as_bytes(s.MB_bytes);
    j["MW_bytes"] = as_bytes(s.MW_bytes);
    j["act_bytes"] = as_bytes(s.act_bytes);
    j["grad_bytes"] = as_bytes(s.grad_bytes);
    stages.push_back(std::move(j));
  }
  doc["stages"] = std::move(stages);
  doc["comm"] = r.comm.used_ms;
  doc["memory_unit_bytes"] = as_bytes(r.memory_unit_bytes);

  ordered_json ce;
  ce["label"] = "ESTIMATE: a memory copy of one activation (tokens x dim values) on this "
                "machine, not a measured network link; override with calibrate comm=.. or "
                "--costs comm=..";
  ce["method"] = "memcpy";
  ce["bytes"] = as_bytes(r.comm.bytes);
  ce["measured_ms"] = r.comm.measured_ms;
  ce["gbytes_per_s"] = r.comm.gbytes_per_s;
  ce["overridden"] = r.comm.overridden;
  ce["used_ms"] = r.comm.used_ms;
  doc["comm_estimate"] = std::move(ce);

  const double e = static_cast<double>(element_bytes(parse_dtype(o.dtype)));
  const double act = static_cast<double>(o.tokens) * o.dim * e;
  ordered_json mem;
  mem["unit"] = "M_B = bytes stage 0 keeps per micro-batch after F (memory_unit_bytes)";
  mem["element_bytes"] = as_bytes(e);
  mem["per_block_bytes"] = ordered_json{
      {"x", as_bytes(act)}, {"h", as_bytes(4 * act)}, {"do", as_bytes(act)}, {"dh", as_bytes(4 * act)}};
  mem["after_F"] = "x and h of every block";
  mem["needed_by_W"] = "x, h, do and dh of every block";
  mem["MW_over_MB"] = 2.0;
  mem["note"] = "W needs more than F kept (MW > MB), so B raises memory by MW - MB instead of "
                "freeing it; the simulator applies B's delta -(MB - MW) > 0 at B's start";
  doc["memory"] = std::move(mem);

  ordered_json model;
  model["name"] = "ZeroBubbleMLP";
  model["dim"] = o.dim;
  model["tokens"] = o.tokens;
  model["blocks_per_stage"] = o.blocks_per_stage;
  model["stages"] = o.blocks_per_stage.size();
  model["dtype"] = o.dtype;
  model["flops_per_block_per_kind"] = as_bytes(flops_per_block(o.dim, o.tokens));
  model["parameters_per_block"] = as_bytes(8.0 * o.dim * o.dim);
  doc["model"] = std::move(model);

  ordered_json kernels = r.measurements.empty() ? ordered_json::object() : kinds_json(r.measurements.front());
  kernels["note"] = "per stage of the given blocks; F, B and W are 16*tokens*dim^2 FLOPs per "
                    "block each, BW twice that; times from std::chrono::steady_clock";
  if (r.measurements.size() > 1) {
    ordered_json all = ordered_json::array();
    for (const auto& m : r.measurements) all.push_back(kinds_json(m));
    kernels["by_blocks"] = std::move(all);
  }
  doc["kernels"] = std::move(kernels);

  const auto& gc = r.gradient_check;
  ordered_json check;
  check["max_rel_error"] = gc.max_rel_error;
  check["passed"] = gc.passed;
  check["fd_max_rel_error"] = gc.fd_max_rel_error;
  check["fd_probes"] = gc.fd_probes;
  check["tolerance"] = gc.tolerance;
  check["dim"] = gc.dim;
  check["tokens"] = gc.tokens;
  check["blocks"] = gc.blocks;
  check["dtype"] = gc.dtype;
  check["reference"] = "full backward in double precision, chained across blocks";
  doc["gradient_check"] = std::move(check);

  ordered_json prov;
  prov["tool"] = "ppsim calibrate";
  prov["cpu_model"] = r.machine.cpu_model;
  prov["logical_cpus"] = r.machine.logical_cpus;
  prov["onednn_version"] = r.machine.onednn_version;
  prov["isa"] = r.machine.isa;
  prov["gemm"] = r.machine.gemm;
  prov["load_average_1m"] = r.machine.load_average;
  prov["load_note"] = "other processes on the machine inflate medians; calibrate on a quiet machine";
  prov["threads"] = o.threads;
  prov["repeats"] = r.repeats;
  const RepeatRule rule;
  prov["repeat_rule"] = fmt::format(
      "with automatic repeats, more rounds while a kind's interquartile range exceeds {:.0f}% of "
      "its median, until its median moves by at most {:.0f}% per round, or {:.0f} s of timing "
      "or {} samples per stage size",
      100 * rule.noisy_spread, 100 * rule.stable_change, rule.time_cap_ms / 1000,
      rule.max_samples);
  prov["warnings"] = r.warnings;
  prov["warmups"] = r.warmups;
  prov["dtype"] = o.dtype;
  doc["provenance"] = std::move(prov);
  return doc.dump(2) + "\n";
}

CostSpec to_cost_spec(const CalibrationResult& r) {
  CostSpec spec;
  spec.stages.clear();
  for (const auto& s : r.stages) {
    StageCosts c;
    c.F = ms_to_ticks(s.F_ms, "calibrate F");
    c.B = ms_to_ticks(s.B_ms, "calibrate B");
    c.W = ms_to_ticks(s.W_ms, "calibrate W");
    c.BW = ms_to_ticks(s.BW_ms, "calibrate BW");
    c.FB = -1;
    c.MB = s.MB;
    c.MW = s.MW;
    c.act_bytes = s.act_bytes;
    c.grad_bytes = s.grad_bytes;
    spec.stages.push_back(c);
  }
  spec.comm = ms_to_ticks(r.comm.used_ms, "calibrate comm");
  spec.memory_unit_bytes = r.memory_unit_bytes;
  spec.source = fmt::format("calibrate dim={},tokens={},blocks={},dtype={},threads={}",
                            r.options.dim, r.options.tokens,
                            fmt::join(r.options.blocks_per_stage, ":"), r.options.dtype,
                            r.options.threads);
  return spec;
}

std::string calibration_summary(const CalibrationResult& r) {
  std::string s = fmt::format("calibrated zero-bubble MLP dim={} tokens={} blocks={} {} on {}\n",
                              r.options.dim, r.options.tokens,
                              blocks_text(r.options.blocks_per_stage), r.options.dtype,
                              machine_text(r));
  s += fmt::format("gradient check: max_rel_error={:.3g} (finite differences {:.3g}, tolerance "
                   "{:.3g}) {}\n",
                   r.gradient_check.max_rel_error, r.gradient_check.fd_max_rel_error,
                   r.gradient_check.tolerance, r.gradient_check.passed ? "passed" : "FAILED");
  s += fmt::format("{:>7} {:>5} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9}\n", "blocks", "kind",
                   "median_ms", "min_ms", "max_ms", "noise", "GFLOP/s", "samples");
  for (const auto& m : r.measurements) {
    for (const auto& [name, k] : {std::pair<const char*, const KernelStats*>{"F", &m.F},
                                  {"B", &m.B}, {"W", &m.W}, {"BW", &m.BW}})
      s += fmt::format("{:>7} {:>5} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9}\n", m.blocks, name,
                       human_number(k->median_ms), human_number(k->min_ms),
                       human_number(k->max_ms), fmt::format("{:.1f}%", 100 * k->noise),
                       human_number(k->gflops), k->samples);
  }
  s += fmt::format("{:>7} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}\n", "stage", "F_ms", "B_ms", "W_ms",
                   "BW_ms", "MB", "MW");
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const auto& st = r.stages[i];
    s += fmt::format("{:>7} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}\n", i, human_number(st.F_ms),
                     human_number(st.B_ms), human_number(st.W_ms), human_number(st.BW_ms),
                     human_number(st.MB), human_number(st.MW));
  }
  s += fmt::format("M_B = {}; comm = {} ms ({}: memcpy of {} at {} GB/s = {} ms)\n",
                   human_bytes(r.memory_unit_bytes), human_number(r.comm.used_ms),
                   r.comm.overridden ? "given; the estimate was" : "ESTIMATE",
                   human_bytes(r.comm.bytes), human_number(r.comm.gbytes_per_s),
                   human_number(r.comm.measured_ms));
  return s;
}

CostSpec calibrated_costs(std::string_view spec_text, std::vector<std::string>* warnings,
                          Progress* progress) {
  const CalibrationResult r = run_calibration(parse_calibration_spec(spec_text), progress);
  if (warnings != nullptr) warnings->insert(warnings->end(), r.warnings.begin(), r.warnings.end());
  return to_cost_spec(r);
}

} // namespace ppsim::calibrate
