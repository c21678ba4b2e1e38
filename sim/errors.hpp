// Error types of the library; run_cli maps each to an exit code of DESIGN.md.
#pragma once

#include <stdexcept>
#include <string>

namespace ppsim {

/// Base of every error ppsim throws on purpose; the message says where and what.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Bad input: a file, a JSON document, a value out of range (exit code 3).
class ConfigError : public Error {
public:
  using Error::Error;
};

/// An invalid or deadlocking schedule (exit code 4).
class ScheduleError : public Error {
public:
  using Error::Error;
};

/// A request that cannot be met, such as a memory limit below what a schedule needs (exit 5).
class InfeasibleError : public Error {
public:
  using Error::Error;
};

} // namespace ppsim
