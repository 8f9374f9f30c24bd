// The error of one API call: an Error plus, for specs, the errors of each field. The HTTP
// layer renders it as {"error": {code, message, details}}.
#pragma once

#include <expected>
#include <vector>

#include "core/status.h"
#include "spec/job_spec.h"

namespace tessera {

struct ApiError {
  Error error;
  std::vector<FieldError> fields;
};
template <typename T>
using ApiResult = std::expected<T, ApiError>;

inline ApiError ApiErr(std::unexpected<Error> e) { return ApiError{std::move(e.error()), {}}; }
inline ApiError ApiErr(Error e) { return ApiError{std::move(e), {}}; }

}  // namespace tessera
