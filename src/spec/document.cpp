#include "spec/document.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>

#include "spec/strict_json.h"
#include "spec/text.h"

namespace tessera {

namespace {

bool IsPlainInt(const std::string& s) {
  static const std::regex kInt(R"([-+]?[0-9]+)");
  return std::regex_match(s, kInt);
}

bool IsPlainFloat(const std::string& s) {
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  return std::regex_match(s, kFloat);
}

nlohmann::json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsPlainInt(s)) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end != nullptr && *end == '\0') return static_cast<std::int64_t>(v);
    return std::strtod(s.c_str(), nullptr);  // out of int64 range: keep the magnitude
  }
  if (IsPlainFloat(s)) return std::strtod(s.c_str(), nullptr);
  if (s == ".inf" || s == ".Inf" || s == "+.inf") return HUGE_VAL;
  if (s == "-.inf" || s == "-.Inf") return -HUGE_VAL;
  if (s == ".nan" || s == ".NaN") return NAN;
  return s;
}

std::string Where(const YAML::Mark& m) {
  if (m.line < 0) return "";
  return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1) + ": ";
}

// Why a plain scalar cannot be read as the number it spells, or nullopt: an integer outside
// the signed 64-bit range, or a number that is not a finite double (1e309, .inf, .nan).
std::optional<std::string> NumberProblem(const std::string& s) {
  const nlohmann::json v = PlainScalar(s);
  if (IsPlainInt(s) && !v.is_number_integer())
    return "the integer " + Quote(s) + " is out of range";
  if (v.is_number_float() && !std::isfinite(v.get<double>())) {
    return "the number " + Quote(s) + " is out of range (not a finite number)";
  }
  return std::nullopt;
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

struct Converter {
  std::size_t nodes = 0;

  // `path` names the value for errors: "spec.roles[1].workers"; empty at the root.
  Result<nlohmann::json> Convert(const YAML::Node& n, int depth, const std::string& path) {
    if (++nodes > kMaxDocumentNodes) {
      return InvalidArgument("document: more than " + std::to_string(kMaxDocumentNodes) +
                             " values (after expanding aliases)");
    }
    if (depth > kMaxDocumentDepth) {
      return InvalidArgument(Where(n.Mark()) + "document: nested deeper than " +
                             std::to_string(kMaxDocumentDepth) + " levels");
    }
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return nlohmann::json(nullptr);
      case YAML::NodeType::Scalar: {
        const std::string& tag = n.Tag();
        const std::string& s = n.Scalar();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") return nlohmann::json(s);
        if (auto problem = NumberProblem(s)) {
          return InvalidArgument(Where(n.Mark()) + (path.empty() ? "document" : path) + ": " +
                                 *problem);
        }
        return PlainScalar(s);
      }
      case YAML::NodeType::Sequence: {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& item : n) {
          auto v = Convert(item, depth + 1, path + "[" + std::to_string(arr.size()) + "]");
          if (!v) return v;
          arr.push_back(std::move(*v));
        }
        return arr;
      }
      case YAML::NodeType::Map: {
        nlohmann::json obj = nlohmann::json::object();
        for (const auto& kv : n) {
          if (!kv.first.IsScalar()) {
            return InvalidArgument(Where(kv.first.Mark()) + "document: keys must be strings");
          }
          const std::string key = kv.first.Scalar();
          if (obj.contains(key)) {
            return InvalidArgument(Where(kv.first.Mark()) + Child(path, key) +
                                   ": duplicate key (a key may appear once in a mapping)");
          }
          auto v = Convert(kv.second, depth + 1, Child(path, key));
          if (!v) return v;
          obj[key] = std::move(*v);
        }
        return obj;
      }
    }
    return nlohmann::json(nullptr);
  }
};

void Emit(YAML::Emitter& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        out << YAML::Key << k << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& item : v) Emit(out, item);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      // Quote strings that would read back as another type.
      if (PlainScalar(s).is_string() && !s.empty()) {
        out << s;
      } else {
        out << YAML::DoubleQuoted << s;
      }
      break;
    }
    case nlohmann::json::value_t::boolean:
      out << (v.get<bool>() ? "true" : "false");
      break;
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      break;
    case nlohmann::json::value_t::number_integer:
      out << v.get<std::int64_t>();
      break;
    case nlohmann::json::value_t::number_unsigned:
      out << v.get<std::uint64_t>();
      break;
    default:
      out << v.dump();
      break;
  }
}

}  // namespace

Result<nlohmann::json> ParseDocument(std::string_view text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return InvalidArgument("document: empty");
  if (text[first] == '{' || text[first] == '[') {
    auto doc = ParseStrictJson(text);
    // Syntax errors read "document: invalid JSON: ..."; the others start with the field.
    if (!doc && doc.error().message.starts_with("invalid JSON")) {
      return InvalidArgument("document: " + doc.error().message);
    }
    return doc;
  }
  try {
    YAML::Node root = YAML::Load(std::string(text));
    Converter c;
    return c.Convert(root, 0, "");
  } catch (const YAML::Exception& e) {
    return InvalidArgument(Where(e.mark) + "document: invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("document: invalid YAML: ") + e.what());
  }
}

std::vector<std::string> SplitYamlDocuments(std::string_view text) {
  std::vector<std::string> docs;
  std::string current;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos + 1);
    std::string_view bare = line;
    while (!bare.empty() && (bare.back() == '\n' || bare.back() == '\r' || bare.back() == ' ')) {
      bare.remove_suffix(1);
    }
    if (bare == "---" || bare == "...") {
      docs.push_back(std::move(current));
      current.clear();
    } else {
      current += line;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  docs.push_back(std::move(current));
  std::vector<std::string> out;
  for (auto& d : docs) {
    bool blank = true;
    std::size_t p = 0;
    while (p < d.size()) {
      std::size_t e = d.find('\n', p);
      std::string_view l(d.data() + p, (e == std::string::npos ? d.size() : e) - p);
      auto f = l.find_first_not_of(" \t\r");
      if (f != std::string_view::npos && l[f] != '#') {
        blank = false;
        break;
      }
      if (e == std::string::npos) break;
      p = e + 1;
    }
    if (!blank) out.push_back(std::move(d));
  }
  return out;
}

std::string ToYaml(const nlohmann::json& value) {
  try {
    YAML::Emitter out;
    Emit(out, value);
    return std::string(out.c_str()) + "\n";
  } catch (const std::exception&) {
    return DumpJson(value, 2) + "\n";
  }
}

std::string DumpJson(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessera
