// Reading a whole input file, bounded, with errors that name it.
#pragma once

#include "sim/limits.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace ppsim {

/// The file's bytes; ConfigError `PATH: cannot open the WHAT (reason)` (or `cannot read`),
/// also when PATH is a directory, and `PATH: the WHAT is larger than N MiB` when it holds more
/// than `max_bytes`. Reads no further than that, so endless input (a FIFO, /dev/zero) fails
/// after max_bytes + 1 bytes instead of filling the memory.
[[nodiscard]] std::string read_text_file(const std::string& path, std::string_view what,
                                         std::size_t max_bytes = limits::kMaxInputBytes);

} // namespace ppsim
