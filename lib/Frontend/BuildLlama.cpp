//===- BuildLlama.cpp - Llama causal language model -----------------------===//
//
// Hugging Face LlamaForCausalLM (Touvron et al. 2023, arXiv 2302.13971):
// token embeddings; pre-norm blocks of RMSNorm, causal grouped-query
// attention with rotary positions on q and k (no biases), RMSNorm and the
// gated feed-forward; a final RMSNorm and the LM head (tied to the
// embeddings when tie_embeddings). Weights are nn.Linear's [out, in].
// Positions come from position_ids, so packed sequences each start at 0.
// Labels are the next tokens, -100 where no loss is wanted.
//
//===----------------------------------------------------------------------===//
#include "GraphBuilder.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ls2c::ls2;

namespace ls2c {

Value llamaLayer(GraphBuilder &g, int64_t layer, Value x, Value positions,
                 LlamaAttention attend) {
  const ModelDescription &d = g.desc();
  const int64_t headDim = d.headDim();
  std::string p = llvm::formatv("model.layers.{0}", layer).str();
  g.setScope(p);
  Value h = g.rmsNorm(x, join(p, "input_layernorm.weight"));
  // Sequenced: argument evaluation order would make the IR compiler-dependent.
  Value q = g.linear(h, join(p, "self_attn.q_proj.weight"), "", WeightLayout::OutIn);
  Value k = g.linear(h, join(p, "self_attn.k_proj.weight"), "", WeightLayout::OutIn);
  Value v = g.linear(h, join(p, "self_attn.v_proj.weight"), "", WeightLayout::OutIn);
  Value q3 = g.rotary(g.reshape(q, {ShapedType::kDynamic, d.heads, headDim}), positions);
  Value k3 = g.rotary(g.reshape(k, {ShapedType::kDynamic, d.kv_heads, headDim}), positions);
  Value v3 = g.reshape(v, {ShapedType::kDynamic, d.kv_heads, headDim});
  Value a = attend(q3, k3, v3);
  x = g.add(x, g.linear(a, join(p, "self_attn.o_proj.weight"), "", WeightLayout::OutIn));
  h = g.rmsNorm(x, join(p, "post_attention_layernorm.weight"));
  return g.add(x, g.gatedFeedForward(h, join(p, "mlp")));
}

Value llamaLogits(GraphBuilder &g, Value x) {
  const ModelDescription &d = g.desc();
  g.setScope("model");
  x = g.rmsNorm(x, "model.norm.weight");
  g.setScope("lm_head");
  return g.projectToVocab(x, d.tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
}

Value buildLlama(GraphBuilder &g) {
  const ModelDescription &d = g.desc();
  Value cu = g.param("cu_seqlens");
  Value positions = g.param("position_ids");

  g.setScope("model");
  Value x = g.embed("model.embed_tokens.weight", g.param("input_ids"));
  for (int64_t i = 0; i < d.decoder_layers; ++i)
    x = llamaLayer(g, i, x, positions, [&](Value q3, Value k3, Value v3) {
      Value a = g.attentionHeads(q3, k3, v3, cu, cu, /*keyLengths=*/Value(), /*causal=*/true)
                    .first;
      return g.reshape(a, {ShapedType::kDynamic, d.hidden});
    });
  return g.loss(llamaLogits(g, x), g.param("labels"), /*ignoreIndex=*/-100);
}

} // namespace ls2c
