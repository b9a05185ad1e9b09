//===- ModelInputs.cpp - random weights and batches for the tiny presets --===//
#include "ModelInputs.h"

#include "ls2/IR/LS2Dialect.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

namespace ls2c::reference::testing {

namespace {
/// Token sequences: ids, 0-based positions, cu_seqlens.
struct Batch {
  std::vector<int64_t> ids, positions, cu = {0};
};

Batch tokens(std::mt19937 &rng, const std::vector<int64_t> &lengths,
             int64_t vocab) {
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  Batch b;
  for (int64_t l : lengths) {
    for (int64_t i = 0; i < l; ++i) {
      b.ids.push_back(id(rng));
      b.positions.push_back(i);
    }
    b.cu.push_back(b.cu.back() + l);
  }
  return b;
}

HostTensor i32(const std::vector<int64_t> &v) {
  return HostTensor::fromInts(ElementType::I32,
                              {static_cast<int64_t>(v.size())}, v);
}

} // namespace

std::string argName(mlir::func::FuncOp f, unsigned i) {
  auto name = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name");
  return name ? name.str() : "";
}

std::string argKind(mlir::func::FuncOp f, unsigned i) {
  auto kind = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.kind");
  return kind ? kind.str() : "";
}

/// Arguments of @forward: weights by kind (parameters that are layer-norm
/// scales near 1), then the architecture's inputs by name.
std::vector<HostTensor> modelArguments(const ls2c::ModelDescription &d,
                                       mlir::func::FuncOp forward,
                                       std::mt19937 &rng) {
  llvm::DenseSet<mlir::Value> lnScales;
  forward.walk([&](ls2c::ls2::LayerNormOp op) { lnScales.insert(op.getGamma()); });
  // Two sequences of different lengths per side (cross attention sees
  // Lq != Lk), plus a length-1 sequence for the decoder-only model.
  std::vector<int64_t> srcLengths = {5, 3};
  std::vector<int64_t> tgtLengths =
      ls2c::isCausalLM(d.architecture)
          ? std::vector<int64_t>{5, 3, 1}
          : std::vector<int64_t>{3, 5};
  Batch src = tokens(rng, srcLengths, d.src_vocab ? d.src_vocab : d.vocab);
  Batch tgt = tokens(rng, d.architecture == ls2c::Architecture::Encoder
                              ? srcLengths
                              : tgtLengths,
                     std::max<int64_t>(d.vocab, 1));
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    std::string name = argName(forward, i), kind = argKind(forward, i);
    auto type = mlir::cast<mlir::RankedTensorType>(forward.getArgument(i).getType());
    if (kind == "parameter" || kind == "buffer") {
      std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
      std::vector<double> w = normal(rng, count(shape), 0.1);
      // Layer norms' and RMSNorms' scales (llama's "...norm.weight").
      if (lnScales.contains(forward.getArgument(i)) ||
          llvm::StringRef(name).ends_with("norm.weight"))
        for (double &x : w)
          x += 1.0;
      for (double &x : w)
        x = static_cast<float>(x);
      args.push_back(HostTensor::fromFloats(ElementType::F32, shape, w));
      continue;
    }
    std::uniform_int_distribution<int64_t> vocab(0, std::max<int64_t>(d.vocab, 1) - 1);
    if (name == "input_ids") {
      args.push_back(i32(d.architecture == ls2c::Architecture::Encoder ? src.ids
                                                                     : tgt.ids));
    } else if (name == "position_ids") {
      args.push_back(i32(d.architecture == ls2c::Architecture::Encoder
                             ? src.positions
                             : tgt.positions));
    } else if (name == "cu_seqlens" && d.architecture != ls2c::Architecture::ViT) {
      args.push_back(i32(d.architecture == ls2c::Architecture::Encoder ? src.cu
                                                                     : tgt.cu));
    } else if (name == "token_type_ids") {
      std::vector<int64_t> types(src.ids.size());
      for (size_t t = 0; t < types.size(); ++t)
        types[t] = t % 3 == 2;
      args.push_back(i32(types));
    } else if (name == "src_ids") {
      args.push_back(i32(src.ids));
    } else if (name == "src_position_ids") {
      args.push_back(i32(src.positions));
    } else if (name == "src_cu_seqlens") {
      args.push_back(i32(src.cu));
    } else if (name == "tgt_ids") {
      args.push_back(i32(tgt.ids));
    } else if (name == "tgt_position_ids") {
      args.push_back(i32(tgt.positions));
    } else if (name == "tgt_cu_seqlens") {
      args.push_back(i32(tgt.cu));
    } else if (name == "labels") {
      std::vector<int64_t> labels;
      switch (d.architecture) {
      case ls2c::Architecture::Encoder: // masked-LM: some positions carry loss
        for (size_t t = 0; t < src.ids.size(); ++t)
          labels.push_back(t % 2 == 0 ? vocab(rng) : -100);
        break;
      case ls2c::Architecture::Decoder: // next tokens, -100 at each end
      case ls2c::Architecture::Llama:
        for (size_t s = 0; s + 1 < tgt.cu.size(); ++s)
          for (int64_t t = tgt.cu[s]; t < tgt.cu[s + 1]; ++t)
            labels.push_back(t + 1 < tgt.cu[s + 1] ? tgt.ids[t + 1] : -100);
        break;
      case ls2c::Architecture::EncoderDecoder: // padding_idx carries no loss
        for (size_t t = 0; t < tgt.ids.size(); ++t)
          labels.push_back(t == 2 ? d.padding_idx : vocab(rng));
        break;
      case ls2c::Architecture::ViT: {
        std::uniform_int_distribution<int64_t> cls(0, d.num_classes - 1);
        labels = {cls(rng), cls(rng)};
        break;
      }
      }
      args.push_back(i32(labels));
    } else if (name == "dropout_seed") {
      args.push_back(HostTensor::scalarInt(ElementType::I64, 1234));
    } else if (name == "dropout_offset") {
      args.push_back(HostTensor::scalarInt(ElementType::I64, 5));
    } else if (name == "pixels") {
      std::vector<int64_t> shape = {2, d.channels, d.image_size, d.image_size};
      std::vector<double> px = normal(rng, count(shape), 1.0);
      for (double &x : px)
        x = static_cast<float>(x);
      args.push_back(HostTensor::fromFloats(ElementType::F32, shape, px));
    } else if (name == "cu_seqlens") { // ViT: every image numPatches + 1 tokens
      int64_t n = d.numPatches() + 1;
      args.push_back(i32({0, n, 2 * n}));
    } else {
      ADD_FAILURE() << "the test does not know input '" << name << "'";
      args.push_back(HostTensor());
    }
  }
  return args;
}


} // namespace ls2c::reference::testing
