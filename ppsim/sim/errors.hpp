// Error types of the library; run_cli maps each to an exit code of DESIGN.md.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

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

/// A device needs more bytes than it has (weights, gradients, optimizer state and activations):
/// an infeasible request (exit 5) that no activation-memory limit fixes.
class OutOfMemoryError : public InfeasibleError {
public:
  using InfeasibleError::InfeasibleError;
};

/// A real run failed (exit 6): a rank died or hung, MPI could not start, or the gradients
/// differ from the reference. Not a problem of the input.
class ExecutionError : public Error {
public:
  using Error::Error;
};

/// Runs fn(); an Error it throws is rethrown as the same type with `context: ` before its
/// message, so the exit code stays what the error says.
template <class Fn> decltype(auto) with_context(std::string_view context, Fn&& fn) {
  const auto message = [&](const std::exception& e) {
    return std::string(context) + ": " + e.what();
  };
  try {
    return fn();
  } catch (const ConfigError& e) {
    throw ConfigError(message(e));
  } catch (const ScheduleError& e) {
    throw ScheduleError(message(e));
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(message(e));
  } catch (const InfeasibleError& e) {
    throw InfeasibleError(message(e));
  } catch (const ExecutionError& e) {
    throw ExecutionError(message(e));
  }
}

} // namespace ppsim
