// Sequence slices' lengths and costs (ppsim/run/slicing.hpp).
#include "ppsim/run/slicing.hpp"

#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/errors.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

namespace {

// Of B's time, attention's, when F's is `a` (B = G + 2A, F = G + A).
double backward_share(double a) { return 2 * a / (1 + a); }

void check_share(double a) {
  if (!(a >= 0 && a < 1))
    throw ConfigError(
        fmt::format("--attn-share {:g}: attention's share of F must be in [0, 1)", a));
}

} // namespace

double attention_share(const ModelSpec& model) {
  const LayerEstimate e = decoder_layer(model);
  return e.F_flops > 0 ? (e.F_flops - e.W_flops) / e.F_flops : 0.0;
}

double attention_share(const ModelSpec& model, const DeviceSpec& device, const TrainingSpec& training) {
  if (!kernel_level(device)) return attention_share(model);
  const LayerTimes t = decoder_layer_times(model, device, training, Recompute::none);
  const double total = t.F.total();
  return total > 0 ? t.F.attention / total : 0.0;
}

std::vector<double> slice_lengths(const SlicingSpec& slicing, int slices, double attention) {
  check_share(attention);
  const auto k = static_cast<std::size_t>(slices);
  switch (slicing.mode) {
  case SlicingSpec::Mode::even: return std::vector<double>(k, 1.0 / slices);
  case SlicingSpec::Mode::lengths:
    if (slicing.lengths.size() != k)
      throw ConfigError(fmt::format("--slicing gives {} lengths for --slices {}",
                                    slicing.lengths.size(), slices));
    return slicing.lengths;
  case SlicingSpec::Mode::balanced: break;
  }
  // F + B of a slice of length l after P: (1 - w) l + w l (2P + l), w = attention's share of
  // F + B = 3a / (2 + a); each slice takes 1/k of it, the last what is left.
  const double w = 3 * attention / (2 + attention);
  std::vector<double> out;
  out.reserve(k);
  double prefix = 0;
  for (std::size_t i = 0; i + 1 < k; ++i) {
    const double b = (1 - w) + 2 * w * prefix, c = 1.0 / slices;
    const double l = w > 0 ? 2 * c / (b + std::sqrt(b * b + 4 * w * c)) : c;
    out.push_back(l);
    prefix += l;
  }
  out.push_back(1 - prefix);
  return out;
}

double scores_share(const ModelSpec& model) {
  const LayerEstimate kept = decoder_layer(model);
  if (model.recompute != Recompute::none || kept.act_bytes <= 0) return 0.0;
  const LayerEstimate without = decoder_layer(model, Recompute::selective);
  return (kept.act_bytes - without.act_bytes) / kept.act_bytes;
}

std::vector<SliceCosts> slice_costs(const std::vector<double>& lengths, double attention,
                                    double scores) {
  check_share(attention);
  if (!(scores >= 0 && scores <= 1))
    throw ConfigError(fmt::format("a scores share of {:g} is not in [0, 1]", scores));
  const double a = attention, ab = backward_share(attention);
  std::vector<SliceCosts> out;
  out.reserve(lengths.size());
  double prefix = 0;
  for (const double l : lengths) {
    const double causal = l * (2 * prefix + l);
    out.push_back(SliceCosts{.F = (1 - a) * l + a * causal,
                             .B = (1 - ab) * l + ab * causal,
                             .W = l,
                             .MB = (1 - scores) * l + scores * l * (prefix + l),
                             .MW = l});
    prefix += l;
  }
  return out;
}

} // namespace ppsim
