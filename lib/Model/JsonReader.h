//===- JsonReader.h - Typed JSON reading with path-named errors -*- C++ -*-===//
//
// Private to lib/Model. Reads members of a parsed JSON object as typed values
// and turns every mismatch into a one-line DescriptionError naming the source,
// the JSON path and the offending value.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_MODEL_JSONREADER_H
#define LS2C_LIB_MODEL_JSONREADER_H

#include "ls2c/Model/ModelDescription.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c::detail {

/// One JSON spelling of an enum value.
template <typename E> struct Spelling {
  E value;
  std::string_view name;
};

/// `"a", "b", "c"` for the messages that list allowed values.
template <typename E, size_t N>
std::string allowedList(const Spelling<E> (&table)[N]) {
  std::string s;
  for (const auto &e : table)
    s += (s.empty() ? "\"" : ", \"") + std::string(e.name) + "\"";
  return s;
}

/// `parent.key`, or `parent["key"]` when the key is not an identifier.
std::string childPath(const std::string &parent, const std::string &key);

/// Compact JSON text of a value for messages: printable, cut to
/// kMaxValueBytes on a character boundary.
std::string showValue(const nlohmann::json &v);

/// A known key to suggest for an unknown one: the closest within edit
/// distance 2, else one that is a prefix of the key or has it as a prefix.
std::optional<std::string_view>
suggestKey(std::string_view key, const std::vector<std::string_view> &known);

class Reader {
public:
  using json = nlohmann::json;

  explicit Reader(const std::string &source) : source_(source) {}

  [[noreturn]] void fail(const std::string &path,
                         const std::string &rule) const;
  [[noreturn]] void fail(const std::string &path, const json &value,
                         const std::string &rule) const;

  /// Rejects the first member of `obj` not in `known`, with a suggestion.
  void checkKeys(const json &obj, const std::string &path,
                 const std::vector<std::string_view> &known) const;

  /// The member `key` of `obj` (whose path is `path`), or nullptr. Also sets
  /// lastPath() to the member's path.
  const json *member(const json &obj, const std::string &path, const char *key);
  const std::string &lastPath() const { return lastPath_; }

  // Typed members: std::nullopt when absent, DescriptionError when the type
  // is wrong. Integers must be JSON integers that fit in int64; numbers must
  // be finite.
  std::optional<int64_t> integer(const json &obj, const std::string &path,
                                 const char *key);
  std::optional<double> number(const json &obj, const std::string &path,
                               const char *key);
  std::optional<bool> boolean(const json &obj, const std::string &path,
                              const char *key);
  std::optional<std::string> string(const json &obj, const std::string &path,
                                    const char *key);
  /// A member that must be an object, or nullptr.
  const json *object(const json &obj, const std::string &path, const char *key);
  /// `v` as a finite number; `path` names it in errors.
  double checkNumber(const json &v, const std::string &path) const;

  template <typename E, size_t N>
  std::optional<E> enumeration(const json &obj, const std::string &path,
                               const char *key, const Spelling<E> (&table)[N]) {
    std::optional<std::string> s = string(obj, path, key);
    if (!s)
      return std::nullopt;
    for (const auto &e : table)
      if (e.name == *s)
        return e.value;
    fail(lastPath_, json(*s),
         fmt::format("unknown {} (allowed: {})", key, allowedList(table)));
  }

private:
  const std::string &source_;
  std::string lastPath_;
};

} // namespace ls2c::detail

#endif // LS2C_LIB_MODEL_JSONREADER_H
