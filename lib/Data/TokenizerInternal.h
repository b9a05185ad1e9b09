//===- TokenizerInternal.h - between Tokenizer.cpp and its sentencepiece half -===//
#ifndef LS2C_LIB_DATA_TOKENIZERINTERNAL_H
#define LS2C_LIB_DATA_TOKENIZERINTERNAL_H

#include "ls2c/Data/Tokenizer.h"

namespace ls2c::detail {

/// A sentencepiece tokenizer from a serialized ModelProto (a .model file's
/// bytes). Throws DataError naming `name`.
std::unique_ptr<Tokenizer> loadSentencePiece(std::string bytes,
                                             const std::string &name);

} // namespace ls2c::detail

#endif // LS2C_LIB_DATA_TOKENIZERINTERNAL_H
