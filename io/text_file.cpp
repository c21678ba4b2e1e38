// Whole-file reads for the loaders.
#include "io/text_file.hpp"

#include "sim/errors.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace ppsim {

std::string read_text_file(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(fmt::format("{}: is a directory, not a {}", path, what));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open the {}", path, what));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(fmt::format("{}: cannot read the {}", path, what));
  return text.str();
}

} // namespace ppsim
