//===- JsonParse.h - JSON text to a checked DOM ------------------*- C++
//-*-===//
//
// Private to lib/Model. Turns the text of a description into a JSON object in
// time and memory linear in the text, rejecting with one-line errors what
// nlohmann would accept silently (duplicate keys, NUL-terminated documents)
// or could not survive (nesting deep enough to exhaust the stack).
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_MODEL_JSONPARSE_H
#define LS2C_LIB_MODEL_JSONPARSE_H

#include "JsonReader.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace ls2c::detail {

/// Parses `text` into a JSON object. Rejects, in this order: empty (or
/// all-whitespace) input; any NUL byte (nlohmann would end the document
/// there and ignore the rest); arrays and objects nested deeper than
/// kMaxJsonDepth (found by a linear scan before any parsing); syntax errors,
/// including anything after the top-level value (with nlohmann's byte offset,
/// line and column), number literals that overflow double, more than
/// kMaxJsonValues values (parsing stops there) and duplicate keys at any depth
/// (nlohmann would keep the last silently), whichever comes first in the
/// text; a top level that is not an object. Uses nlohmann's SAX interface with
/// a DOM builder of its own: linear time, memory linear in the text.
nlohmann::json parseJsonObject(std::string_view text, const Reader &reader);

} // namespace ls2c::detail

#endif // LS2C_LIB_MODEL_JSONPARSE_H
