#include "spec/strict_json.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "spec/document.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// A SAX handler that builds the tree itself, so it knows the path of every value it sees.
class StrictBuilder {
 public:
  explicit StrictBuilder(std::string_view text) : text_(text) {}

  bool null() { return Add(nullptr); }
  bool boolean(bool v) { return Add(v); }
  bool number_integer(Json::number_integer_t v) { return Add(v); }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Fail("the integer " + Quote(std::to_string(v)) + " is out of range");
    }
    return Add(static_cast<std::int64_t>(v));
  }
  bool number_float(Json::number_float_t v, const Json::string_t& literal) {
    // An integer literal arrives here only when it overflowed 64 bits.
    if (literal.find_first_of(".eE") == std::string::npos) {
      return Fail("the integer " + Quote(literal) + " is out of range");
    }
    return Add(v);
  }
  bool string(Json::string_t& v) { return Add(std::move(v)); }
  bool binary(Json::binary_t&) { return Fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool key(Json::string_t& k) {
    Frame& top = stack_.back();
    top.key = std::move(k);
    if (top.value.contains(top.key)) {
      error_ = Path() + ": duplicate key (a key may appear once in an object)";
      return false;
    }
    return true;
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range: a float literal past the double range
      error_ = Path() + ": the number " + Quote(token) + " is out of range (" +
               LineColumnOf(text_, position) + ")";
      return false;
    }
    const std::string what = e.what();
    const auto at = what.find("parse error");
    error_ = "invalid JSON: " + (at == std::string::npos ? what : what.substr(at));
    return false;
  }

  Result<Json> Take() {
    if (!error_.empty()) return InvalidArgument(error_);
    return std::move(root_);
  }

 private:
  struct Frame {
    Json value;
    std::string key;  // objects: the key whose value comes next
  };

  bool Add(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (Frame& top = stack_.back(); top.value.is_object()) {
      top.value.emplace(std::move(top.key), std::move(v));
    } else {
      top.value.push_back(std::move(v));
    }
    return true;
  }
  bool Open(Json container) {
    if (static_cast<int>(stack_.size()) >= kMaxDocumentDepth) {
      return Fail("nested deeper than " + std::to_string(kMaxDocumentDepth) + " levels");
    }
    stack_.push_back({std::move(container), {}});
    return true;
  }
  bool Close() {
    Json done = std::move(stack_.back().value);
    stack_.pop_back();
    return Add(std::move(done));
  }
  // "spec.roles[1].workers": where the next value goes.
  std::string Path() const {
    std::string path;
    for (const Frame& f : stack_) {
      if (f.value.is_object()) {
        path += (path.empty() ? "" : ".") + f.key;
      } else {
        path += "[" + std::to_string(f.value.size()) + "]";
      }
    }
    return path.empty() ? "document" : path;
  }
  bool Fail(const std::string& reason) {
    error_ = Path() + ": " + reason;
    return false;
  }

  std::string_view text_;
  std::vector<Frame> stack_;
  Json root_;
  std::string error_;
};

}  // namespace

Result<Json> ParseStrictJson(std::string_view text) {
  StrictBuilder builder(text);
  try {
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (
      const std::exception& e) {  // the SAX parser reports through parse_error; belt and braces
    return InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  return builder.Take();
}

}  // namespace tessera
