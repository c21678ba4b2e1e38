// ix(): a non-negative int (or long long) index as the std::size_t that containers take. One
// helper for the whole project, so that -Wsign-conversion stays on and every cast reads alike.
#pragma once

#include <cstddef>

namespace ppsim {

/// `v[ix(i)]` for an int i >= 0 (the caller's invariant: ids, counts and positions are never
/// negative where they index).
[[nodiscard]] constexpr std::size_t ix(int i) noexcept { return static_cast<std::size_t>(i); }
[[nodiscard]] constexpr std::size_t ix(long long i) noexcept { return static_cast<std::size_t>(i); }

} // namespace ppsim
