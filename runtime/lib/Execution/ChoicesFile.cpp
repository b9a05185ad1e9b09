//===- ChoicesFile.cpp - the JSON files of timed decisions ----------------===//
#include "ChoicesFile.h"

#include "ls2c/Support/AtomicFile.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ls2c::runtime {

std::optional<nlohmann::json> readChoicesFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto fail = [&](const std::string &where, const std::string &rule) {
    return std::runtime_error(path + ": " + where + ": " + rule);
  };
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception &e) {
    throw fail("the file", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object() || root.value("version", nlohmann::json()) != 1)
    throw fail("version", "must be 1");
  if (!root.contains("choices") || !root["choices"].is_array())
    throw fail("choices", "must be an array");
  return root["choices"];
}

void writeChoicesFile(const std::string &path, const nlohmann::json &choices) {
  nlohmann::json root = {{"version", 1}, {"choices", choices}};
  std::error_code ignored; // a missing directory fails the write, which says so
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  writeFileAtomically(path, root.dump(1) + "\n");
}

} // namespace ls2c::runtime
