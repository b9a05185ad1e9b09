//===- ChoicesFile.h - the JSON files of timed decisions -------*- C++ -*-===//
//
// The shape shared by attention-choices.json (AttentionChoice.h) and
// gemm-choices.json (GemmChoice.h): {"version": 1, "choices": [...]},
// written atomically beside the program cache.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_LIB_CHOICESFILE_H
#define LS2C_RUNTIME_LIB_CHOICESFILE_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ls2c::runtime {

/// The "choices" array of `path`; nullopt when the file cannot be opened.
/// Throws std::runtime_error "PATH: FIELD: RULE" for a file that is not
/// JSON, whose version is not 1, or whose choices are not an array.
std::optional<nlohmann::json> readChoicesFile(const std::string &path);

/// Writes {"version": 1, "choices": choices} to `path` atomically
/// (AtomicFile.h), creating its directory; throws FileWriteError.
void writeChoicesFile(const std::string &path, const nlohmann::json &choices);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_LIB_CHOICESFILE_H
