// Errors as values. `Error` names what was wrong (a field, a file:line:column) and why;
// `Result<T>` is std::expected<T, Error>. Nothing in Tessera throws across a module boundary.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace tessera {

struct Error {
  enum class Code { kInvalidArgument, kNotFound, kAlreadyExists, kFailedPrecondition, kIo, kInternal };
  Code code = Code::kInvalidArgument;
  std::string message;  // human-readable; starts with the field or location it concerns
};

template <typename T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> InvalidArgument(std::string message) {
  return std::unexpected(Error{Error::Code::kInvalidArgument, std::move(message)});
}
inline std::unexpected<Error> NotFound(std::string message) {
  return std::unexpected(Error{Error::Code::kNotFound, std::move(message)});
}
inline std::unexpected<Error> AlreadyExists(std::string message) {
  return std::unexpected(Error{Error::Code::kAlreadyExists, std::move(message)});
}
inline std::unexpected<Error> FailedPrecondition(std::string message) {
  return std::unexpected(Error{Error::Code::kFailedPrecondition, std::move(message)});
}
inline std::unexpected<Error> IoError(std::string message) {
  return std::unexpected(Error{Error::Code::kIo, std::move(message)});
}
inline std::unexpected<Error> Internal(std::string message) {
  return std::unexpected(Error{Error::Code::kInternal, std::move(message)});
}

}  // namespace tessera
