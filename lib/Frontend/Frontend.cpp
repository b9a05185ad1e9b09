//===- Frontend.cpp - model description -> func.func @forward -------------===//
#include "ls2c/Frontend/Frontend.h"

#include "GraphBuilder.h"

#include "ls2/IR/LS2Dialect.h"
#include "ls2c/Model/ParameterLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>

using namespace mlir;

namespace ls2c {

namespace {

/// The data inputs of each architecture, after the parameters.
SmallVector<FunctionArgument> dataInputs(Builder &b, const ModelDescription &d,
                                 Type computeType) {
  const int64_t kDyn = ShapedType::kDynamic;
  auto ids = RankedTensorType::get({kDyn}, b.getI32Type());
  // Bounds the buffer plan is made for: tokens per side and sequences per
  // batch are at most max_batch_tokens (an empty sequence still counts
  // against it), ViT images at most max_batch_tokens / (patches + 1).
  const int64_t tokens = d.max_batch_tokens;
  const int64_t images =
      d.architecture == Architecture::ViT
          ? std::max<int64_t>(1, d.max_batch_tokens / (d.numPatches() + 1))
          : 0;
  const int64_t sequences = images ? images : tokens;
  SmallVector<FunctionArgument> in;
  auto add = [&](StringRef name, Type type) {
    SmallVector<int64_t> bound;
    auto t = cast<RankedTensorType>(type);
    if (t.getNumDynamicDims()) {
      bound.assign(t.getShape().begin(), t.getShape().end());
      int64_t first = name.ends_with("cu_seqlens") ? sequences + 1
                      : images                    ? images
                                                  : tokens;
      bound[0] = first;
    }
    in.push_back({name.str(), type, "input", false, bound});
  };
  switch (d.architecture) {
  case Architecture::Encoder:
    for (StringRef n : {"input_ids", "token_type_ids", "position_ids",
                        "cu_seqlens", "labels"})
      add(n, ids);
    break;
  case Architecture::Decoder:
  case Architecture::Llama:
    for (StringRef n : {"input_ids", "position_ids", "cu_seqlens", "labels"})
      add(n, ids);
    break;
  case Architecture::EncoderDecoder:
    for (StringRef n : {"src_ids", "src_position_ids", "src_cu_seqlens",
                        "tgt_ids", "tgt_position_ids", "tgt_cu_seqlens",
                        "labels"})
      add(n, ids);
    break;
  case Architecture::ViT:
    add("pixels", RankedTensorType::get(
                      {kDyn, d.channels, d.image_size, d.image_size},
                      computeType));
    add("cu_seqlens", ids);
    add("labels", ids);
    break;
  }
  if (d.hidden_dropout > 0 || d.attention_dropout > 0 ||
      d.activation_dropout > 0) {
    auto scalarI64 = RankedTensorType::get({}, b.getI64Type());
    add("dropout_seed", scalarI64);
    add("dropout_offset", scalarI64);
  }
  return in;
}

/// The optimizer settings the train-step pass reads (docs/architecture.md).
DictionaryAttr optimizerAttr(Builder &b, const ModelDescription &d) {
  const OptimizerConfig &o = d.optimizer;
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("type", b.getStringAttr(toString(o.type))),
      b.getNamedAttr("lr", b.getF64FloatAttr(o.lr)),
      b.getNamedAttr("beta1", b.getF64FloatAttr(o.beta1)),
      b.getNamedAttr("beta2", b.getF64FloatAttr(o.beta2)),
      b.getNamedAttr("eps", b.getF64FloatAttr(o.eps)),
      b.getNamedAttr("weight_decay", b.getF64FloatAttr(o.weight_decay)),
      b.getNamedAttr("clip_norm", b.getF64FloatAttr(o.clip_norm)),
      b.getNamedAttr("bucket_cap_mb", b.getF64FloatAttr(o.bucket_cap_mb)),
      b.getNamedAttr("schedule", b.getStringAttr(toString(o.schedule.type))),
      b.getNamedAttr("warmup_steps", b.getI64IntegerAttr(o.schedule.warmup_steps)),
      b.getNamedAttr("total_steps", b.getI64IntegerAttr(o.schedule.total_steps)),
      b.getNamedAttr("min_lr_ratio", b.getF64FloatAttr(o.schedule.min_lr_ratio)),
  };
  if (d.dtype == DType::F16) {
    // Dynamic loss scaling with torch.cuda.amp.GradScaler's defaults.
    fields.push_back(b.getNamedAttr("loss_scale_init", b.getF64FloatAttr(65536.0)));
    fields.push_back(b.getNamedAttr("loss_scale_growth_interval",
                                    b.getI64IntegerAttr(2000)));
  }
  return b.getDictionaryAttr(fields);
}

} // namespace

SmallVector<FunctionArgument> parameterArguments(const ModelDescription &desc,
                                                 Type computeType) {
  SmallVector<FunctionArgument> args;
  for (const ParameterSpec &p : buildParameterLayout(desc).parameters)
    args.push_back({p.name, RankedTensorType::get(p.shape, computeType),
                    p.trainable ? "parameter" : "buffer", p.weight_decay, {}});
  return args;
}

func::FuncOp declareFunction(GraphBuilder &g, Location loc, StringRef name,
                             ArrayRef<FunctionArgument> args, TypeRange results) {
  OpBuilder &b = g.builder();
  SmallVector<Type> types;
  for (const FunctionArgument &a : args)
    types.push_back(a.type);
  auto func = b.create<func::FuncOp>(loc, name, b.getFunctionType(types, results));
  Block *entry = func.addEntryBlock();
  // All at once: setting them one by one rebuilds the attribute array each
  // time (quadratic in the argument count).
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [i, a] : llvm::enumerate(args)) {
    SmallVector<NamedAttribute, 3> attrs = {
        b.getNamedAttr("ls2.name", b.getStringAttr(a.name)),
        b.getNamedAttr("ls2.kind", b.getStringAttr(a.kind))};
    if (a.kind == "parameter")
      attrs.push_back(
          b.getNamedAttr("ls2.weight_decay", b.getBoolAttr(a.weightDecay)));
    if (!a.maxShape.empty())
      attrs.push_back(b.getNamedAttr("ls2.max_shape",
                                     b.getDenseI64ArrayAttr(a.maxShape)));
    argAttrs.push_back(b.getDictionaryAttr(attrs));
    g.bind(a.name, entry->getArgument(i));
  }
  func.setAllArgAttrs(argAttrs);
  b.setInsertionPointToStart(entry);
  return func;
}

void loadFrontendDialects(MLIRContext &context) {
  context.loadDialect<ls2::LS2Dialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> buildForwardModule(MLIRContext &context,
                                         const ModelDescription &desc) {
  loadFrontendDialects(context);
  OpBuilder b(&context);
  Location loc = NameLoc::get(b.getStringAttr(desc.name.empty() ? "model"
                                                                : desc.name));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, desc.name.empty()
                                                           ? std::nullopt
                                                           : std::optional<StringRef>(desc.name));
  (*module)->setAttr("ls2.optimizer", optimizerAttr(b, desc));
  if (desc.activation_checkpointing)
    (*module)->setAttr("ls2.activation_checkpointing", b.getUnitAttr());
  if (desc.recompute_attention)
    (*module)->setAttr("ls2.recompute_attention", b.getUnitAttr());
  GraphBuilder g(b, desc);

  SmallVector<FunctionArgument> args = parameterArguments(desc, g.computeType());
  llvm::append_range(args, dataInputs(b, desc, g.computeType()));
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  b.setInsertionPointToEnd(module->getBody());
  declareFunction(g, loc, "forward", args, {lossType});
  if (g.has("dropout_seed"))
    g.setRandomState(g.param("dropout_seed"), g.param("dropout_offset"));

  Value loss;
  switch (desc.architecture) {
  case Architecture::Encoder:
    loss = buildEncoder(g);
    break;
  case Architecture::Decoder:
    loss = buildDecoder(g);
    break;
  case Architecture::EncoderDecoder:
    loss = buildEncoderDecoder(g);
    break;
  case Architecture::ViT:
    loss = buildViT(g);
    break;
  case Architecture::Llama:
    loss = buildLlama(g);
    break;
  }
  b.create<func::ReturnOp>(loc, loss);

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace ls2c
