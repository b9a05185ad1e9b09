//===- GraphBuilder.h - Transformer building blocks in ls2 IR -------------===//
//
// Shared by the per-architecture builders. Activations are packed token
// matrices x [T, H] (T dynamic) in the compute dtype.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_FRONTEND_GRAPHBUILDER_H
#define LS2C_LIB_FRONTEND_GRAPHBUILDER_H

#include "ls2/IR/LS2Dialect.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <utility>

namespace ls2c {

/// How a linear layer's weight is stored.
enum class WeightLayout {
  OutIn, ///< [out, in], nn.Linear (BERT, fairseq, timm)
  InOut, ///< [in, out], GPT-2's Conv1D
};

/// The sequences attention runs over: token offsets per sequence.
struct Sequences {
  mlir::Value cuSeqlens; ///< i32 [batch + 1]
};

class GraphBuilder {
public:
  GraphBuilder(mlir::OpBuilder &builder, const ModelDescription &desc);

  mlir::OpBuilder &builder() { return b; }
  const ModelDescription &desc() const { return d; }
  /// f32, f16 or bf16 for the compute dtype.
  mlir::Type computeType() const { return elementType; }

  /// Binds a function argument to a parameter or input name.
  void bind(llvm::StringRef name, mlir::Value value) { values[name] = value; }
  /// The value bound to `name`; a missing name is an ls2c bug (fatal).
  mlir::Value param(llvm::StringRef name) const;
  bool has(llvm::StringRef name) const { return values.count(name); }
  /// Sets the Philox seed/offset used by every dropout site.
  void setRandomState(mlir::Value seed, mlir::Value offset);

  /// Scopes locations: ops get NameLoc(scope), e.g. "bert.encoder.layer.3".
  void setScope(llvm::StringRef scope);
  mlir::Location loc() const { return location; }

  // --- primitives with shapes filled in ---
  mlir::Value scalar(double value, mlir::Type elementType);
  mlir::Value scalar(double value) { return scalar(value, elementType); }
  /// Size of `value`'s dim `i` as an index.
  mlir::Value dim(mlir::Value value, int64_t i);
  /// Broadcasts `value` to `like`'s shape, mapping its dims to `dims`.
  mlir::Value broadcastLike(mlir::Value value, mlir::Value like,
                            llvm::ArrayRef<int64_t> dims);
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  mlir::Value add(mlir::Value a, mlir::Value b);
  /// `x` converted to `element` (itself when it has that type).
  mlir::Value castTo(mlir::Value x, mlir::Type element);

  // --- layers ---
  /// x [T, in] @ W (+ bias): [T, out].
  mlir::Value linear(mlir::Value x, llvm::StringRef weight,
                     llvm::StringRef bias, WeightLayout layout);
  /// Output projection tied to (or separate from) an embedding table [V, H]:
  /// x [T, H] -> logits [T, V].
  mlir::Value projectToVocab(mlir::Value x, llvm::StringRef table);
  mlir::Value layerNorm(mlir::Value x, llvm::StringRef prefix);
  /// RMSNorm (Zhang and Sennrich 2019, arXiv 1910.07467) over the last dim
  /// of x [T, H] as Hugging Face's LlamaRMSNorm: statistics in f32, x
  /// rsqrt(mean(x^2) + rms_norm_eps) rounded to the compute dtype, times
  /// `weight` [H]. Primitives only, so autodiff and fusion see through it.
  mlir::Value rmsNorm(mlir::Value x, llvm::StringRef weight);
  /// Rotary position embedding (Su et al. 2021, arXiv 2104.09864, eq. 34)
  /// of x3 [T, heads, head_dim] at `positions` (i32 [T]), in Hugging Face's
  /// rotate-half layout: with x = [x1 x2] split at head_dim / 2 and angles
  /// a_j = position theta^(-2j / head_dim), [x1 cos a - x2 sin a,
  /// x2 cos a + x1 sin a]. Angles and products in f32.
  mlir::Value rotary(mlir::Value x3, mlir::Value positions);
  /// Inverted dropout with its own Philox stream; identity when rate is 0.
  mlir::Value dropout(mlir::Value x, double rate);
  mlir::Value activation(mlir::Value x);
  mlir::Value embed(llvm::StringRef table, mlir::Value ids);

  /// Multi-head attention of q [Tq, H], k, v [Tk, kv_heads * head_dim]
  /// (already projected) -> [Tq, H] before the output projection.
  mlir::Value attention(mlir::Value q, mlir::Value k, mlir::Value v,
                        Sequences queries, Sequences keys, bool causal);
  /// ls2.attention of q3 [Tq, heads, head_dim] and k3, v3 [Tk, kv_heads,
  /// head_dim]: (out [Tq, heads, head_dim], f32 lse [Tq, heads]).
  /// `keyLengths` (i32 [batch], or null) makes cuK a KV cache's row starts.
  std::pair<mlir::Value, mlir::Value> attentionHeads(mlir::Value q3, mlir::Value k3,
                                                     mlir::Value v3, mlir::Value cuQ,
                                                     mlir::Value cuK,
                                                     mlir::Value keyLengths, bool causal);

  /// Residual branch with the description's norm placement:
  ///   post: LN(x + dropout(f(x)));  pre: x + dropout(f(LN(x))).
  template <typename Branch>
  mlir::Value residual(mlir::Value x, llvm::StringRef norm, Branch branch) {
    if (d.norm == NormPlacement::Pre)
      return add(x, dropout(branch(layerNorm(x, norm)), d.hidden_dropout));
    return layerNorm(add(x, dropout(branch(x), d.hidden_dropout)), norm);
  }

  /// fc1 -> activation -> activation dropout -> fc2 on x [T, H].
  mlir::Value feedForward(mlir::Value x, llvm::StringRef fc1,
                          llvm::StringRef fc2, WeightLayout layout);

  /// The gated feed-forward of Llama (Shazeer 2020, arXiv 2002.05202):
  /// down(act(gate(x)) * up(x)) on x [T, H], nn.Linear weights without
  /// biases named `prefix`.{gate,up,down}_proj.weight.
  mlir::Value gatedFeedForward(mlir::Value x, llvm::StringRef prefix);

  /// Mean cross-entropy of logits [T, V] against labels [T] (i32).
  mlir::Value loss(mlir::Value logits, mlir::Value labels, int64_t ignoreIndex);

private:
  mlir::OpBuilder &b;
  const ModelDescription &d;
  mlir::Type elementType;
  mlir::Location location;
  llvm::StringMap<mlir::Value> values;
  mlir::Value seed, offset;
  int64_t nextStream = 0;
};

/// An argument of a function the frontend declares.
struct FunctionArgument {
  std::string name;
  mlir::Type type;
  llvm::StringRef kind;          ///< "parameter" | "buffer" | "input"
  bool weightDecay = false;      ///< parameters only
  llvm::SmallVector<int64_t> maxShape; ///< inputs with dynamic dims: their bounds
};

/// The parameters of `desc` in ParameterLayout order, typed `computeType`.
llvm::SmallVector<FunctionArgument> parameterArguments(const ModelDescription &desc,
                                                       mlir::Type computeType);

/// Declares func `name` at the builder's insertion point with `args` (their
/// ls2.name, ls2.kind, ls2.weight_decay and ls2.max_shape attributes) and
/// `results`, binds every argument by name in `g` and moves the insertion
/// point to the start of its body.
mlir::func::FuncOp declareFunction(GraphBuilder &g, mlir::Location loc,
                                   llvm::StringRef name,
                                   llvm::ArrayRef<FunctionArgument> args,
                                   mlir::TypeRange results);

/// `prefix` + "." + `suffix`.
std::string join(llvm::StringRef prefix, llvm::StringRef suffix);

// Per-architecture bodies: read the bound parameters and inputs, return the
// scalar f32 loss.
mlir::Value buildEncoder(GraphBuilder &g);        // BERT masked LM
mlir::Value buildDecoder(GraphBuilder &g);        // GPT-2 causal LM
mlir::Value buildEncoderDecoder(GraphBuilder &g); // fairseq Transformer
mlir::Value buildViT(GraphBuilder &g);            // timm ViT classifier
mlir::Value buildLlama(GraphBuilder &g);          // Llama causal LM

/// Attention of one Llama layer: rotated q3 [T, heads, head_dim], rotated k3
/// and v3 [T, kv_heads, head_dim] -> [T, hidden] before o_proj.
using LlamaAttention = llvm::function_ref<mlir::Value(mlir::Value, mlir::Value, mlir::Value)>;
/// Llama decoder layer `layer` (model.layers.`layer`) on the residual stream
/// x [T, H] at `positions` (i32 [T]), training and decoding alike.
mlir::Value llamaLayer(GraphBuilder &g, int64_t layer, mlir::Value x, mlir::Value positions,
                       LlamaAttention attend);
/// The final RMSNorm (model.norm) and the LM head of the residual stream x
/// [T, H]: logits [T, vocab].
mlir::Value llamaLogits(GraphBuilder &g, mlir::Value x);

// Pieces of the fairseq Transformer that decoding (BuildDecoding.cpp) shares.
/// The encoder's output [Ts, H] over the bound src_ids, src_position_ids.
mlir::Value buildTransformerEncoder(GraphBuilder &g, Sequences src);
/// The decoder's input: scaled embeddings of tgt_ids plus tgt_position_ids'.
mlir::Value transformerDecoderEmbedding(GraphBuilder &g);
/// The table the decoder embeds with (and, tied, projects to the vocabulary with).
std::string transformerDecoderTable(const ModelDescription &d);
/// One of fairseq MultiheadAttention's projections: `attention`.`which`
/// (q_proj, k_proj, v_proj, out_proj) applied to input [T, H].
mlir::Value fairseqProjection(GraphBuilder &g, llvm::StringRef attention,
                              llvm::StringRef which, mlir::Value input);

} // namespace ls2c

#endif // LS2C_LIB_FRONTEND_GRAPHBUILDER_H
