//===- BuildEncoderDecoder.cpp - Transformer for translation --------------===//
//
// fairseq's Transformer (Vaswani et al., 2017): token embeddings scaled by
// sqrt(hidden) plus fixed sinusoidal positions, dropout; encoder layers (self
// attention, FFN); decoder layers (causal self attention, cross attention
// over the encoder output, FFN); post-LN, or pre-LN with final encoder and
// decoder layer norms. share_embeddings makes both sides use
// encoder.embed_tokens; tie_embeddings projects to the vocabulary with the
// decoder's input table. Labels equal to padding_idx carry no loss.
//
//===----------------------------------------------------------------------===//
#include "GraphBuilder.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;

namespace ls2c {

namespace {

/// fairseq's MultiheadAttention: separate q/k/v projections.
Value fairseqAttention(GraphBuilder &g, StringRef prefix, Value queries,
                       Value keys, Sequences qSeq, Sequences kSeq, bool causal) {
  auto proj = [&](StringRef which, Value input) {
    return fairseqProjection(g, prefix, which, input);
  };
  // Sequenced: argument evaluation order would make the IR compiler-dependent.
  Value q = proj("q_proj", queries);
  Value k = proj("k_proj", keys);
  Value v = proj("v_proj", keys);
  Value a = g.attention(q, k, v, qSeq, kSeq, causal);
  return proj("out_proj", a);
}

Value embedTokens(GraphBuilder &g, StringRef table, StringRef ids,
                  StringRef positionTable, StringRef positions) {
  Value x = g.embed(table, g.param(ids));
  x = g.builder().create<ls2::MulOp>(
      g.loc(), x, g.scalar(std::sqrt(static_cast<double>(g.desc().hidden))));
  x = g.add(x, g.embed(positionTable, g.param(positions)));
  return g.dropout(x, g.desc().hidden_dropout);
}

} // namespace

Value buildTransformerEncoder(GraphBuilder &g, Sequences src) {
  const ModelDescription &d = g.desc();
  g.setScope("encoder");
  Value enc = embedTokens(g, "encoder.embed_tokens.weight", "src_ids",
                          "encoder.embed_positions.weights", "src_position_ids");
  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    std::string p = llvm::formatv("encoder.layers.{0}", i).str();
    g.setScope(p);
    enc = g.residual(enc, join(p, "self_attn_layer_norm"), [&](Value h) {
      return fairseqAttention(g, join(p, "self_attn"), h, h, src, src, false);
    });
    enc = g.residual(enc, join(p, "final_layer_norm"), [&](Value h) {
      return g.feedForward(h, join(p, "fc1"), join(p, "fc2"),
                           WeightLayout::OutIn);
    });
  }
  if (d.norm == NormPlacement::Pre) {
    g.setScope("encoder");
    enc = g.layerNorm(enc, "encoder.layer_norm");
  }
  return enc;
}

Value transformerDecoderEmbedding(GraphBuilder &g) {
  return embedTokens(g, transformerDecoderTable(g.desc()), "tgt_ids",
                     "decoder.embed_positions.weights", "tgt_position_ids");
}

std::string transformerDecoderTable(const ModelDescription &d) {
  return d.share_embeddings ? "encoder.embed_tokens.weight"
                            : "decoder.embed_tokens.weight";
}

Value fairseqProjection(GraphBuilder &g, StringRef attention, StringRef which,
                        Value input) {
  std::string name = join(attention, which);
  return g.linear(input, join(name, "weight"), join(name, "bias"),
                  WeightLayout::OutIn);
}

Value buildEncoderDecoder(GraphBuilder &g) {
  const ModelDescription &d = g.desc();
  bool pre = d.norm == NormPlacement::Pre;
  Sequences src{g.param("src_cu_seqlens")}, tgt{g.param("tgt_cu_seqlens")};
  std::string decoderTable = transformerDecoderTable(d);
  Value enc = buildTransformerEncoder(g, src);

  g.setScope("decoder");
  Value x = transformerDecoderEmbedding(g);
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    std::string p = llvm::formatv("decoder.layers.{0}", i).str();
    g.setScope(p);
    x = g.residual(x, join(p, "self_attn_layer_norm"), [&](Value h) {
      return fairseqAttention(g, join(p, "self_attn"), h, h, tgt, tgt, true);
    });
    x = g.residual(x, join(p, "encoder_attn_layer_norm"), [&](Value h) {
      return fairseqAttention(g, join(p, "encoder_attn"), h, enc, tgt, src,
                              false);
    });
    x = g.residual(x, join(p, "final_layer_norm"), [&](Value h) {
      return g.feedForward(h, join(p, "fc1"), join(p, "fc2"),
                           WeightLayout::OutIn);
    });
  }
  g.setScope("decoder");
  if (pre)
    x = g.layerNorm(x, "decoder.layer_norm");
  Value logits = g.projectToVocab(
      x, d.tie_embeddings ? decoderTable : "decoder.output_projection.weight");
  return g.loss(logits, g.param("labels"),
                d.padding_idx >= 0 ? d.padding_idx : -100);
}

} // namespace ls2c
