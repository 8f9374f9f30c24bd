#include "spec/label_selector.h"

#include <algorithm>
#include <cctype>

namespace tessera {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A label name or value body: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63.
std::string NameProblem(const std::string& s, const char* what) {
  if (s.size() > 63) return std::string(what) + " is longer than 63 characters";
  if (!Alnum(s.front()) || !Alnum(s.back()))
    return std::string(what) + " must start and end with a letter or digit";
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.')
      return std::string(what) + " may hold only letters, digits, '-', '_' and '.'";
  }
  return "";
}

// A DNS subdomain (RFC 1123): lower-case labels of [a-z0-9-] joined by '.', at most 253.
std::string PrefixProblem(const std::string& s) {
  if (s.empty() || s.size() > 253) return "the prefix must be 1 to 253 characters";
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t dot = std::min(s.find('.', start), s.size());
    const std::string part = s.substr(start, dot - start);
    if (part.empty() || part.size() > 63 || part.front() == '-' || part.back() == '-' ||
        !std::all_of(part.begin(), part.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
        })) {
      return "the prefix must be a DNS subdomain (lower-case letters, digits, '-' and '.')";
    }
    start = dot + 1;
  }
  return "";
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Splits at the commas outside parentheses: "a in (x,y),b" -> {"a in (x,y)", "b"}.
Result<std::vector<std::string>> SplitRequirements(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return InvalidArgument("label selector: unbalanced ')'");
    if (c == ',' && depth == 0) {
      out.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) return InvalidArgument("label selector: unclosed '('");
  out.push_back(Trim(cur));
  return out;
}

Status CheckKey(const std::string& req, const std::string& key) {
  if (auto why = LabelKeyProblem(key); !why.empty())
    return InvalidArgument("label selector " + req + ": key " + key + ": " + why);
  return {};
}

Result<LabelRequirement> ParseSet(const std::string& req, const std::string& key, LabelOperator op,
                                  const std::string& rest) {
  const std::string list = Trim(rest);
  if (list.size() < 2 || list.front() != '(' || list.back() != ')')
    return InvalidArgument("label selector " + req + ": expected a list in parentheses");
  LabelRequirement r{key, op, {}};
  std::string body = list.substr(1, list.size() - 2);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(body.find(',', start), body.size());
    const std::string v = Trim(body.substr(start, comma - start));
    if (auto why = LabelValueProblem(v); !why.empty())
      return InvalidArgument("label selector " + req + ": value " + v + ": " + why);
    r.values.push_back(v);
    if (comma == body.size()) break;
    start = comma + 1;
  }
  if (auto s = CheckKey(req, key); !s) return std::unexpected(s.error());
  return r;
}

Result<LabelRequirement> ParseRequirement(const std::string& req) {
  if (req.empty()) return InvalidArgument("label selector: an empty requirement (a stray ',')");
  if (req.front() == '!') {
    const std::string key = Trim(req.substr(1));
    if (auto s = CheckKey(req, key); !s) return std::unexpected(s.error());
    return LabelRequirement{key, LabelOperator::kDoesNotExist, {}};
  }
  for (auto [word, op] :
       {std::pair{" notin ", LabelOperator::kNotIn}, std::pair{" in ", LabelOperator::kIn}}) {
    if (auto at = req.find(word); at != std::string::npos)
      return ParseSet(req, Trim(req.substr(0, at)), op, req.substr(at + std::string(word).size()));
  }
  LabelOperator op = LabelOperator::kEquals;
  std::size_t at = req.find("!="), width = 2;
  if (at != std::string::npos) {
    op = LabelOperator::kNotEquals;
  } else if (at = req.find("=="); at == std::string::npos) {
    at = req.find('='), width = 1;
  }
  if (at == std::string::npos) {
    if (auto s = CheckKey(req, req); !s) return std::unexpected(s.error());
    return LabelRequirement{req, LabelOperator::kExists, {}};
  }
  const std::string key = Trim(req.substr(0, at)), value = Trim(req.substr(at + width));
  if (auto s = CheckKey(req, key); !s) return std::unexpected(s.error());
  if (auto why = LabelValueProblem(value); !why.empty())
    return InvalidArgument("label selector " + req + ": value " + value + ": " + why);
  return LabelRequirement{key, op, {value}};
}

}  // namespace

std::string LabelKeyProblem(const std::string& key) {
  if (key.empty()) return "must not be empty";
  const auto slash = key.find('/');
  if (slash == std::string::npos) return NameProblem(key, "the name");
  if (auto why = PrefixProblem(key.substr(0, slash)); !why.empty()) return why;
  const std::string name = key.substr(slash + 1);
  if (name.empty()) return "the name after '/' must not be empty";
  return NameProblem(name, "the name");
}

std::string LabelValueProblem(const std::string& value) {
  return value.empty() ? "" : NameProblem(value, "a value");
}

Result<LabelSelector> LabelSelector::Parse(const std::string& text) {
  LabelSelector sel;
  if (Trim(text).empty()) return sel;
  auto parts = SplitRequirements(text);
  if (!parts) return std::unexpected(parts.error());
  for (const auto& p : *parts) {
    auto r = ParseRequirement(p);
    if (!r) return std::unexpected(r.error());
    sel.requirements_.push_back(std::move(*r));
  }
  return sel;
}

bool LabelSelector::Matches(const Labels& labels) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const LabelRequirement& r) {
    const auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const auto listed = [&] {
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    };
    switch (r.op) {
      case LabelOperator::kEquals:
        return has && it->second == r.values[0];
      case LabelOperator::kNotEquals:
        return !has || it->second != r.values[0];
      case LabelOperator::kIn:
        return listed();
      case LabelOperator::kNotIn:
        return !listed();
      case LabelOperator::kExists:
        return has;
      case LabelOperator::kDoesNotExist:
        return !has;
    }
    return false;
  });
}

}  // namespace tessera
