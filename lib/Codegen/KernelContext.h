//===- KernelContext.h - what the three kernel skeletons share ------------===//
#ifndef LS2C_LIB_CODEGEN_KERNELCONTEXT_H
#define LS2C_LIB_CODEGEN_KERNELCONTEXT_H

#include "ElementalEmitter.h"

#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Codegen/KernelGenerator.h"

#include <memory>

namespace ls2c::codegen {

/// Multiprocessors of the GPU the fixed grids of the reduction kernels are
/// sized for (an H200; their partition, and so their bits, must not depend
/// on the device that runs them).
constexpr uint32_t kH200Multiprocessors = 132;

/// One kernel being generated: parameter names, the emitter, and what the
/// skeleton produces (its code after the kernel scope, the launch config).
struct KernelContext {
  KernelContext(ls2::FusionOp fusion, const SymbolicDims &dims,
                const ShapeBounds &bounds, std::string name);

  ls2::FusionOp fusion;
  const SymbolicDims &dims;
  const ShapeBounds &bounds;
  std::string name;
  std::vector<std::string> argNames;    ///< per block argument
  std::vector<std::string> resultNames; ///< per fusion result
  /// Row-stride parameters of padded operands and results (PaddedRows.h):
  /// the C name, or "" for contiguous rows. Only row reductions take them.
  std::vector<std::string> argStrides, resultStrides;
  bool anyStrided() const;
  std::vector<runtime::Dim> sizeParams; ///< dynamic dims passed as params
  std::vector<int64_t> constantParams;  ///< integer constants passed as params
  std::unique_ptr<ElementalEmitter> emitter;

  // Filled by the skeleton.
  std::string code; ///< the kernel body after the kernel scope
  runtime::LaunchConfig launch;
  /// Bytes of kernel scratch. Every kernel's scratch is the same region of
  /// the arena (Program::scratchOffset), so what one kernel leaves there is
  /// what the next one finds: see kScratchCounterBytes (KernelGenerator.h).
  uint64_t scratchBytes = 0;
  bool usesScratch = false;
  std::string sharedDecls; ///< __shared__ declarations
  /// __launch_bounds__' second argument for the first kernel (0: none):
  /// blocks that must fit on a multiprocessor at once, registers capped to fit.
  unsigned minBlocksPerMultiprocessor = 0;
  /// A second kernel launched right after this one with the same
  /// parameters (a row reduction's column sums: the sum of the blocks'
  /// partials): its body after the kernel scope and its launch config;
  /// empty code when there is none.
  std::string secondCode;
  runtime::LaunchConfig secondLaunch;

  /// A dim as C text: the static size, or the parameter holding it.
  std::string dimName(const runtime::Dim &d);
  std::vector<std::string> dimTexts(llvm::ArrayRef<runtime::Dim> dims);
  /// The product of `dims` as C text ("1" when empty).
  std::string product(llvm::ArrayRef<runtime::Dim> dims);
  mlir::Value yieldValue(unsigned i);
  unsigned numYields();
  /// True when the two shapes have the same number of elements for every
  /// value of the dynamic sizes (at most one dynamic dim each).
  bool sameCount(llvm::ArrayRef<runtime::Dim> a, llvm::ArrayRef<runtime::Dim> b);
  /// Largest bound of a product of dims (dynamic ones at their max).
  int64_t bound(llvm::ArrayRef<runtime::Dim> dims);
};

/// The skeletons: each fills ctx.code, ctx.launch and the scratch fields,
/// or throws EmitError.
void emitLoopKernel(KernelContext &ctx);
void emitRowReductionKernel(KernelContext &ctx);
void emitColumnReductionKernel(KernelContext &ctx);

/// Store statement of `value` into result `i` at flat offset `flat`.
std::string storeText(KernelContext &ctx, unsigned i, const std::string &flat,
                      const std::string &value);
/// True when the two indices are the same text component by component.
bool sameIndex(const Index &a, const Index &b);

} // namespace ls2c::codegen

#endif // LS2C_LIB_CODEGEN_KERNELCONTEXT_H
