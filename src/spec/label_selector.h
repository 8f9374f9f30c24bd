// Labels (metadata.labels) and label selectors in Kubernetes' syntax, so that `tessera get
// jobs -l team=nlp,tier!=test` reads as `kubectl get -l` does:
//   k=v  k==v  k!=v  k in (a,b)  k notin (a,b)  k  !k    joined by ',' (all must hold).
// Keys and values follow Kubernetes' rules for label keys and values (an optional DNS-subdomain
// prefix and '/', a name of at most 63 characters of [A-Za-z0-9-_.] starting and ending
// alphanumeric; values the same or empty).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera {

using Labels = std::map<std::string, std::string>;

// "" when `key` is a valid label key, else why not.
std::string LabelKeyProblem(const std::string& key);
// "" when `value` is a valid label value, else why not.
std::string LabelValueProblem(const std::string& value);

enum class LabelOperator { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };

struct LabelRequirement {
  std::string key;
  LabelOperator op = LabelOperator::kExists;
  std::vector<std::string> values;  // one for =/!=, one or more for in/notin, none otherwise
  bool operator==(const LabelRequirement&) const = default;
};

class LabelSelector {
 public:
  // Every requirement of `text`; an empty text selects everything. Errors name the requirement
  // and the reason.
  static Result<LabelSelector> Parse(const std::string& text);

  bool Matches(const Labels& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

 private:
  std::vector<LabelRequirement> requirements_;
};

}  // namespace tessera
