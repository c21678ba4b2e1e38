// Numbers for people: times, bytes and counts rounded to the digits that mean something
// (`18944.7 ms`, `40.0 MiB`, `6.17B`). JSON keeps full precision; these are for tables.
#pragma once

#include "ppsim/sim/time.hpp"

#include <string>

namespace ppsim {

/// A plain number: 1 decimal from 100, 2 from 10, 3 from 1, else 4 significant digits, never
/// an exponent; trailing zeros dropped, so integers stay integers (54, 27.33, 18944.7, 0.0015).
[[nodiscard]] std::string human_number(double x);
/// Milliseconds, rounded as human_number (without the unit): 54, 27.33, 18944.7, 0.0015.
[[nodiscard]] std::string human_ms(Ticks t);
/// A fraction as a percentage with two decimals: 0.1111 -> `11.11%`.
[[nodiscard]] std::string human_percent(double fraction);
/// Bytes in B, KiB, MiB, GiB or TiB with one decimal (`40.0 MiB`).
[[nodiscard]] std::string human_bytes(double bytes);
/// A count with K, M, B or T and three significant digits (`1.48B`, `175B`).
[[nodiscard]] std::string human_count(double n);

} // namespace ppsim
