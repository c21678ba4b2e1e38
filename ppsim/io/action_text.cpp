// The one reader of task and action texts (ppsim/io/action_text.hpp).
#include "ppsim/io/action_text.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <cctype>
#include <charconv>
#include <fmt/format.h>
#include <vector>

namespace ppsim {

namespace {

constexpr std::string_view kOverlap = "OVERLAP_F_B";

// `<stage><TYPE><microbatch>`: digits (no sign), capitals or '_', digits.
struct ActionParts {
  int stage{0};
  std::string_view type;
  int microbatch{0};
};

// Splits one action; the error text, or nullopt with `out` set. `form` is what the vocabulary
// expects (`<stage><F|I|W|B><microbatch> such as 2F0`).
std::optional<std::string> split_action(std::string_view text, std::string_view form,
                                        ActionParts& out) {
  const char* first = text.data();
  const char* last = first + text.size();
  const auto digit_at = [&](const char* c) {
    return c < last && std::isdigit(static_cast<unsigned char>(*c));
  };
  const auto expected = [&] { return fmt::format("expected {}", form); };
  // from_chars would take a sign: indices are plain digits.
  if (!digit_at(first)) return expected();
  auto [p, ec] = std::from_chars(first, last, out.stage);
  if (ec == std::errc::result_out_of_range || out.stage > limits::kMaxStages - 1)
    return fmt::format("stage index too large (at most {})", limits::kMaxStages - 1);
  const char* k = p;
  while (k < last && (std::isupper(static_cast<unsigned char>(*k)) || *k == '_')) ++k;
  out.type = std::string_view(p, static_cast<std::size_t>(k - p));
  if (out.type.empty()) return expected();
  if (k == last) return fmt::format("{} action without a micro-batch index", excerpt(out.type));
  if (!digit_at(k)) return expected();
  auto [q, ec2] = std::from_chars(k, last, out.microbatch);
  if (ec2 == std::errc::result_out_of_range || out.microbatch > limits::kMaxMicrobatches - 1)
    return fmt::format("micro-batch index too large (at most {})", limits::kMaxMicrobatches - 1);
  if (q != last) return expected();
  return std::nullopt;
}

// One ppsim task that is not an FB: F, B, W or BW.
std::optional<std::string> ppsim_action(std::string_view text, Task& task) {
  ActionParts a;
  if (auto err = split_action(text, "<stage><F|B|W|BW><microbatch> such as 2F0", a)) return err;
  Kind kind{};
  if (a.type == "F") kind = Kind::F;
  else if (a.type == "B") kind = Kind::B;
  else if (a.type == "W") kind = Kind::W;
  else if (a.type == "BW") kind = Kind::BW;
  else return fmt::format("unknown kind '{}' (expected F, B, W or BW)", excerpt(a.type));
  task = Task::make(kind, a.stage, a.microbatch);
  return std::nullopt;
}

// One PyTorch compute action that is not an OVERLAP_F_B. `B` is read as the full backward
// (BW); in the old notation the reader turns it into our B afterwards where a W of the same
// stage and micro-batch follows.
std::optional<std::string> pytorch_action(std::string_view text, Task& task,
                                          PytorchNotation notation) {
  ActionParts a;
  if (auto err = split_action(text, "<stage><F|I|W|B><microbatch> such as 2F0", a)) return err;
  Kind kind{};
  const bool old = notation == PytorchNotation::old;
  if (a.type == "F") kind = Kind::F;
  else if (a.type == "I" && old)
    return std::string("I is not in PyTorch's old notation, where B was the backward for the "
                       "input; drop --pytorch-notation old to read I (and B as the full backward)");
  else if (a.type == "I") kind = Kind::B;
  else if (a.type == "W") kind = Kind::W;
  else if (a.type == "B") kind = Kind::BW;
  else if (a.type == "UNSHARD" || a.type == "RESHARD" || a.type == "REDUCE_GRAD" ||
           a.type == "SEND_F" || a.type == "RECV_F" || a.type == "SEND_B" || a.type == "RECV_B")
    return fmt::format("{} is a communication/sharding action of PyTorch's compute_comms format; "
                       "only compute actions (F, I, W, B, OVERLAP_F_B) are supported",
                       a.type);
  else
    return fmt::format("unknown action type '{}' (expected {})", excerpt(a.type),
                       old ? "F, B or W, PyTorch's old notation" : "F, I, W or B");
  task = Task::make(kind, a.stage, a.microbatch);
  return std::nullopt;
}

// The two halves of an overlapped cell, forward first: one F and one backward (B or BW).
std::optional<std::string> overlapped(std::vector<Task> parts, Task& task) {
  if (parts.size() != 2)
    return fmt::format("OVERLAP_F_B needs exactly two actions, a forward and a backward (got {})",
                       parts.size());
  if (parts[1].kind == Kind::F) std::swap(parts[0], parts[1]);
  const Task& f = parts[0];
  const Task& b = parts[1];
  if (f.kind != Kind::F || (b.kind != Kind::B && b.kind != Kind::BW))
    return std::string(
        "OVERLAP_F_B needs one forward (F) and one backward (I or B); W cannot overlap");
  task = Task::overlapped(f.stage, f.microbatch, b.kind, b.stage, b.microbatch);
  return std::nullopt;
}

} // namespace

Task parse_task(std::string_view text) {
  const auto fail = [&](std::string_view why) {
    return ConfigError(fmt::format("task '{}': {} (tasks read 2F0, 1B3, 0W2, 3BW1, or (0F7;7B3) "
                                   "for an FB)",
                                   excerpt(text), why));
  };
  Task t;
  if (!text.starts_with('(')) {
    if (auto err = ppsim_action(text, t)) throw fail(*err);
    return t;
  }
  if (!text.ends_with(')') || text.size() < 2) throw fail("'(' without ')'");
  const std::string_view inner = text.substr(1, text.size() - 2);
  const auto semi = inner.find(';');
  if (semi == std::string_view::npos) throw fail("an FB is (F;B) with a ';'");
  std::vector<Task> parts(2);
  for (const auto& [i, part] : {std::pair{0, inner.substr(0, semi)}, {1, inner.substr(semi + 1)}})
    if (auto err = ppsim_action(part, parts[static_cast<std::size_t>(i)]))
      throw fail(fmt::format("in '{}': {}", excerpt(part), *err));
  // ppsim's FB is written forward first.
  if (parts[0].kind != Kind::F) throw fail("an FB is written forward first, (F;B)");
  if (auto err = overlapped(std::move(parts), t)) throw fail(*err);
  return t;
}

PytorchNotation parse_pytorch_notation(std::string_view text) {
  if (text == "new") return PytorchNotation::current;
  if (text == "old") return PytorchNotation::old;
  throw ConfigError(fmt::format("--pytorch-notation '{}': expected new (I = backward for the "
                                "input, B = full backward) or old (B = backward for the input)",
                                excerpt(text)));
}

std::optional<std::string> parse_pytorch_action(std::string_view text, Task& task,
                                                PytorchNotation notation) {
  if (!text.starts_with('(')) return pytorch_action(text, task, notation);
  const auto close = text.find(')');
  if (close == std::string_view::npos) return std::string("'(' without ')'");
  const auto type = trim(text.substr(close + 1));
  if (type != kOverlap)
    return fmt::format("a parenthesised cell must be (F;B)OVERLAP_F_B, got type '{}'",
                       excerpt(type));
  const auto inner = text.substr(1, close - 1);
  std::vector<Task> parts;
  std::optional<std::string> error;
  for_each_field(inner, ';', [&](std::string_view part) {
    if (part.empty()) return true;  // PyTorch skips empty sub-actions too
    Task t;
    if (auto err = pytorch_action(part, t, notation)) {
      error = fmt::format("in '{}': {}", excerpt(part), *err);
      return false;
    }
    parts.push_back(t);
    return true;
  });
  if (error) return error;
  return overlapped(std::move(parts), task);
}

} // namespace ppsim
