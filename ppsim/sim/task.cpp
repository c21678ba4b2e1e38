// Text form of tasks.
#include "ppsim/sim/task.hpp"

#include "ppsim/sim/errors.hpp"

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

} // namespace ppsim
