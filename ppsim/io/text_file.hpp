// Reading a whole input file, bounded in bytes and in waiting, with errors that name it.
#pragma once

#include "ppsim/sim/limits.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace ppsim {

/// The file's bytes; ConfigError `PATH: cannot open the WHAT (reason)` (or `cannot read`),
/// also when PATH is a directory or a block device, and `PATH: the WHAT is larger than N MiB`
/// when it holds more than `max_bytes`. Reads no further than that, so endless input (a FIFO,
/// /dev/zero) fails after max_bytes + 1 bytes instead of filling the memory. The open never
/// blocks: a FIFO, pipe or character device is read without blocking for at most `wait_ms`
/// in all (a FIFO that nothing writes is an error after that time, not a hang).
[[nodiscard]] std::string read_text_file(const std::string& path, std::string_view what,
                                         std::size_t max_bytes = limits::kMaxInputBytes,
                                         int wait_ms = limits::kMaxStreamWaitMs);

} // namespace ppsim
