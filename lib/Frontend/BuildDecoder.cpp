//===- BuildDecoder.cpp - GPT-2 causal language model ---------------------===//
//
// Hugging Face GPT2LMHeadModel (Radford et al., 2019): token + position
// embeddings, dropout; pre-LN blocks (ln_1, causal attention through the
// fused c_attn projection, ln_2, MLP) and ln_f; the LM head is tied to wte
// when tie_embeddings. Post-LN placement is also accepted (no ln_f then).
// Weights are GPT-2's Conv1D layout [in, out]. Labels are the next tokens,
// -100 where no loss is wanted.
//
//===----------------------------------------------------------------------===//
#include "GraphBuilder.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ls2c::ls2;

namespace ls2c {

Value buildDecoder(GraphBuilder &g) {
  const ModelDescription &d = g.desc();
  Sequences seq{g.param("cu_seqlens")};
  int64_t kvDim = d.kv_heads * d.headDim();

  g.setScope("transformer");
  Value x = g.embed("transformer.wte.weight", g.param("input_ids"));
  x = g.add(x, g.embed("transformer.wpe.weight", g.param("position_ids")));
  x = g.dropout(x, d.hidden_dropout);

  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    std::string p = llvm::formatv("transformer.h.{0}", i).str();
    g.setScope(p);
    x = g.residual(x, join(p, "ln_1"), [&](Value h) {
      Value qkv = g.linear(h, join(p, "attn.c_attn.weight"),
                           join(p, "attn.c_attn.bias"), WeightLayout::InOut);
      auto part = [&](int64_t start, int64_t size) -> Value {
        return g.builder().create<SliceOp>(g.loc(), qkv, /*axis=*/1, start,
                                           start + size)
            .getResult();
      };
      // Sequenced: argument evaluation order would make the IR compiler-dependent.
      Value q = part(0, d.hidden);
      Value k = part(d.hidden, kvDim);
      Value v = part(d.hidden + kvDim, kvDim);
      Value a = g.attention(q, k, v, seq, seq, /*causal=*/true);
      return g.linear(a, join(p, "attn.c_proj.weight"),
                      join(p, "attn.c_proj.bias"), WeightLayout::InOut);
    });
    x = g.residual(x, join(p, "ln_2"), [&](Value h) {
      return g.feedForward(h, join(p, "mlp.c_fc"), join(p, "mlp.c_proj"),
                           WeightLayout::InOut);
    });
  }
  g.setScope("transformer");
  if (d.norm == NormPlacement::Pre)
    x = g.layerNorm(x, "transformer.ln_f");

  g.setScope("lm_head");
  Value logits = g.projectToVocab(
      x, d.tie_embeddings ? "transformer.wte.weight" : "lm_head.weight");
  return g.loss(logits, g.param("labels"), /*ignoreIndex=*/-100);
}

} // namespace ls2c
