//===- ForeignKeyNames.cpp - other frameworks' names of description keys --===//

#include "ForeignKeyNames.h"

#include <utility>

namespace ls2c::detail {

namespace {

struct ForeignName {
  std::string_view theirs;
  std::vector<std::string_view> ours;
};

// Hugging Face config.json (BERT, GPT-2, BART/Marian, ViT, Llama), fairseq's
// Transformer arguments and torch.nn.Transformer's.
const std::vector<ForeignName> &table() {
  static const std::vector<ForeignName> names = {
      {"model_type", {"architecture"}},
      {"num_hidden_layers", {"encoder_layers", "decoder_layers"}},
      {"n_layer", {"encoder_layers", "decoder_layers"}},
      {"num_layers", {"encoder_layers", "decoder_layers"}},
      {"num_encoder_layers", {"encoder_layers"}},
      {"num_decoder_layers", {"decoder_layers"}},
      {"n_embd", {"hidden"}},
      {"d_model", {"hidden"}},
      {"embed_dim", {"hidden"}},
      {"encoder_embed_dim", {"hidden"}},
      {"decoder_embed_dim", {"hidden"}},
      {"num_attention_heads", {"heads"}},
      {"n_head", {"heads"}},
      {"nhead", {"heads"}},
      {"num_heads", {"heads"}},
      {"encoder_attention_heads", {"heads"}},
      {"decoder_attention_heads", {"heads"}},
      {"num_key_value_heads", {"kv_heads"}},
      {"intermediate_size", {"ffn"}},
      {"n_inner", {"ffn"}},
      {"dim_feedforward", {"ffn"}},
      {"encoder_ffn_embed_dim", {"ffn"}},
      {"decoder_ffn_embed_dim", {"ffn"}},
      {"encoder_ffn_dim", {"ffn"}},
      {"decoder_ffn_dim", {"ffn"}},
      {"vocab_size", {"vocab"}},
      {"n_vocab", {"vocab"}},
      {"max_position_embeddings", {"max_seq_len"}},
      {"n_positions", {"max_seq_len"}},
      {"n_ctx", {"max_seq_len"}},
      {"max_source_positions", {"max_seq_len"}},
      {"max_target_positions", {"max_seq_len"}},
      {"hidden_act", {"activation"}},
      {"activation_function", {"activation"}},
      {"hidden_dropout_prob", {"hidden_dropout"}},
      {"resid_pdrop", {"hidden_dropout"}},
      {"embd_pdrop", {"hidden_dropout"}},
      {"dropout", {"hidden_dropout"}},
      {"attention_probs_dropout_prob", {"attention_dropout"}},
      {"attn_pdrop", {"attention_dropout"}},
      {"activation_dropout_prob", {"activation_dropout"}},
      {"layer_norm_epsilon", {"layer_norm_eps"}},
      {"tie_word_embeddings", {"tie_embeddings"}},
      {"share_all_embeddings", {"share_embeddings"}},
      {"torch_dtype", {"dtype"}},
      {"pad_token_id", {"padding_idx"}},
      {"num_labels", {"num_classes"}},
      {"num_channels", {"channels"}},
      {"gradient_checkpointing", {"activation_checkpointing"}},
      {"learning_rate", {"lr"}},
      {"adam_beta1", {"betas"}},
      {"adam_beta2", {"betas"}},
      {"adam_epsilon", {"eps"}},
      {"adam_eps", {"eps"}},
      {"adam_betas", {"betas"}},
      {"max_grad_norm", {"clip_norm"}},
      {"clip_grad_norm", {"clip_norm"}},
      {"num_warmup_steps", {"warmup_steps"}},
      {"warmup_updates", {"warmup_steps"}},
      {"max_steps", {"total_steps"}},
      {"num_training_steps", {"total_steps"}},
      {"max_update", {"total_steps"}},
  };
  return names;
}

} // namespace

std::vector<std::string_view> keysForForeignName(std::string_view key) {
  for (const ForeignName &n : table())
    if (n.theirs == key)
      return n.ours;
  return {};
}

} // namespace ls2c::detail
