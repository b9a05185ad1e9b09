//===- JsonReader.cpp - Typed JSON reading with path-named errors ---------===//

#include "JsonReader.h"
#include "ForeignKeyNames.h"
#include "MessageText.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace ls2c::detail {

using json = nlohmann::json;

namespace {

bool isIdentifier(const std::string &key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0])))
    return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Invalid UTF-8 cannot come out of nlohmann's parser, but a hand-made value
// could hold it; messages must not throw.
std::string dumpCompact(const json &v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

} // namespace

std::string childPath(const std::string &parent, const std::string &key) {
  if (isIdentifier(key))
    return parent + "." + key;
  return parent + "[" + dumpCompact(json(key)) + "]";
}

std::string showValue(const json &v) {
  // dump escapes control characters in strings and replaces broken UTF-8;
  // printable cuts on a character boundary. Parsed values nest at most
  // kMaxJsonDepth deep, so dump's recursion is bounded.
  return printable(dumpCompact(v), kMaxValueBytes);
}

std::optional<std::string_view>
suggestKey(std::string_view key, const std::vector<std::string_view> &known) {
  std::optional<std::string_view> best;
  size_t bestDist = 3;
  for (std::string_view k : known) {
    // The distance is at least the difference in length; skipping those also
    // keeps a megabyte-long key from costing a megabyte of work per known key.
    if (std::max(key.size(), k.size()) - std::min(key.size(), k.size()) >= 3)
      continue;
    size_t d = editDistance(key, k);
    // d < key.size(): a one-letter key is "close" to every two-letter one.
    if (d < bestDist && d < key.size()) {
      best = k;
      bestDist = d;
    }
  }
  if (best || key.size() < 3)
    return best;
  // Prefixes catch Hugging Face spellings: "hidden_size" -> "hidden"; the
  // longest shared one wins ("activation_checkpoint" ->
  // "activation_checkpointing", not "activation").
  size_t bestShared = 0;
  for (std::string_view k : known)
    if (k.size() >= 3 &&
        (k.substr(0, key.size()) == key || key.substr(0, k.size()) == k) &&
        std::min(k.size(), key.size()) > bestShared) {
      best = k;
      bestShared = std::min(k.size(), key.size());
    }
  return best;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

void Reader::fail(const std::string &path, const std::string &rule) const {
  throw DescriptionError(source_, path, rule);
}

void Reader::fail(const std::string &path, const json &value,
                  const std::string &rule) const {
  throw DescriptionError(source_, path, showValue(value) + ": " + rule);
}

void Reader::checkKeys(const json &obj, const std::string &path,
                       const std::vector<std::string_view> &known) const {
  for (const auto &item : obj.items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end())
      continue;
    std::string rule = "unknown key";
    std::vector<std::string_view> ours;
    for (std::string_view k : keysForForeignName(item.key()))
      if (std::find(known.begin(), known.end(), k) != known.end())
        ours.push_back(k);
    if (!ours.empty())
      rule += fmt::format(" (ls2c's name for it: \"{}\")", fmt::join(ours, "\" or \""));
    else if (auto s = suggestKey(item.key(), known))
      rule += fmt::format(" (did you mean \"{}\"?)", *s);
    fail(childPath(path, item.key()), rule);
  }
}

const json *Reader::member(const json &obj, const std::string &path,
                           const char *key) {
  lastPath_ = childPath(path, key);
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::optional<int64_t> Reader::integer(const json &obj, const std::string &path,
                                       const char *key) {
  const json *v = member(obj, path, key);
  if (!v)
    return std::nullopt;
  const char *tooBig = "must be an integer that fits in 64 bits (signed)";
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(lastPath_, *v, tooBig);
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (v->is_number_integer())
    return v->get<int64_t>();
  // nlohmann stores integer literals beyond 64 bits as floats.
  if (v->is_number_float() && std::fabs(v->get<double>()) >= 0x1p63)
    fail(lastPath_, *v, tooBig);
  fail(lastPath_, *v, "must be an integer");
}

std::optional<double> Reader::number(const json &obj, const std::string &path,
                                     const char *key) {
  const json *v = member(obj, path, key);
  return v ? checkNumber(*v, lastPath_) : std::optional<double>();
}

double Reader::checkNumber(const json &v, const std::string &path) const {
  if (!v.is_number())
    fail(path, v, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d))
    fail(path, v, "must be finite");
  return d;
}

std::optional<bool> Reader::boolean(const json &obj, const std::string &path,
                                    const char *key) {
  const json *v = member(obj, path, key);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    fail(lastPath_, *v, "must be a boolean (true or false)");
  return v->get<bool>();
}

std::optional<std::string>
Reader::string(const json &obj, const std::string &path, const char *key) {
  const json *v = member(obj, path, key);
  if (!v)
    return std::nullopt;
  if (!v->is_string())
    fail(lastPath_, *v, "must be a string");
  return v->get<std::string>();
}

const json *Reader::object(const json &obj, const std::string &path,
                           const char *key) {
  const json *v = member(obj, path, key);
  if (v && !v->is_object())
    fail(lastPath_, *v, "must be a JSON object");
  return v;
}

} // namespace ls2c::detail
