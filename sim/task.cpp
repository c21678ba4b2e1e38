// Text form of tasks.
#include "sim/task.hpp"

#include "sim/errors.hpp"

#include <charconv>
#include <fmt/format.h>

namespace ppsim {

std::string_view kind_name(Kind kind) {
  switch (kind) {
  case Kind::F: return "F";
  case Kind::B: return "B";
  case Kind::W: return "W";
  case Kind::BW: return "BW";
  case Kind::FB: return "FB";
  }
  return "?";
}

std::string to_string(const Task& task, Notation notation) {
  if (notation == Notation::ppsim) return to_string(task);
  const auto letter = [&](Kind k) {
    switch (k) {
    case Kind::F: return 'F';
    case Kind::B: return notation == Notation::pytorch ? 'I' : 'B';
    case Kind::W: return 'W';
    case Kind::BW: return 'B';
    case Kind::FB: break;
    }
    return '?';
  };
  if (task.kind == Kind::FB)
    return fmt::format("({}F{};{}{}{})OVERLAP_F_B", task.stage, task.microbatch, task.stage2,
                       letter(task.kind2), task.microbatch2);
  return fmt::format("{}{}{}", task.stage, letter(task.kind), task.microbatch);
}

std::string to_string(const Task& task) {
  if (task.kind == Kind::FB) {
    return fmt::format("({}F{};{}{}{})", task.stage, task.microbatch, task.stage2,
                       kind_name(task.kind2), task.microbatch2);
  }
  return fmt::format("{}{}{}", task.stage, kind_name(task.kind), task.microbatch);
}

namespace {

// Parses `<stage><kind><microbatch>` for a single (non-FB) task.
bool parse_simple(std::string_view text, Kind& kind, int& stage, int& mb) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [p, ec] = std::from_chars(first, last, stage);
  if (ec != std::errc{} || p == first || p == last) return false;
  std::string_view rest(p, static_cast<std::size_t>(last - p));
  std::size_t klen = 1;
  if (rest.starts_with("BW")) {
    kind = Kind::BW;
    klen = 2;
  } else if (rest[0] == 'F') {
    kind = Kind::F;
  } else if (rest[0] == 'B') {
    kind = Kind::B;
  } else if (rest[0] == 'W') {
    kind = Kind::W;
  } else {
    return false;
  }
  const char* q = p + klen;
  if (q == last) return false;
  auto [r, ec2] = std::from_chars(q, last, mb);
  return ec2 == std::errc{} && r == last && stage >= 0 && mb >= 0;
}

} // namespace

Task parse_task(std::string_view text) {
  const auto fail = [&] {
    return ConfigError(fmt::format(
        "task '{}': expected <stage><F|B|W|BW><microbatch> such as 2F0, or (0F7;7B3) for an FB",
        text));
  };
  if (text.starts_with('(')) {
    if (!text.ends_with(')')) throw fail();
    auto inner = text.substr(1, text.size() - 2);
    auto semi = inner.find(';');
    if (semi == std::string_view::npos) throw fail();
    Task f, b;
    if (!parse_simple(inner.substr(0, semi), f.kind, f.stage, f.microbatch)) throw fail();
    if (!parse_simple(inner.substr(semi + 1), b.kind, b.stage, b.microbatch)) throw fail();
    if (f.kind != Kind::F || (b.kind != Kind::B && b.kind != Kind::BW)) throw fail();
    return Task::overlapped(f.stage, f.microbatch, b.kind, b.stage, b.microbatch);
  }
  Task t;
  if (!parse_simple(text, t.kind, t.stage, t.microbatch)) throw fail();
  return Task::make(t.kind, t.stage, t.microbatch);
}

} // namespace ppsim
