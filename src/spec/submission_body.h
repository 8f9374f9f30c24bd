// What `tessera submit` sends for a job document. The controller reads JSON without a YAML
// parser (a several times cheaper submission) and validates the same tree either way, with the
// same errors, so a document that parses goes as JSON.
#pragma once

#include <string>

namespace tessera {

// The document `text` as JSON, with a relative spec.workingDir taken against `base_dir`
// (WithAbsoluteWorkingDir's rule), when it parses as an object; `text` unchanged when it does
// not parse or ParseJobSpec refuses it before parsing (too large, not UTF-8, a NUL byte), so
// that the controller's error, with its line and column, is the one the user sees.
std::string SubmissionBody(const std::string& text, const std::string& base_dir);

}  // namespace tessera
