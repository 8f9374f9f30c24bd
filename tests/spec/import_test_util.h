// Helpers for the importers' tests: parse YAML, import it, and look at notes and refusals.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "spec/document.h"
#include "spec/imported_spec.h"

namespace tessera::testing {

inline nlohmann::json Yaml(const std::string& text) {
  auto doc = ParseDocument(text);
  EXPECT_TRUE(doc) << doc.error().message;
  return doc ? *doc : nlohmann::json();
}

// The imported job; fails the test when the import was refused.
inline ImportedJob Imported(const std::string& yaml, const ImportOptions& options = {}) {
  auto job = ImportJobDocument(Yaml(yaml), options);
  EXPECT_TRUE(job) << job.error().message;
  return job ? *job : ImportedJob{};
}

// The refusal's message; fails the test when the import succeeded.
inline std::string Refusal(const std::string& yaml, const ImportOptions& options = {}) {
  auto job = ImportJobDocument(Yaml(yaml), options);
  EXPECT_FALSE(job) << "imported although it should be refused";
  return job ? std::string() : job.error().message;
}

// The note for `field`, or "" when there is none.
inline std::string NoteFor(const ImportedJob& job, const std::string& field) {
  for (const auto& n : job.notes) {
    if (n.field == field) return n.ToString();
  }
  return "";
}

}  // namespace tessera::testing
