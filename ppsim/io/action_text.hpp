// A task as text, the one reader of it: ppsim's compact form (`2F0`, `1B3`, `3BW1`,
// `(0F7;7B3)`) and PyTorch's compute actions (`0F1`, `2I1`, `0W3`, `0B3`,
// `(0F7;7I3)OVERLAP_F_B`), split by one tokenizer with one set of bounds (a stage below
// limits::kMaxStages, a micro-batch below limits::kMaxMicrobatches).
#pragma once

#include "ppsim/sim/task.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppsim {

/// Parses ppsim's compact text form (to_string(Task)); parse_task(to_string(t)) == t. Throws
/// ConfigError quoting the text (an excerpt) and saying what is wrong.
[[nodiscard]] Task parse_task(std::string_view text);

/// Which of PyTorch's vocabularies a CSV is written in. `current`: `I` is the backward for the
/// input, `B` the full backward. `old` (PyTorch before `I` existed, e.g. its test artifact
/// zb1p_2rank_2stagep_compute.csv): `B` is the backward for the input when a `W` of the same
/// stage and micro-batch is in the file, and the full backward otherwise.
enum class PytorchNotation : std::uint8_t { current, old };

/// `new` or `old` (the values of `--pytorch-notation`); ConfigError names anything else.
[[nodiscard]] PytorchNotation parse_pytorch_notation(std::string_view text);

/// One PyTorch action as its runtime writes it (`0F1`, `2I1`, `0W3`, `0B3`,
/// `(0F7;7B3)OVERLAP_F_B`), the one parser of that text (CSV cells, profiler ranges `PP:0F1`):
/// nullopt with `task` set, or the error text. `B` is the full backward (our BW) in either
/// notation; the old notation's readers turn it into our B where a W of the same stage and
/// micro-batch follows. PyTorch's communication and sharding actions (SEND_F, UNSHARD, ...) are
/// an error that names them.
[[nodiscard]] std::optional<std::string> parse_pytorch_action(std::string_view text, Task& task,
                                                              PytorchNotation notation);

} // namespace ppsim
