//===- BuildEncoder.cpp - BERT masked language model ----------------------===//
//
// Hugging Face BertForMaskedLM (Devlin et al., 2019): word + position +
// token-type embeddings, LayerNorm, dropout; post-LN (or pre-LN) encoder
// layers; MLM head (dense, activation, LayerNorm, vocabulary projection tied
// to the word embeddings when tie_embeddings). Labels use -100 for tokens
// that carry no loss, as Hugging Face does. With max_predictions the head
// runs on the labelled rows only, as original BERT's (and NVIDIA's) do.
//
//===----------------------------------------------------------------------===//
#include "GraphBuilder.h"

#include "llvm/Support/FormatVariadic.h"

#include <tuple>

using namespace mlir;

namespace ls2c {

namespace {

constexpr int64_t kIgnoreIndex = -100;

/// The rows of x [T, H] whose label is not the ignore index, and their
/// labels, in a static [P] (P = max_predictions): positions from
/// ls2.nonzero, -1 past the labelled count, where the gathers fill rows of
/// zeros and the ignore index: they add nothing to the loss or any
/// gradient, and a batch of no tokens reads no row.
std::pair<Value, Value> labelledRows(GraphBuilder &g, Value x, Value labels) {
  OpBuilder &b = g.builder();
  Location loc = g.loc();
  Type i32 = b.getI32Type();
  Value labelled = b.create<ls2::CompareOp>(loc, ls2::CompareDirection::NE, labels,
                                            g.scalar(kIgnoreIndex, i32));
  Value positions = b.create<ls2::NonzeroOp>(
      loc, RankedTensorType::get({g.desc().max_predictions}, i32), labelled,
      /*fill_value=*/-1);
  Value rows = b.create<ls2::GatherOp>(loc, x, positions, b.getF64FloatAttr(0.0));
  return {rows, b.create<ls2::GatherOp>(loc, labels, positions,
                                        b.getF64FloatAttr(static_cast<double>(kIgnoreIndex)))};
}

} // namespace

Value buildEncoder(GraphBuilder &g) {
  const ModelDescription &d = g.desc();
  Sequences seq{g.param("cu_seqlens")};

  g.setScope("bert.embeddings");
  Value x = g.embed("bert.embeddings.word_embeddings.weight", g.param("input_ids"));
  x = g.add(x, g.embed("bert.embeddings.position_embeddings.weight",
                       g.param("position_ids")));
  x = g.add(x, g.embed("bert.embeddings.token_type_embeddings.weight",
                       g.param("token_type_ids")));
  x = g.dropout(g.layerNorm(x, "bert.embeddings.LayerNorm"), d.hidden_dropout);

  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    std::string p = llvm::formatv("bert.encoder.layer.{0}", i).str();
    g.setScope(p);
    x = g.residual(x, join(p, "attention.output.LayerNorm"), [&](Value h) {
      std::string self = join(p, "attention.self");
      auto proj = [&](StringRef which) {
        std::string name = join(self, which);
        return g.linear(h, join(name, "weight"), join(name, "bias"),
                        WeightLayout::OutIn);
      };
      // Sequenced: argument evaluation order would make the IR compiler-dependent.
      Value q = proj("query");
      Value k = proj("key");
      Value v = proj("value");
      Value a = g.attention(q, k, v, seq, seq, /*causal=*/false);
      std::string out = join(p, "attention.output.dense");
      return g.linear(a, join(out, "weight"), join(out, "bias"),
                      WeightLayout::OutIn);
    });
    x = g.residual(x, join(p, "output.LayerNorm"), [&](Value h) {
      return g.feedForward(h, join(p, "intermediate.dense"),
                           join(p, "output.dense"), WeightLayout::OutIn);
    });
  }
  if (d.norm == NormPlacement::Pre) {
    g.setScope("bert.encoder");
    x = g.layerNorm(x, "bert.encoder.final_layer_norm");
  }

  g.setScope("cls.predictions");
  Value labels = g.param("labels");
  if (d.max_predictions > 0)
    std::tie(x, labels) = labelledRows(g, x, labels);
  Value h = g.linear(x, "cls.predictions.transform.dense.weight",
                     "cls.predictions.transform.dense.bias", WeightLayout::OutIn);
  h = g.layerNorm(g.activation(h), "cls.predictions.transform.LayerNorm");
  Value logits = g.projectToVocab(
      h, d.tie_embeddings ? "bert.embeddings.word_embeddings.weight"
                          : "cls.predictions.decoder.weight");
  logits = g.add(logits, g.broadcastLike(g.param("cls.predictions.bias"),
                                         logits, {1}));
  return g.loss(logits, labels, kIgnoreIndex);
}

} // namespace ls2c
