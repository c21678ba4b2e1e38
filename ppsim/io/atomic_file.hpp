// Writing output files so that no reader ever sees half of one.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ppsim {

/// Writes through `fill` to a temporary file beside `path`, then renames it over `path`.
/// A symbolic link is followed: the temporary goes beside the link's final target and replaces
/// that, so the link stays a link. A path that names something other than a regular file (a
/// device such as /dev/null, a FIFO) is written directly. On any failure (including an
/// exception from `fill`) the temporary is removed, `path` is untouched, and ConfigError names
/// the path and the reason (`No space left on device`), or the exception propagates.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

/// Checks before any work is done that `path` can be written: not empty, not a directory, and
/// its directory (after following links) exists and is writable. ConfigError naming `what`
/// (`--trace`) and the reason otherwise. `-` (standard output) always passes.
void check_output_path(const std::string& path, std::string_view what);

} // namespace ppsim
