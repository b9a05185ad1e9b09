//===- Frontend.cpp - model description -> func.func @forward -------------===//
#include "ls2c/Frontend/Frontend.h"

#include "GraphBuilder.h"

#include "ls2/IR/LS2Dialect.h"
#include "ls2c/Model/ParameterLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace ls2c {

namespace {

struct Argument {
  std::string name;
  Type type;
  StringRef kind; // "parameter" | "buffer" | "input"
};

/// The data inputs of each architecture, after the parameters.
SmallVector<Argument> dataInputs(Builder &b, const ModelDescription &d,
                                 Type computeType) {
  const int64_t kDyn = ShapedType::kDynamic;
  auto ids = RankedTensorType::get({kDyn}, b.getI32Type());
  SmallVector<Argument> in;
  auto add = [&](StringRef name, Type type) {
    in.push_back({name.str(), type, "input"});
  };
  switch (d.architecture) {
  case Architecture::Encoder:
    for (StringRef n : {"input_ids", "token_type_ids", "position_ids",
                        "cu_seqlens", "labels"})
      add(n, ids);
    break;
  case Architecture::Decoder:
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

} // namespace

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
  GraphBuilder g(b, desc);

  SmallVector<Argument> args;
  for (const ParameterSpec &p : buildParameterLayout(desc).parameters)
    args.push_back({p.name, RankedTensorType::get(p.shape, g.computeType()),
                    p.trainable ? "parameter" : "buffer"});
  llvm::append_range(args, dataInputs(b, desc, g.computeType()));

  SmallVector<Type> types;
  for (const Argument &a : args)
    types.push_back(a.type);
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  b.setInsertionPointToEnd(module->getBody());
  auto func = b.create<func::FuncOp>(loc, "forward",
                                     b.getFunctionType(types, {lossType}));
  Block *entry = func.addEntryBlock();
  for (auto [i, a] : llvm::enumerate(args)) {
    func.setArgAttr(i, "ls2.name", b.getStringAttr(a.name));
    func.setArgAttr(i, "ls2.kind", b.getStringAttr(a.kind));
    g.bind(a.name, entry->getArgument(i));
  }
  b.setInsertionPointToStart(entry);
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
  }
  b.create<func::ReturnOp>(loc, loss);

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace ls2c
