//===- KernelGenerator.cpp - one CUDA kernel per fusion group -------------===//

#include "ls2c/Codegen/KernelGenerator.h"

#include "KernelContext.h"
#include "Prelude.h"

#include "ls2c/Transforms/PaddedRows.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <numeric>

using namespace mlir;

namespace ls2c::codegen {

KernelContext::KernelContext(ls2::FusionOp fusion, const SymbolicDims &dims,
                             const ShapeBounds &bounds, std::string name)
    : fusion(fusion), dims(dims), bounds(bounds), name(std::move(name)) {
  Block &body = fusion.getBody().front();
  for (BlockArgument arg : body.getArguments())
    argNames.push_back((isa<IndexType>(arg.getType()) ? "n" : "in") +
                       std::to_string(arg.getArgNumber()));
  for (unsigned i = 0; i < fusion.getNumResults(); ++i)
    resultNames.push_back("out" + std::to_string(i));
  for (auto [i, v] : llvm::enumerate(fusion.getInputs()))
    argStrides.push_back(paddedRowStride(v) ? "ld_in" + std::to_string(i) : "");
  for (auto [i, v] : llvm::enumerate(fusion.getResults()))
    resultStrides.push_back(paddedRowStride(v) ? "ld_out" + std::to_string(i) : "");
  emitter = std::make_unique<ElementalEmitter>(
      fusion, dims, argNames,
      [this](const runtime::Dim &d) { return dimName(d); });
  emitter->argRowStrides = argStrides;
  emitter->constantName = [this](int64_t value) {
    for (size_t i = 0; i < constantParams.size(); ++i)
      if (constantParams[i] == value)
        return "k" + std::to_string(i);
    constantParams.push_back(value);
    return "k" + std::to_string(constantParams.size() - 1);
  };
}

bool KernelContext::anyStrided() const {
  auto named = [](const std::string &n) { return !n.empty(); };
  return llvm::any_of(argStrides, named) || llvm::any_of(resultStrides, named);
}

std::string KernelContext::dimName(const runtime::Dim &d) {
  if (d.isStatic())
    return std::to_string(d.size);
  if (d.multiplier != 1 || d.divisor != 1) {
    runtime::Dim base = d;
    base.multiplier = base.divisor = 1;
    std::string text = dimName(base);
    if (d.multiplier != 1)
      text += " * " + std::to_string(d.multiplier);
    if (d.divisor != 1)
      text += " / " + std::to_string(d.divisor);
    return "(" + text + ")";
  }
  Block &body = fusion.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (isa<IndexType>(arg.getType()) && sameDim(dims.index(arg), d))
      return argNames[arg.getArgNumber()];
  for (const runtime::Dim &p : sizeParams)
    if (sameDim(p, d))
      return "d" + std::to_string(d.argument) + "_" + std::to_string(d.axis);
  sizeParams.push_back(d);
  return "d" + std::to_string(d.argument) + "_" + std::to_string(d.axis);
}

std::vector<std::string> KernelContext::dimTexts(ArrayRef<runtime::Dim> ds) {
  std::vector<std::string> out;
  for (const runtime::Dim &d : ds)
    out.push_back(dimName(d));
  return out;
}

std::string KernelContext::product(ArrayRef<runtime::Dim> ds) {
  int64_t staticPart = 1;
  std::string text;
  for (const runtime::Dim &d : ds) {
    if (d.isStatic()) {
      staticPart *= d.size;
      continue;
    }
    text += (text.empty() ? "" : " * ") + dimName(d);
  }
  if (text.empty())
    return std::to_string(staticPart);
  if (staticPart != 1)
    text += " * " + std::to_string(staticPart);
  return text;
}


Value KernelContext::yieldValue(unsigned i) {
  return fusion.getBody().front().getTerminator()->getOperand(i);
}

unsigned KernelContext::numYields() {
  return fusion.getBody().front().getTerminator()->getNumOperands();
}

bool KernelContext::sameCount(ArrayRef<runtime::Dim> a, ArrayRef<runtime::Dim> b) {
  // A product as (dynamic base or none, numerator, denominator).
  auto count = [](ArrayRef<runtime::Dim> ds, runtime::Dim &base, int64_t &num,
                  int64_t &den) {
    num = 1;
    den = 1;
    int dynamic = 0;
    for (const runtime::Dim &d : ds) {
      if (d.isStatic()) {
        num *= d.size;
        continue;
      }
      ++dynamic;
      base = d;
      num *= d.multiplier;
      den *= d.divisor;
    }
    int64_t g = std::gcd(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
    return dynamic;
  };
  runtime::Dim ba, bb;
  int64_t na, da, nb, db;
  int dynA = count(a, ba, na, da), dynB = count(b, bb, nb, db);
  if (dynA > 1 || dynB > 1 || dynA != dynB || na != nb || da != db)
    return false;
  return dynA == 0 || (ba.argument == bb.argument && ba.axis == bb.axis);
}

int64_t KernelContext::bound(ArrayRef<runtime::Dim> ds) {
  auto function = fusion->getParentOfType<func::FuncOp>();
  int64_t p = 1;
  for (const runtime::Dim &d : ds)
    p *= d.isStatic() ? d.size
                      : bounds.shape(function.getArgument(d.argument))[d.axis] *
                            d.multiplier / d.divisor;
  return p;
}

std::string storeText(KernelContext &ctx, unsigned i, const std::string &flat,
                      const std::string &value) {
  return "ls2_store(" + ctx.resultNames[i] + ", " + flat + ", " + value + ");";
}

bool sameIndex(const Index &a, const Index &b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (x.text != y.text)
      return false;
  return true;
}

FailureOr<std::vector<GeneratedKernel>>
generateFusionKernels(ls2::FusionOp fusion, const SymbolicDims &dims,
                      const ShapeBounds &bounds, const std::string &kernelName) {
  KernelContext ctx(fusion, dims, bounds, kernelName);
  try {
    if (ctx.anyStrided() && fusion.getKind() != ls2::FusionKind::RowReduction)
      throw EmitError{fusion, "reads or writes padded rows, which only row "
                              "reductions take"};
    switch (fusion.getKind()) {
    case ls2::FusionKind::Loop:
      emitLoopKernel(ctx);
      break;
    case ls2::FusionKind::RowReduction:
      emitRowReductionKernel(ctx);
      break;
    case ls2::FusionKind::ColumnReduction:
      emitColumnReductionKernel(ctx);
      break;
    }
  } catch (const EmitError &e) {
    InFlightDiagnostic diag =
        (e.op ? e.op : fusion.getOperation())->emitError(e.message);
    diag << " (generating kernel " << kernelName << ")";
    return failure();
  }

  GeneratedKernel out;
  runtime::Kernel &k = out.kernel;
  k.name = kernelName;
  k.launch = ctx.launch;
  k.scratchBytes = ctx.scratchBytes;

  Block &body = fusion.getBody().front();
  std::vector<std::string> params;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (isa<IndexType>(arg.getType())) {
      params.push_back("const long long " + ctx.argNames[i]);
      k.params.push_back(runtime::ParamKind::Int64);
    } else {
      Type et = cast<RankedTensorType>(arg.getType()).getElementType();
      params.push_back("const " + storageType(et) + " *" + ctx.argNames[i]);
      k.params.push_back(runtime::ParamKind::Pointer);
    }
    out.bindings.push_back({ParamBinding::Kind::Operand, i, {}});
  }
  for (unsigned i = 0; i < fusion.getNumResults(); ++i) {
    Type et = cast<RankedTensorType>(fusion.getResult(i).getType()).getElementType();
    params.push_back(storageType(et) + " *" + ctx.resultNames[i]);
    k.params.push_back(runtime::ParamKind::Pointer);
    out.bindings.push_back({ParamBinding::Kind::Result, i, {}});
  }
  // Row strides, after the pointers: each padded tensor's (PaddedRows.h).
  for (auto [strides, ofResult] : {std::pair{&ctx.argStrides, false},
                                   std::pair{&ctx.resultStrides, true}})
    for (auto [i, name] : llvm::enumerate(*strides)) {
      if (name.empty())
        continue;
      params.push_back("const long long " + name);
      k.params.push_back(runtime::ParamKind::Int64);
      ParamBinding b{ParamBinding::Kind::RowStride, static_cast<unsigned>(i), {}};
      b.ofResult = ofResult;
      out.bindings.push_back(b);
    }
  for (const runtime::Dim &d : ctx.sizeParams) {
    params.push_back("const long long d" + std::to_string(d.argument) + "_" +
                     std::to_string(d.axis));
    k.params.push_back(runtime::ParamKind::Int64);
    out.bindings.push_back({ParamBinding::Kind::Size, 0, d});
  }
  for (size_t i = 0; i < ctx.constantParams.size(); ++i) {
    params.push_back("const long long k" + std::to_string(i));
    k.params.push_back(runtime::ParamKind::Int64);
    ParamBinding b{ParamBinding::Kind::Constant, 0, {}};
    b.value = ctx.constantParams[i];
    out.bindings.push_back(b);
  }
  if (ctx.usesScratch) {
    params.push_back("unsigned char *scratch");
    k.params.push_back(runtime::ParamKind::Pointer);
    out.bindings.push_back({ParamBinding::Kind::Scratch, 0, {}});
  }

  // Dynamic work dims name the kernel's own int64 parameter that holds the
  // size (the kernel is shared by launches in several functions).
  for (runtime::Dim &w : k.launch.work) {
    if (w.isStatic())
      continue;
    runtime::Dim base = w;
    base.multiplier = base.divisor = 1;
    int param = -1;
    for (size_t i = 0; i < out.bindings.size() && param < 0; ++i) {
      const ParamBinding &b = out.bindings[i];
      if (b.kind == ParamBinding::Kind::Size && sameDim(b.size, base))
        param = static_cast<int>(i);
      if (b.kind == ParamBinding::Kind::Operand &&
          isa<IndexType>(body.getArgument(b.index).getType()) &&
          sameDim(dims.index(body.getArgument(b.index)), base))
        param = static_cast<int>(i);
    }
    if (param < 0) {
      fusion.emitError("the kernel's work size is no parameter of it (generating kernel ")
          << kernelName << ")";
      return failure();
    }
    w.argument = param;
    w.axis = 0;
  }

  std::string kind = fusion.getKind() == ls2::FusionKind::Loop ? "loop"
                     : fusion.getKind() == ls2::FusionKind::RowReduction
                         ? "row_reduction"
                         : "column_reduction";
  auto source = [&](const std::string &name, const std::string &what, uint32_t threads,
                    const std::string &body, unsigned minBlocks = 0) {
    std::string src;
    src += "// Generated by ls2c: " + what + "fusion group \"" + fusion.getGroupName().str() +
           "\" (" + kind + ") of @" +
           fusion->getParentOfType<func::FuncOp>().getName().str() + ".\n";
    src += kernelPrelude();
    src += "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) +
           (minBlocks ? ", " + std::to_string(minBlocks) : std::string()) + ")\n" + name + "(";
    for (size_t i = 0; i < params.size(); ++i)
      src += (i ? ",\n    " : "") + params[i];
    src += ") {\n" + body + "}\n";
    return src;
  };
  k.source = source(kernelName, "", ctx.launch.blockThreads,
                    ctx.sharedDecls + ctx.emitter->takeKernelScope() + ctx.code,
                    ctx.minBlocksPerMultiprocessor);
  std::vector<GeneratedKernel> kernels;
  kernels.push_back(std::move(out));
  if (!ctx.secondCode.empty()) {
    // The second stage: same parameters, run right after (its scratch holds
    // what the first left there).
    const GeneratedKernel &first = kernels.front();
    GeneratedKernel second;
    second.bindings = first.bindings;
    second.kernel.name = kernelName + "_columns";
    second.kernel.params = first.kernel.params;
    second.kernel.launch = ctx.secondLaunch;
    second.kernel.scratchBytes = ctx.scratchBytes;
    second.kernel.source = source(second.kernel.name, "the column sums of ",
                                  ctx.secondLaunch.blockThreads, ctx.secondCode);
    kernels.push_back(std::move(second));
  }
  return kernels;
}

} // namespace ls2c::codegen
