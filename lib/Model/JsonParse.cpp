//===- JsonParse.cpp - JSON text to a checked DOM -------------------------===//

#include "JsonParse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ls2c::detail {

using json = nlohmann::json;

namespace {

// Byte offset of the first array or object opened deeper than `maxDepth`, or
// nullopt. Brackets inside strings do not count. On valid JSON this is exact;
// on invalid JSON it is exact up to the first syntax error, which is all the
// parser would read.
std::optional<size_t> tooDeepAt(std::string_view text, int maxDepth) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character cannot end the string
      else if (c == '"')
        inString = false;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      break;
    case '[':
    case '{':
      if (++depth > maxDepth)
        return i;
      break;
    case ']':
    case '}':
      depth = std::max(depth - 1, 0); // mismatches are the parser's to report
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

// Builds the DOM from SAX events, as nlohmann's own builder does, and stops
// at the first duplicate key (nlohmann's would keep the last one silently),
// at the first value past kMaxJsonValues, or at a syntax error. Each open
// container is one frame; paths are made only for the error. Linear: no work
// per event depends on the size of what was read before (nlohmann's parser
// callback, used before, was quadratic on arrays of objects).
class DomBuilder final : public json::json_sax_t {
public:
  json &root() { return root_; }
  const std::string &duplicatePath() const { return duplicatePath_; }
  bool tooManyValues() const { return values_ > kMaxJsonValues; }
  const std::optional<std::string> &syntaxError() const { return syntax_; }

  bool null() override { return put(nullptr) != nullptr; }
  bool boolean(bool v) override { return put(v) != nullptr; }
  bool number_integer(number_integer_t v) override { return put(v) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override {
    return put(v) != nullptr;
  }
  bool number_float(number_float_t v, const string_t &) override {
    return put(v) != nullptr;
  }
  bool string(string_t &v) override { return put(std::move(v)) != nullptr; }
  bool binary(binary_t &) override { return false; } // not in JSON text

  bool start_object(std::size_t) override {
    json *v = put(json::object());
    if (v)
      frames_.push_back({v, nullptr});
    return v != nullptr;
  }
  bool key(string_t &k) override {
    Frame &f = frames_.back();
    auto [it, inserted] =
        f.value->get_ref<json::object_t &>().emplace(std::move(k), nullptr);
    f.key = &it->first;
    if (!inserted) {
      duplicatePath_ = path();
      return false;
    }
    slot_ = &it->second;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    json *v = put(json::array());
    if (v)
      frames_.push_back({v, nullptr});
    return v != nullptr;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }

  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &e) override {
    // what() is "[json.exception.parse_error.101] parse error at line L,
    // column C: ..."; keep from "parse error" on and add the byte offset.
    std::string msg = e.what();
    if (const auto *pe = dynamic_cast<const json::parse_error *>(&e)) {
      size_t at = msg.find("parse error");
      syntax_ = fmt::format("not valid JSON (byte {}): {}", pe->byte,
                            at == std::string::npos ? msg : msg.substr(at));
    } else {
      // 406: a number literal that overflows double (1e999).
      size_t at = msg.find("] ");
      syntax_ = fmt::format("not valid JSON: {}{}",
                            at == std::string::npos ? msg : msg.substr(at + 2),
                            e.id == 406 ? " (numbers must be finite)" : "");
    }
    return false;
  }

private:
  struct Frame {
    json *value;
    const std::string *key; // objects: the member being read
  };

  // Stores `v` where the parser is and returns it, or nullptr past
  // kMaxJsonValues. Containers stay where they are put: array elements are
  // appended only to the innermost open array, and object members live in
  // std::map nodes.
  template <typename V> json *put(V &&v) {
    if (++values_ > kMaxJsonValues)
      return nullptr;
    if (frames_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json &top = *frames_.back().value;
    if (top.is_array()) {
      top.get_ref<json::array_t &>().emplace_back(std::forward<V>(v));
      return &top.back();
    }
    *slot_ = json(std::forward<V>(v));
    return slot_;
  }

  // JSON path of the current key of the innermost object.
  std::string path() const {
    std::string p = "$";
    for (const Frame &f : frames_) {
      if (f.value->is_array())
        p = fmt::format("{}[{}]", p, f.value->size() - 1);
      else
        p = childPath(p, *f.key);
    }
    return p;
  }

  json root_;
  std::vector<Frame> frames_;
  json *slot_ = nullptr; // objects: where the value of the last key goes
  size_t values_ = 0;
  std::string duplicatePath_;
  std::optional<std::string> syntax_;
};

} // namespace

json parseJsonObject(std::string_view text, const Reader &r) {
  if (std::all_of(text.begin(), text.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c));
      }))
    r.fail("", "file is empty");
  if (const void *nul = std::memchr(text.data(), '\0', text.size()))
    r.fail("", fmt::format("contains a NUL byte at offset {}",
                           static_cast<const char *>(nul) - text.data()));
  if (std::optional<size_t> at = tooDeepAt(text, kMaxJsonDepth))
    r.fail("", fmt::format("arrays and objects nested deeper than {} levels "
                           "at offset {} (a description needs 3)",
                           kMaxJsonDepth, *at));

  DomBuilder dom;
  if (!json::sax_parse(text.begin(), text.end(), &dom)) {
    if (dom.syntaxError())
      r.fail("", *dom.syntaxError());
    if (dom.tooManyValues())
      r.fail("", fmt::format("holds more than {} JSON values (a description "
                             "needs fewer than 100)",
                             kMaxJsonValues));
    r.fail(dom.duplicatePath(),
           "duplicate key (each key may appear once per object)");
  }
  json &root = dom.root();
  if (!root.is_object())
    r.fail("$", root, "top level must be a JSON object");
  return std::move(root);
}

} // namespace ls2c::detail
