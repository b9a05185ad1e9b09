//===- BuildDecoding.cpp - @encode and @decode over a KV cache ------------===//
//
// The layers are those of BuildDecoder.cpp (GPT-2), BuildLlama.cpp (its
// llamaLayer) and BuildEncoderDecoder.cpp (fairseq), built with dropout off;
// only the attention differs: it reads the cache
// (include/ls2c/Frontend/Decoding.h). Llama caches its keys rotated.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Frontend/Decoding.h"

#include "GraphBuilder.h"

#include "ls2c/Frontend/Frontend.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ls2c::ls2;

namespace ls2c {

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

std::string layerName(StringRef what, int64_t layer, StringRef part) {
  return llvm::formatv("{0}.{1}.{2}", what, layer, part).str();
}

/// A function's inputs after the parameters, and its results with their names.
struct Signature {
  SmallVector<FunctionArgument> args;
  SmallVector<Type> results;
  SmallVector<std::string> resultNames;
};

class DecodingBuilder {
public:
  explicit DecodingBuilder(GraphBuilder &g) : g(g), d(g.desc()), b(g.builder()) {}

  /// i32 [?] input bounded by `bound`.
  void input(Signature &s, StringRef name, int64_t bound) {
    s.args.push_back({name.str(), RankedTensorType::get({kDyn}, b.getI32Type()),
                      "input", false, {bound}});
  }
  /// A [rows, kv_heads, head_dim] input per layer and part (key, value).
  void perLayer(Signature &s, StringRef what, int64_t layers, int64_t rowBound) {
    for (int64_t i = 0; i < layers; ++i)
      for (StringRef part : {"key", "value"})
        s.args.push_back({layerName(what, i, part), headsType(d.kv_heads), "input",
                          false, {rowBound, d.kv_heads, d.headDim()}});
  }
  void perLayerResults(Signature &s, StringRef what, int64_t layers) {
    for (int64_t i = 0; i < layers; ++i)
      for (StringRef part : {"key", "value"}) {
        s.results.push_back(headsType(d.kv_heads));
        s.resultNames.push_back(layerName(what, i, part));
      }
  }

  /// The inputs of the new tokens (`prefix`ids, `prefix`position_ids,
  /// `prefix`cu_seqlens) and of the self-attention cache, bounded by
  /// max_batch_tokens (hypotheses, tokens) and max_seq_len (a cache slot).
  void tokenInputs(Signature &s, const std::string &prefix, const std::string &ids) {
    const int64_t tokens = d.max_batch_tokens;
    input(s, prefix + ids, tokens);
    input(s, prefix + "position_ids", tokens);
    input(s, prefix + "cu_seqlens", tokens + 1);
    input(s, "cache_starts", tokens + 1);
    input(s, "cache_lengths", tokens);
    perLayer(s, "past", d.decoder_layers, tokens * d.max_seq_len);
  }
  /// @decode's results: the logits of every new token, then the present
  /// keys and values.
  void decodeResults(Signature &s) {
    s.results.push_back(RankedTensorType::get({kDyn, d.vocab}, g.computeType()));
    s.resultNames.push_back("logits");
    perLayerResults(s, "present", d.decoder_layers);
  }

  /// Declares a decoder-only model's @decode: the new tokens' input_ids,
  /// positions and sequences and the cache in, the logits and the new keys
  /// and values out.
  void declareTokenDecode(Location loc) {
    Signature s;
    tokenInputs(s, "", "input_ids");
    decodeResults(s);
    declare(loc, "decode", s);
  }

  RankedTensorType headsType(int64_t heads) {
    return RankedTensorType::get({kDyn, heads, d.headDim()}, g.computeType());
  }

  func::FuncOp declare(Location loc, StringRef name, Signature &s) {
    SmallVector<FunctionArgument> args = parameterArguments(d, g.computeType());
    llvm::append_range(args, s.args);
    func::FuncOp f = declareFunction(g, loc, name, args, s.results);
    for (auto [i, n] : llvm::enumerate(s.resultNames))
      f.setResultAttr(i, "ls2.name", b.getStringAttr(n));
    return f;
  }

  /// Self attention of the new tokens q, k, v ([T, width]) over the cache of
  /// `layer` and themselves; records k and v (as [T, kv_heads, head_dim]) in
  /// `present`.
  Value cachedSelfAttention(int64_t layer, Value q, Value k, Value v, Value cuSeqlens,
                            SmallVectorImpl<Value> &present) {
    return cachedSelfAttention3(layer, g.reshape(q, {kDyn, d.heads, d.headDim()}),
                                g.reshape(k, {kDyn, d.kv_heads, d.headDim()}),
                                g.reshape(v, {kDyn, d.kv_heads, d.headDim()}), cuSeqlens,
                                present);
  }
  /// The same of q3 [T, heads, head_dim], k3 and v3 [T, kv_heads, head_dim]
  /// (Llama's, rotated at their positions before they are cached).
  Value cachedSelfAttention3(int64_t layer, Value q3, Value k3, Value v3, Value cuSeqlens,
                             SmallVectorImpl<Value> &present) {
    present.push_back(k3);
    present.push_back(v3);
    auto [past, pastLse] = g.attentionHeads(
        q3, g.param(layerName("past", layer, "key")), g.param(layerName("past", layer, "value")),
        cuSeqlens, g.param("cache_starts"), g.param("cache_lengths"), /*causal=*/false);
    auto [fresh, freshLse] =
        g.attentionHeads(q3, k3, v3, cuSeqlens, cuSeqlens, Value(), /*causal=*/true);
    return g.reshape(merge(fresh, freshLse, past, pastLse), {kDyn, d.hidden});
  }

  /// Cross attention of q [T, H] over `layer`'s memory rows.
  Value memoryAttention(int64_t layer, Value q, Value cuSeqlens) {
    Value q3 = g.reshape(q, {kDyn, d.heads, d.headDim()});
    Value out = g.attentionHeads(q3, g.param(layerName("memory", layer, "key")),
                                 g.param(layerName("memory", layer, "value")), cuSeqlens,
                                 g.param("memory_starts"), g.param("memory_lengths"),
                                 /*causal=*/false)
                    .first;
    return g.reshape(out, {kDyn, d.hidden});
  }

private:
  /// out = o_new - sigmoid(lse_past - lse_new) * (o_new - o_past) in f32:
  /// lse_new is finite (each token sees itself); lse_past -inf (no cached
  /// row) gives a weight of exactly 0.
  Value merge(Value fresh, Value freshLse, Value past, Value pastLse) {
    Location loc = g.loc();
    auto type = cast<RankedTensorType>(fresh.getType());
    auto f32 = type.clone(b.getF32Type());
    auto widen = [&](Value x) -> Value {
      return type.getElementType().isF32() ? x : b.create<CastOp>(loc, f32, x).getResult();
    };
    Value one = g.scalar(1.0, b.getF32Type());
    Value x = b.create<SubOp>(loc, freshLse, pastLse);
    Value weight = b.create<DivOp>(loc, one, g.add(b.create<ExpOp>(loc, x), one));
    Value o = widen(fresh);
    Value diff = b.create<SubOp>(loc, o, widen(past));
    Value out = b.create<SubOp>(
        loc, o, b.create<MulOp>(loc, g.broadcastLike(weight, o, {0, 1}), diff));
    return type.getElementType().isF32() ? out : b.create<CastOp>(loc, type, out).getResult();
  }

  GraphBuilder &g;
  const ModelDescription &d;
  OpBuilder &b;
};

void buildDecoderDecode(GraphBuilder &g, Location loc) {
  const ModelDescription &d = g.desc();
  DecodingBuilder db(g);
  db.declareTokenDecode(loc);

  Value cu = g.param("cu_seqlens");
  int64_t kvDim = d.kv_heads * d.headDim();
  SmallVector<Value> results = {Value()};
  g.setScope("transformer");
  Value x = g.embed("transformer.wte.weight", g.param("input_ids"));
  x = g.add(x, g.embed("transformer.wpe.weight", g.param("position_ids")));
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    std::string p = llvm::formatv("transformer.h.{0}", i).str();
    g.setScope(p);
    x = g.residual(x, join(p, "ln_1"), [&](Value h) {
      Value qkv = g.linear(h, join(p, "attn.c_attn.weight"), join(p, "attn.c_attn.bias"),
                           WeightLayout::InOut);
      auto part = [&](int64_t start, int64_t size) -> Value {
        return g.builder().create<SliceOp>(g.loc(), qkv, /*axis=*/1, start, start + size);
      };
      // Sequenced: argument evaluation order would make the IR compiler-dependent.
      Value q = part(0, d.hidden);
      Value k = part(d.hidden, kvDim);
      Value v = part(d.hidden + kvDim, kvDim);
      Value a = db.cachedSelfAttention(i, q, k, v, cu, results);
      return g.linear(a, join(p, "attn.c_proj.weight"), join(p, "attn.c_proj.bias"),
                      WeightLayout::InOut);
    });
    x = g.residual(x, join(p, "ln_2"), [&](Value h) {
      return g.feedForward(h, join(p, "mlp.c_fc"), join(p, "mlp.c_proj"), WeightLayout::InOut);
    });
  }
  g.setScope("transformer");
  if (d.norm == NormPlacement::Pre)
    x = g.layerNorm(x, "transformer.ln_f");
  g.setScope("lm_head");
  results[0] =
      g.projectToVocab(x, d.tie_embeddings ? "transformer.wte.weight" : "lm_head.weight");
  g.builder().create<func::ReturnOp>(loc, results);
}

void buildLlamaDecode(GraphBuilder &g, Location loc) {
  const ModelDescription &d = g.desc();
  DecodingBuilder db(g);
  db.declareTokenDecode(loc);

  Value cu = g.param("cu_seqlens"), positions = g.param("position_ids");
  SmallVector<Value> results = {Value()};
  g.setScope("model");
  Value x = g.embed("model.embed_tokens.weight", g.param("input_ids"));
  for (int64_t i = 0; i < d.decoder_layers; ++i)
    x = llamaLayer(g, i, x, positions, [&](Value q3, Value k3, Value v3) {
      return db.cachedSelfAttention3(i, q3, k3, v3, cu, results);
    });
  results[0] = llamaLogits(g, x);
  g.builder().create<func::ReturnOp>(loc, results);
}

void buildTransformerEncode(GraphBuilder &g, Location loc) {
  const ModelDescription &d = g.desc();
  DecodingBuilder db(g);
  const int64_t tokens = d.max_batch_tokens;
  Signature s;
  db.input(s, "src_ids", tokens);
  db.input(s, "src_position_ids", tokens);
  db.input(s, "src_cu_seqlens", tokens + 1);
  db.perLayerResults(s, "memory", d.decoder_layers);
  db.declare(loc, "encode", s);

  Value enc = buildTransformerEncoder(g, Sequences{g.param("src_cu_seqlens")});
  SmallVector<Value> results;
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    std::string p = llvm::formatv("decoder.layers.{0}.encoder_attn", i).str();
    g.setScope(p);
    for (StringRef which : {"k_proj", "v_proj"})
      results.push_back(g.reshape(fairseqProjection(g, p, which, enc),
                                  {kDyn, d.kv_heads, d.headDim()}));
  }
  g.builder().create<func::ReturnOp>(loc, results);
}

void buildTransformerDecode(GraphBuilder &g, Location loc) {
  const ModelDescription &d = g.desc();
  DecodingBuilder db(g);
  const int64_t tokens = d.max_batch_tokens;
  Signature s;
  db.tokenInputs(s, "tgt_", "ids");
  db.input(s, "memory_starts", tokens + 1);
  db.input(s, "memory_lengths", tokens);
  // Beams share their source's rows: at most max_batch_tokens of them.
  db.perLayer(s, "memory", d.decoder_layers, tokens);
  db.decodeResults(s);
  db.declare(loc, "decode", s);

  Value cu = g.param("tgt_cu_seqlens");
  SmallVector<Value> results = {Value()};
  g.setScope("decoder");
  Value x = transformerDecoderEmbedding(g);
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    std::string p = llvm::formatv("decoder.layers.{0}", i).str();
    g.setScope(p);
    x = g.residual(x, join(p, "self_attn_layer_norm"), [&](Value h) {
      std::string a = join(p, "self_attn");
      // Sequenced: argument evaluation order would make the IR compiler-dependent.
      Value q = fairseqProjection(g, a, "q_proj", h);
      Value k = fairseqProjection(g, a, "k_proj", h);
      Value v = fairseqProjection(g, a, "v_proj", h);
      return fairseqProjection(g, a, "out_proj",
                               db.cachedSelfAttention(i, q, k, v, cu, results));
    });
    x = g.residual(x, join(p, "encoder_attn_layer_norm"), [&](Value h) {
      std::string a = join(p, "encoder_attn");
      Value q = fairseqProjection(g, a, "q_proj", h);
      return fairseqProjection(g, a, "out_proj", db.memoryAttention(i, q, cu));
    });
    x = g.residual(x, join(p, "final_layer_norm"), [&](Value h) {
      return g.feedForward(h, join(p, "fc1"), join(p, "fc2"), WeightLayout::OutIn);
    });
  }
  g.setScope("decoder");
  if (d.norm == NormPlacement::Pre)
    x = g.layerNorm(x, "decoder.layer_norm");
  results[0] = g.projectToVocab(
      x, d.tie_embeddings ? transformerDecoderTable(d) : "decoder.output_projection.weight");
  g.builder().create<func::ReturnOp>(loc, results);
}

} // namespace

bool canGenerate(const ModelDescription &desc) {
  return isCausalLM(desc.architecture) || desc.architecture == Architecture::EncoderDecoder;
}

OwningOpRef<ModuleOp> buildDecodingModule(MLIRContext &context,
                                          const ModelDescription &description) {
  loadFrontendDialects(context);
  OpBuilder b(&context);
  Location loc = NameLoc::get(
      b.getStringAttr(description.name.empty() ? "model" : description.name));
  if (!canGenerate(description)) {
    emitError(loc) << "generation needs a decoder, llama or encoder_decoder model, not "
                   << llvm::StringRef(toString(description.architecture));
    return nullptr;
  }
  ModelDescription desc = description;
  desc.hidden_dropout = desc.attention_dropout = desc.activation_dropout = 0.0;
  OwningOpRef<ModuleOp> module = ModuleOp::create(
      loc, desc.name.empty() ? std::nullopt : std::optional<StringRef>(desc.name));
  // Complete functions: the pipeline has nothing to differentiate.
  (*module)->setAttr("ls2.differentiated", b.getUnitAttr());
  if (desc.architecture == Architecture::EncoderDecoder) {
    GraphBuilder encode(b, desc);
    b.setInsertionPointToEnd(module->getBody());
    buildTransformerEncode(encode, loc);
    GraphBuilder decode(b, desc);
    b.setInsertionPointToEnd(module->getBody());
    buildTransformerDecode(decode, loc);
  } else if (desc.architecture == Architecture::Llama) {
    GraphBuilder decode(b, desc);
    b.setInsertionPointToEnd(module->getBody());
    buildLlamaDecode(decode, loc);
  } else {
    GraphBuilder decode(b, desc);
    b.setInsertionPointToEnd(module->getBody());
    buildDecoderDecode(decode, loc);
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace ls2c
