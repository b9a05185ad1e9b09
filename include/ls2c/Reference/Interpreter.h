//===- Interpreter.h - the CPU reference evaluator of ls2 IR --------------===//
//
// Evaluates a func.func of ls2 ops on host tensors, op by op in program
// order, with the semantics written in each op's description
// (docs/dialect.md) and docs/numerics.md. It is the oracle that gradient
// checks and, later, the compiled program's CPU backend are compared with.
//
// Precision:
//   F64 — every float op computes and stores in double, whatever the IR's
//         float type (used for finite-difference gradient checks);
//   F32 — computes in double and rounds each result to its IR type (f32,
//         f16 or bf16, round to nearest even), so low-precision programs see
//         their storage rounding; reductions and matmuls accumulate in at
//         least f32 as the contract requires. GEMMs use OpenBLAS (dgemm in
//         F64, sgemm in F32 mode).
// Results are deterministic: same inputs, same bits.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_REFERENCE_INTERPRETER_H
#define LS2C_REFERENCE_INTERPRETER_H

#include "ls2c/Reference/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <stdexcept>
#include <vector>

namespace ls2c::reference {

/// The reference element type of an MLIR element type (f32, f16, bf16, i32,
/// i64, i1), or nullopt for any other.
std::optional<ElementType> elementTypeFromMLIR(mlir::Type type);

/// A run-time error: an argument that does not match the function type, a
/// dynamic dim that disagrees between operands, an id outside its table, a
/// malformed cu_seqlens. what() starts with the op's location and name.
class InterpreterError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Interpreter {
public:
  explicit Interpreter(Precision precision) : precision(precision) {}

  /// Runs planned functions (ls2-plan-buffers) on their arena: every
  /// result with an `ls2.offsets` entry is stored at that byte offset of one
  /// arena of `ls2.arena_bytes` bytes, filled with 0xFF (NaN) first, and
  /// read back from there; two live buffers that overlap corrupt the
  /// results. F32 precision only (the arena holds the IR's types).
  void setUseArena(bool on) { useArena = on; }

  /// Runs `function` on `arguments` (one per function argument, whose types
  /// must match: element type, rank, and every static dim) and returns one
  /// tensor per result. Throws InterpreterError.
  std::vector<HostTensor> run(mlir::func::FuncOp function,
                              const std::vector<HostTensor> &arguments) const;

private:
  Precision precision;
  bool useArena = false;
};

} // namespace ls2c::reference

#endif // LS2C_REFERENCE_INTERPRETER_H
