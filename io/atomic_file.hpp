// Writing output files so that no reader ever sees half of one.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace ppsim {

/// Writes through `fill` to a temporary file beside `path`, then renames it over `path`.
/// On any failure (including an exception from `fill`) the temporary is removed, `path` is
/// untouched, and ConfigError names the path (or the exception propagates).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

} // namespace ppsim
