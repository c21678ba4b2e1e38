// Sequence slices of a micro-batch (Seq1F1B): their lengths and what each costs. A slice's GEMMs
// scale with its tokens; under causal attention its attention also with the context before it,
// so an even split is unbalanced (Sun et al., Seq1F1B, NAACL 2025, sec. 3.3).
#pragma once

#include "ppsim/io/model_file.hpp"
#include "ppsim/io/slicing_text.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/cost_model.hpp"

#include <vector>

namespace ppsim {

/// Of a layer's F time, attention's (QK^T and attention x V, which grow with the context): the
/// decoder layer's A / (G + A) of ppsim/run/transformer.hpp at the model's sequence length.
[[nodiscard]] double attention_share(const ModelSpec& model);
/// The same on a device that knows its HBM bandwidth: the attention core's part of the layer's
/// F time (ppsim/run/kernel_time.hpp), whose other kernels grow with the tokens as the GEMMs do. A
/// device without it: attention_share(model).
[[nodiscard]] double attention_share(const ModelSpec& model, const DeviceSpec& device,
                                     const TrainingSpec& training);

/// The slices' lengths (fractions of the sequence, summing to 1) for `slices` slices of a layer
/// whose F spends `attention` on attention (B = G + 2A then spends 2a / (1 + a)). balanced: each
/// slice's F + B is 1/slices of the micro-batch's. ConfigError for lengths whose count is not
/// `slices`, or an attention share outside [0, 1).
[[nodiscard]] std::vector<double> slice_lengths(const SlicingSpec& slicing, int slices,
                                                double attention);

/// Of a decoder layer's activations (M_B), the attention scores Korthikanti et al.'s 5as^2b
/// keeps (softmax, its mask, dropout output) under the model's own recomputation: 0 unless none.
[[nodiscard]] double scores_share(const ModelSpec& model);

/// What each slice costs as a fraction of the whole micro-batch: a slice of length l after a
/// prefix P does l of the GEMMs and l (2P + l) of the causal attention (the shares sum to 1); W
/// (no attention weights), M_W and the activations (K/V included) scale with l, but the
/// `scores` share of M_B with l (P + l): its rows of the score matrix over the context they see
/// (the whole micro-batch keeps all s x s; a slice's kernel only its l x (P + l) block).
///
///   slice_costs({0.5, 0.5}, 0.5)   // F: 0.375, 0.625; W, M_B and M_W: 0.5 each
[[nodiscard]] std::vector<SliceCosts> slice_costs(const std::vector<double>& lengths,
                                                  double attention, double scores = 0.0);

} // namespace ppsim
