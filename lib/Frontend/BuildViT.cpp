//===- BuildViT.cpp - Vision Transformer classifier -----------------------===//
//
// timm's VisionTransformer (Dosovitskiy et al., 2021): images [B, C, S, S]
// are cut into P x P patches (the stride-P convolution of patch_embed as a
// matmul over flattened patches, flattened in (C, P, P) order like the
// convolution's weight), a class token is prepended, pos_embed added; blocks
// are pre-LN (or post-LN) with a fused qkv projection; the class token's
// final state goes through `norm` (pre-LN) and `head`.
//
//===----------------------------------------------------------------------===//
#include "GraphBuilder.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ls2c::ls2;

namespace ls2c {

Value buildViT(GraphBuilder &g) {
  const ModelDescription &d = g.desc();
  OpBuilder &b = g.builder();
  const int64_t kDyn = ShapedType::kDynamic;
  int64_t P = d.patch_size, C = d.channels, S = d.image_size, H = d.hidden;
  int64_t side = S / P, patches = d.numPatches(), tokens = patches + 1;
  int64_t kvDim = d.kv_heads * d.headDim();
  Sequences seq{g.param("cu_seqlens")};

  g.setScope("patch_embed");
  // [B, C, S, S] -> [B, C, side, P, side, P] -> [B, side, side, C, P, P]
  Value pixels = g.reshape(g.param("pixels"), {kDyn, C, side, P, side, P});
  auto permuted = b.create<TransposeOp>(
      g.loc(), pixels, b.getDenseI64ArrayAttr({0, 2, 4, 1, 3, 5}));
  Value flat = g.reshape(permuted, {kDyn, C * P * P});
  Value weight = g.reshape(g.param("patch_embed.proj.weight"), {H, C * P * P});
  g.bind("patch_embed.proj.weight.flat", weight);
  Value x = g.linear(flat, "patch_embed.proj.weight.flat",
                     "patch_embed.proj.bias", WeightLayout::OutIn);
  x = g.reshape(x, {kDyn, patches, H});

  g.setScope("cls_token");
  auto clsType = RankedTensorType::get({kDyn, 1, H}, g.computeType());
  Value cls = b.create<BroadcastOp>(
      g.loc(), clsType, g.param("cls_token"), ValueRange{g.dim(x, 0)},
      b.getDenseI64ArrayAttr({0, 1, 2}));
  x = b.create<ConcatOp>(g.loc(), ValueRange{cls, x}, /*axis=*/1);
  g.setScope("pos_embed");
  Value pos = g.reshape(g.param("pos_embed"), {tokens, H});
  x = g.add(x, g.broadcastLike(pos, x, {1, 2}));
  x = g.dropout(g.reshape(x, {kDyn, H}), d.hidden_dropout);

  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    std::string p = llvm::formatv("blocks.{0}", i).str();
    g.setScope(p);
    x = g.residual(x, join(p, "norm1"), [&](Value h) {
      Value qkv = g.linear(h, join(p, "attn.qkv.weight"),
                           join(p, "attn.qkv.bias"), WeightLayout::OutIn);
      auto part = [&](int64_t start, int64_t size) -> Value {
        return b.create<SliceOp>(g.loc(), qkv, /*axis=*/1, start, start + size)
            .getResult();
      };
      // Sequenced: argument evaluation order would make the IR compiler-dependent.
      Value q = part(0, H);
      Value k = part(H, kvDim);
      Value v = part(H + kvDim, kvDim);
      Value a = g.attention(q, k, v, seq, seq, /*causal=*/false);
      return g.linear(a, join(p, "attn.proj.weight"), join(p, "attn.proj.bias"),
                      WeightLayout::OutIn);
    });
    x = g.residual(x, join(p, "norm2"), [&](Value h) {
      return g.feedForward(h, join(p, "mlp.fc1"), join(p, "mlp.fc2"),
                           WeightLayout::OutIn);
    });
  }

  g.setScope("head");
  // The class token is position 0 of each image's sequence. Layer norm acts
  // per row, so normalizing after the slice equals timm's order.
  Value perImage = g.reshape(x, {kDyn, tokens, H});
  Value clsState = b.create<SliceOp>(g.loc(), perImage, /*axis=*/1, 0, 1);
  Value pooled = g.reshape(clsState, {kDyn, H});
  if (d.norm == NormPlacement::Pre)
    pooled = g.layerNorm(pooled, "norm");
  Value logits = g.linear(pooled, "head.weight", "head.bias",
                          WeightLayout::OutIn);
  return g.loss(logits, g.param("labels"), /*ignoreIndex=*/-100);
}

} // namespace ls2c
