//===- ForeignKeyNames.h - other frameworks' names of description keys ----===//
//
// Private to lib/Model. Users write Hugging Face config.json names
// (num_attention_heads, n_layer, intermediate_size), fairseq's
// (encoder_ffn_embed_dim) or PyTorch's (dim_feedforward) where a description
// has its own; an unknown key that is such a name gets ours as the
// suggestion instead of an edit-distance guess.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_MODEL_FOREIGNKEYNAMES_H
#define LS2C_LIB_MODEL_FOREIGNKEYNAMES_H

#include <string_view>
#include <vector>

namespace ls2c::detail {

/// Our keys that `key` names in another framework ("n_layer" ->
/// encoder_layers, decoder_layers); empty when it is none of theirs.
std::vector<std::string_view> keysForForeignName(std::string_view key);

} // namespace ls2c::detail

#endif // LS2C_LIB_MODEL_FOREIGNKEYNAMES_H
