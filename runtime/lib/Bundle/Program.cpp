//===- Program.cpp - dtypes and equality of compiled programs -------------===//
#include "ls2c/Runtime/Program.h"

namespace ls2c::runtime {

unsigned dtypeBytes(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I1:
    return 1;
  }
  return 0; // not an enumerator (validateProgram rejects it)
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::I1:
    return "i1";
  }
  return "?";
}

bool parseDType(const std::string &name, DType &out) {
  static constexpr DType all[] = {DType::F32, DType::F16, DType::BF16,
                                  DType::F64, DType::I32, DType::I64,
                                  DType::I1};
  for (DType t : all)
    if (name == dtypeName(t)) {
      out = t;
      return true;
    }
  return false;
}

//===----------------------------------------------------------------------===//
// Equality
//===----------------------------------------------------------------------===//

bool operator==(const Dim &a, const Dim &b) {
  if (a.isStatic() != b.isStatic())
    return false;
  if (a.isStatic())
    return a.size == b.size;
  return a.argument == b.argument && a.axis == b.axis &&
         a.multiplier == b.multiplier && a.divisor == b.divisor;
}

bool operator==(const TensorSpec &a, const TensorSpec &b) {
  return a.name == b.name && a.kind == b.kind && a.dtype == b.dtype &&
         a.shape == b.shape && a.maxShape == b.maxShape && a.inPlaceOf == b.inPlaceOf;
}

bool operator==(const BufferRef &a, const BufferRef &b) {
  return a.space == b.space && a.index == b.index &&
         a.byteOffset == b.byteOffset && a.maxBytes == b.maxBytes;
}

bool operator==(const LaunchConfig &a, const LaunchConfig &b) {
  return a.blockThreads == b.blockThreads &&
         a.dynamicSharedBytes == b.dynamicSharedBytes && a.work == b.work &&
         a.workPerBlock == b.workPerBlock && a.maxBlocks == b.maxBlocks;
}

bool operator==(const Kernel &a, const Kernel &b) {
  return a.name == b.name && a.source == b.source && a.params == b.params &&
         a.launch == b.launch && a.scratchBytes == b.scratchBytes &&
         a.cubins == b.cubins;
}

bool operator==(const KernelArg &a, const KernelArg &b) {
  if (a.kind != b.kind)
    return false;
  if (a.kind == ParamKind::Pointer)
    return a.buffer == b.buffer;
  return a.value == b.value;
}

bool operator==(const Gemm &a, const Gemm &b) {
  return a.a == b.a && a.b == b.b && a.c == b.c && a.bias == b.bias &&
         a.biasGrad == b.biasGrad && a.aType == b.aType && a.bType == b.bType &&
         a.cType == b.cType && a.biasType == b.biasType &&
         a.transposeA == b.transposeA && a.transposeB == b.transposeB &&
         a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch &&
         a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc &&
         a.strideA == b.strideA && a.strideB == b.strideB &&
         a.strideC == b.strideC && a.epilogue == b.epilogue &&
         a.aux == b.aux && a.auxLd == b.auxLd;
}

bool epilogueHasBias(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::Bias:
  case GemmEpilogue::ReluBias:
  case GemmEpilogue::ReluAuxBias:
  case GemmEpilogue::GeluBias:
  case GemmEpilogue::GeluAuxBias:
    return true;
  default:
    return false;
  }
}

bool epilogueHasBiasGrad(GemmEpilogue e) {
  return e == GemmEpilogue::BiasGradA || e == GemmEpilogue::DReluBGrad ||
         e == GemmEpilogue::DGeluBGrad;
}

bool epilogueWritesAux(GemmEpilogue e) {
  return e == GemmEpilogue::ReluAux || e == GemmEpilogue::ReluAuxBias ||
         e == GemmEpilogue::GeluAux || e == GemmEpilogue::GeluAuxBias;
}

bool epilogueReadsAux(GemmEpilogue e) {
  return e == GemmEpilogue::DRelu || e == GemmEpilogue::DReluBGrad ||
         e == GemmEpilogue::DGelu || e == GemmEpilogue::DGeluBGrad;
}

bool epilogueIsRelu(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::Relu:
  case GemmEpilogue::ReluAux:
  case GemmEpilogue::ReluBias:
  case GemmEpilogue::ReluAuxBias:
  case GemmEpilogue::DRelu:
  case GemmEpilogue::DReluBGrad:
    return true;
  default:
    return false;
  }
}

bool epilogueIsActivation(GemmEpilogue e) {
  return e != GemmEpilogue::None && e != GemmEpilogue::Bias &&
         e != GemmEpilogue::BiasGradA;
}

const char *epilogueName(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return "none";
  case GemmEpilogue::Bias:
    return "bias";
  case GemmEpilogue::BiasGradA:
    return "bias_grad_a";
  case GemmEpilogue::Relu:
    return "relu";
  case GemmEpilogue::ReluAux:
    return "relu_aux";
  case GemmEpilogue::ReluBias:
    return "relu_bias";
  case GemmEpilogue::ReluAuxBias:
    return "relu_aux_bias";
  case GemmEpilogue::Gelu:
    return "gelu";
  case GemmEpilogue::GeluAux:
    return "gelu_aux";
  case GemmEpilogue::GeluBias:
    return "gelu_bias";
  case GemmEpilogue::GeluAuxBias:
    return "gelu_aux_bias";
  case GemmEpilogue::DRelu:
    return "drelu";
  case GemmEpilogue::DReluBGrad:
    return "drelu_bgrad";
  case GemmEpilogue::DGelu:
    return "dgelu";
  case GemmEpilogue::DGeluBGrad:
    return "dgelu_bgrad";
  }
  return "?";
}

bool operator==(const Attention &a, const Attention &b) {
  return a.backward == b.backward && a.dtype == b.dtype && a.heads == b.heads &&
         a.kvHeads == b.kvHeads && a.headDim == b.headDim &&
         a.causal == b.causal && a.scale == b.scale &&
         a.dropoutRate == b.dropoutRate && a.stream == b.stream &&
         a.tokensQ == b.tokensQ && a.tokensK == b.tokensK &&
         a.batchPlusOne == b.batchPlusOne && a.strideQ == b.strideQ &&
         a.strideK == b.strideK && a.strideV == b.strideV &&
         a.strideO == b.strideO && a.q == b.q && a.k == b.k && a.v == b.v &&
         a.out == b.out && a.lse == b.lse && a.cuSeqlensQ == b.cuSeqlensQ &&
         a.cuSeqlensK == b.cuSeqlensK && a.seed == b.seed &&
         a.offset == b.offset && a.dout == b.dout && a.dq == b.dq &&
         a.dk == b.dk && a.dv == b.dv && a.strideDO == b.strideDO &&
         a.strideDQ == b.strideDQ && a.strideDK == b.strideDK &&
         a.strideDV == b.strideDV && a.fallbackSteps == b.fallbackSteps &&
         a.maxSeqLen == b.maxSeqLen;
}

bool operator==(const Step &a, const Step &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case Step::Kind::Launch:
    return a.kernel == b.kernel && a.args == b.args;
  case Step::Kind::Gemm:
    return a.gemm == b.gemm;
  case Step::Kind::Attention:
    return a.attention == b.attention;
  case Step::Kind::Copy:
    return a.copySource == b.copySource &&
           a.copyDestination == b.copyDestination;
  }
  return true; // equal non-enumerator kinds carry nothing comparable
}

bool operator==(const Function &a, const Function &b) {
  return a.name == b.name && a.arguments == b.arguments &&
         a.results == b.results && a.arenaBytes == b.arenaBytes &&
         a.steps == b.steps;
}

bool operator==(const ParameterSlot &a, const ParameterSlot &b) {
  return a.name == b.name && a.shape == b.shape && a.offset == b.offset &&
         a.weightDecay == b.weightDecay;
}

bool operator==(const Program &a, const Program &b) {
  return a.modelName == b.modelName && a.description == b.description &&
         a.computeDType == b.computeDType &&
         a.workspaceElements == b.workspaceElements &&
         a.parameters == b.parameters && a.arenaBytes == b.arenaBytes &&
         a.scratchOffset == b.scratchOffset && a.kernels == b.kernels &&
         a.functions == b.functions;
}

} // namespace ls2c::runtime
