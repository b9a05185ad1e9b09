//===- GemmChoice.cpp - cuBLASLt algorithms chosen by timing --------------===//

#include "ls2c/Runtime/GemmChoice.h"

#include "ChoicesFile.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>

namespace ls2c::runtime {

std::optional<GemmDecision> GemmChoices::find(const std::string &key) const {
  auto it = chosen.find(key);
  if (it == chosen.end())
    return std::nullopt;
  return it->second;
}

void GemmChoices::decide(GemmDecision d) {
  std::string key = d.key;
  chosen.insert_or_assign(key, std::move(d));
}

std::vector<GemmDecision> GemmChoices::decisions() const {
  std::vector<GemmDecision> out;
  for (const auto &[key, d] : chosen)
    out.push_back(d);
  return out;
}

size_t GemmChoices::loadFile(const std::string &path) {
  std::optional<nlohmann::json> choices = readChoicesFile(path);
  if (!choices)
    return 0;
  auto fail = [&](const std::string &where, const std::string &rule) -> size_t {
    throw std::runtime_error(path + ": " + where + ": " + rule);
  };
  std::vector<GemmDecision> read;
  for (size_t i = 0; i < choices->size(); ++i) {
    const nlohmann::json &c = (*choices)[i];
    std::string at = "choices[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains("key") || !c["key"].is_string())
      return fail(at + ".key", "must be a string");
    if (!c.contains("algo") || !c["algo"].is_string() || c["algo"].get<std::string>().size() != 128 ||
        c["algo"].get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos)
      return fail(at + ".algo", "must be 128 lowercase hex digits (a cublasLtMatmulAlgo_t)");
    if (!c.contains("candidates") || !c["candidates"].is_number_integer() ||
        c["candidates"].get<int64_t>() < 1 || c["candidates"].get<int64_t>() > 1024)
      return fail(at + ".candidates", "must be an integer from 1 to 1024");
    int64_t n = c["candidates"].get<int64_t>();
    if (!c.contains("candidate") || !c["candidate"].is_number_integer() ||
        c["candidate"].get<int64_t>() < 0 || c["candidate"].get<int64_t>() >= n)
      return fail(at + ".candidate", "must be an integer from 0 to candidates - 1");
    GemmDecision d;
    d.key = c["key"].get<std::string>();
    d.algo = c["algo"].get<std::string>();
    d.candidate = static_cast<int>(c["candidate"].get<int64_t>());
    d.candidates = static_cast<int>(n);
    if (c.contains("us")) {
      if (!c["us"].is_array())
        return fail(at + ".us", "must be an array of numbers (null where a candidate failed)");
      for (const nlohmann::json &t : c["us"]) {
        if (t.is_null())
          d.us.push_back(INFINITY);
        else if (t.is_number())
          d.us.push_back(t.get<double>());
        else
          return fail(at + ".us", "must be an array of numbers (null where a candidate failed)");
      }
    }
    read.push_back(std::move(d));
  }
  size_t added = 0;
  for (GemmDecision &d : read)
    added += chosen.emplace(d.key, d).second ? 1 : 0;
  return added;
}

void GemmChoices::saveFile(const std::string &path) const {
  nlohmann::json choices = nlohmann::json::array();
  for (const auto &[key, d] : chosen) {
    nlohmann::json us = nlohmann::json::array();
    for (double t : d.us)
      us.push_back(std::isfinite(t) ? nlohmann::json(t) : nlohmann::json());
    choices.push_back(
        {{"key", key}, {"algo", d.algo}, {"candidate", d.candidate}, {"candidates", d.candidates},
         {"us", us}});
  }
  writeChoicesFile(path, choices);
}

} // namespace ls2c::runtime
