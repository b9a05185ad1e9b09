//===- ElementalEmitter.h - CUDA C++ for one element of a fusion body -----===//
//
// Generated kernels compute each output element from the fusion body by
// walking it backwards from the yielded value at an index, mapping the index
// through every op (broadcast projects it, reshape re-linearizes it, gather
// reads it from the ids, ...): the elemental emitter of XLA's GPU backend,
// written for ls2's primitives. Values are emitted once per (value, index)
// into the outermost scope where all they read is defined:
//   level 0  kernel: constants, scalar arguments, sizes
//   level 1  outer loop: per row (row reductions) or per column (column
//            reductions)
//   level 2  element: the innermost loop
// Kernel skeletons (LoopKernel.cpp, RowReductionKernel.cpp,
// ColumnReductionKernel.cpp) open the scopes and loops and hook leaf loads
// (register caches, vector loads) and reductions (row phases).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_CODEGEN_ELEMENTALEMITTER_H
#define LS2C_LIB_CODEGEN_ELEMENTALEMITTER_H

#include "ls2c/Analysis/SymbolicDims.h"
#include "ls2/IR/LS2Dialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ls2c::codegen {

enum Level : int { kKernelLevel = 0, kOuterLevel = 1, kElementLevel = 2 };

/// One index component: a C expression of type long long and the scope
/// level of the variables it reads.
struct IndexExpr {
  std::string text;
  int level = kKernelLevel;
};
using Index = llvm::SmallVector<IndexExpr, 4>;

/// The C spelling of a compute type ("float", "int", ...) for an ls2
/// element type: f16, bf16 and f32 compute in float.
std::string computeType(mlir::Type elementType);
/// The C storage type of an element type ("__half", "unsigned char", ...).
std::string storageType(mlir::Type elementType);
/// The runtime's dtype of an element type; fails for unsupported types.
std::optional<runtime::DType> dtypeOf(mlir::Type elementType);

/// What a store of `v` into 16-bit float storage may convert instead of `v`:
/// the f32 input of `v` when `v` is that input rounded to the storage type
/// (ls2.cast), since rounding it again is exact; else `v`. Saves the
/// conversion back and forth in every kernel that yields such a cast (two
/// instructions an element of an issue-bound kernel).
mlir::Value storedValue(mlir::Value v);

/// Thrown (and turned into an op error by the generator) when a body uses a
/// form the generator does not handle.
struct EmitError {
  mlir::Operation *op;
  std::string message;
};

class ElementalEmitter {
public:
  /// `argNames[i]`: the C name of the pointer (tensor) or size (index) of
  /// block argument i; `dims`: the function's symbolic dims (bodies
  /// included); `dimName` spells a dynamic dim as a kernel parameter.
  ElementalEmitter(ls2::FusionOp fusion, const SymbolicDims &dims,
                   std::vector<std::string> argNames,
                   std::function<std::string(const runtime::Dim &)> dimName);

  /// Scopes: the kernel scope exists from the start; skeletons push the
  /// outer and element scopes around their loops and take their code.
  void pushScope(int level, int indent);
  std::string popScope();
  /// Appends a line to the innermost scope (indented to it).
  void line(const std::string &text);
  /// Appends each line of `text` to the innermost scope, indented to it.
  void lines(const std::string &text);
  /// Appends `text` verbatim (already indented) to the innermost scope.
  void raw(const std::string &text);
  /// The innermost scope's indent (in steps of two spaces).
  int indent() const { return scopes.back().indent; }
  /// Appends the lines of `text` to the scope of `level` (the innermost
  /// with that level or lower), indented to it.
  void lineAt(int level, const std::string &text);
  /// The kernel scope's code (constants and loads hoisted out of all loops).
  std::string takeKernelScope();

  /// Emits `value` at `index` (one C expression per dim of the value) and
  /// returns the name of a C variable that holds it.
  std::string emit(mlir::Value value, const Index &index);
  /// The scope level `value` at `index` is computed at.
  int levelOf(mlir::Value value, const Index &index);

  /// Dims of a value, as C expressions.
  std::vector<std::string> dimTexts(mlir::Value value);
  /// The row-major flat offset of `index` in a tensor of `value`'s shape.
  IndexExpr flatten(mlir::Value value, const Index &index);
  /// The index of flat offset `flat` in `value`'s shape.
  Index delinearize(mlir::Value value, const IndexExpr &flat);
  std::string fresh(const std::string &prefix);
  /// The C text of a random_uniform's stream (a parameter when
  /// constantName is set).
  std::string streamText(ls2::RandomUniformOp op);
  std::string dimText(const runtime::Dim &d) { return dimName(d); }
  const SymbolicDims &symbolicDims() const { return dims; }

  /// Tensors read through a row stride (padded rows, PaddedRows.h): block
  /// argument i's stride parameter, or "" when its rows are contiguous.
  /// Only rank-2 arguments; leaf loads then read element [r, j] at
  /// r * stride + j.
  std::vector<std::string> argRowStrides;
  /// The offset a leaf load of `arg` at `index` reads: the row-major flat
  /// offset, or r * stride + j for a strided argument.
  IndexExpr address(mlir::BlockArgument arg, const Index &index);

  /// Leaf hook: a block argument read at `index` (offset `flat`, from
  /// address()). It
  /// may return an expression (a register cache, a vector lane) to use
  /// instead of a plain load; the skeletons use it for row caches and
  /// vectorized loops.
  std::function<std::optional<std::string>(mlir::BlockArgument,
                                           const Index &, const IndexExpr &)>
      leafHook;
  /// Random-number hook, same contract, for ls2.random_uniform.
  std::function<std::optional<std::string>(ls2::RandomUniformOp,
                                           const Index &, const IndexExpr &)>
      randomHook;
  /// Names a per-launch integer constant (a Philox stream): layers whose
  /// kernels differ only in such constants share one kernel.
  std::function<std::string(int64_t)> constantName;
  /// Value hooks (row reductions' register caches of values that several
  /// phases read): `valueHook` may return an expression to use for a
  /// non-argument value at `index` instead of computing it; `emittedHook`
  /// sees each value computed (its variable `name`, defined at `level`) while
  /// the scope it was defined in is still the innermost.
  std::function<std::optional<std::string>(mlir::Value, const Index &)> valueHook;
  std::function<void(mlir::Value, const Index &, const std::string &name, int level)>
      emittedHook;
  /// Reduction hook: a reduce op at `index` (its result's index). Row
  /// reductions run a phase over the row and return the reduced value's
  /// variable (defined in the outer scope).
  std::function<std::string(mlir::Operation *, const Index &)> reduceHook;

private:
  struct Scope {
    int level;
    int indent;
    std::string code;
    llvm::StringMap<std::string> memo;
  };
  ls2::FusionOp fusion;
  const SymbolicDims &dims;
  std::vector<std::string> argNames;
  std::function<std::string(const runtime::Dim &)> dimName;
  std::vector<Scope> scopes;
  llvm::StringMap<int> levelMemo;
  unsigned counter = 0;

  std::string key(mlir::Value value, const Index &index);
  /// The name memoized under `key` in the innermost open scope that has
  /// one, or null.
  const std::string *memoized(const std::string &key) const;
  std::string emitOp(mlir::Operation *op, mlir::Value value,
                     const Index &index);
  std::string load(mlir::BlockArgument arg, const Index &index);
  std::string define(mlir::Value value, const std::string &expr);
  /// The level `value` at `index` varies at: levelOf, but a broadcast's
  /// that of its operand at the components it reads.
  int invariantLevel(mlir::Value value, const Index &index);
  unsigned targetScope(int level) const;
  /// The operands' indices of elementwise-like ops; nullopt for the rest.
  std::optional<llvm::SmallVector<Index, 3>>
  operandIndices(mlir::Operation *op, const Index &index);
};

/// `text` as one operand of / or %: parenthesized unless it is a number or
/// a name.
std::string atom(const std::string &text);

/// The index of row-major flat offset `flat` (read at scope `level`) in a
/// shape of dims `sizes` (C expressions).
Index delinearizeIndex(const std::vector<std::string> &sizes, const std::string &flat,
                       int level);

/// The maximum level of an index's components.
int levelOfIndex(const Index &index);

} // namespace ls2c::codegen

#endif // LS2C_LIB_CODEGEN_ELEMENTALEMITTER_H
