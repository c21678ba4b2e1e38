// Layouts: which layers each pipeline stage holds, in Megatron-Core's
// `--pipeline-model-parallel-layout` syntax (`Et*3|(tt|)*29,m|L`) or as layer counts
// (`--layers-per-stage 5,6,6,5`).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// The layers of one stage: the embedding (E), transformer decoder layers (t), multi-token
/// prediction layers (m) and the output layer with the loss (L).
struct StageLayers {
  int embedding{0};
  int decoders{0};
  int mtp{0};
  int loss{0};
  friend bool operator==(const StageLayers&, const StageLayers&) = default;
};

/// The stages in model order: with v chunks per device the p*v stages in the order data flows
/// (for Megatron's loop placement that is its VPP order: all of chunk 0, then chunk 1, ...).
struct Layout {
  std::vector<StageLayers> stages;
  [[nodiscard]] int decoders() const;
  friend bool operator==(const Layout&, const Layout&) = default;
};

/// Parses Megatron's syntax: `E`, `t`, `m`, `L`; stages split by `|`; `X*N` repeats a symbol
/// and `(...)*N` a group (groups nest); commas and spaces are ignored; empty stages are
/// allowed (`E||t|L`). ConfigError `where: position 7: ...` (1-based) for anything else; the
/// expansion is bounded before it is built.
[[nodiscard]] Layout parse_layout(std::string_view text, std::string_view where);

/// `--layers-per-stage 5,6,6,5`: the decoders of each stage, with the embedding on the first
/// and the loss on the last.
[[nodiscard]] Layout layout_from_counts(std::span<const int> decoders_per_stage);

/// Megatron's default even split of `layers` decoders over `stages` (ConfigError unless it
/// divides), the embedding on the first stage and the loss on the last.
[[nodiscard]] Layout even_layout(int layers, int stages);

/// The default split: Megatron's even one when `stages` divides `layers`; otherwise the extra
/// layers go to the middle stages, so the first and last stages (which also hold the embedding
/// and the loss) get fewer, as in the zero-bubble paper's recipe of k p - 2 layers.
[[nodiscard]] Layout default_layout(int layers, int stages);

/// The canonical text of a layout (`Ett|tt|ttL`), which parse_layout reads back.
[[nodiscard]] std::string layout_text(const Layout& layout);

/// Checks a layout against a model: `stages` stages, `layers` decoder layers in all, one
/// embedding on the first stage and one loss on the last. ConfigError naming what differs.
void check_layout(const Layout& layout, int stages, int layers, std::string_view where);

} // namespace ppsim
