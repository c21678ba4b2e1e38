// Reading a whole input file, with errors that name it.
#pragma once

#include <string>
#include <string_view>

namespace ppsim {

/// The file's bytes; ConfigError `PATH: cannot open the WHAT` (or `cannot read`) otherwise,
/// including when PATH is a directory.
[[nodiscard]] std::string read_text_file(const std::string& path, std::string_view what);

} // namespace ppsim
