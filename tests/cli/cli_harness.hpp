// Test helpers for the command-line tests: run_cli in-process, scratch directories, file text.
#pragma once

#include "cli/cli.hpp"
#include "tests/test_helpers.hpp"
#include "tests/viz/trace_rules.hpp"

#include <catch2/catch.hpp>
#include <exception>

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace ppsim::test {

/// What one run of the command line returned: its exit code, stdout and stderr.
struct CliResult {
  int code;
  std::string out;
  std::string err;
};

/// Runs `ppsim args...` in-process through run_cli and captures both streams.
inline CliResult run_ppsim(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

/// A fresh empty scratch directory, removed with everything in it when the object goes away.
/// Its name holds the prefix, the process id and a per-process counter, so tests never share one.
class TempDir {
public:
  explicit TempDir(const std::string& prefix) : path_(make_name(prefix)) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);  // a leftover of an earlier process with this pid
    std::filesystem::create_directories(path_);
  }
  /// Before the directory goes, every Chrome trace a test wrote in it is checked against the
  /// rules of every trace (tests/viz/trace_rules.hpp).
  ~TempDir() {
    if (std::uncaught_exceptions() == 0) check_traces();
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// Writes `text` to the file `name` in the directory and returns the file's path.
  std::string file(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  /// The path of `name` in the directory (the file need not exist).
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  /// How many entries the directory holds.
  [[nodiscard]] std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(std::filesystem::directory_iterator(path_), {}));
  }

private:
  void check_traces() const noexcept {
    try {
      std::error_code ec;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path_, ec)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (text.find("\"traceEvents\"") == std::string::npos) continue;
        const auto doc = nlohmann::json::parse(text, nullptr, false);
        if (doc.is_discarded()) continue;  // not ours to judge: a test's deliberately bad file
        const auto violations = trace_rule_violations(doc);
        const std::string file = entry.path().filename().string();
        CAPTURE(file, violations);
        CHECK(violations.empty());
      }
    } catch (...) {
      FAIL_CHECK("the traces of a scratch directory could not be checked");
    }
  }

  static std::filesystem::path make_name(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return std::filesystem::temp_directory_path() /
           ("ppsim-" + prefix + "-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter++));
  }
  std::filesystem::path path_;
};

/// The whole content of a file, byte for byte (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `base` followed by `extra`: a command's fixed arguments and a test's own.
inline std::vector<std::string> args_with(std::vector<std::string> base,
                                          const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

/// A path inside the source tree, e.g. source_path("data/costs/example-mlp.json").
inline std::string source_path(const std::string& relative) {
  return std::string(PPSIM_SOURCE_DIR) + "/" + relative;
}

} // namespace ppsim::test
