//===- Frame.h - values of a running function, shared kernel helpers -----===//
//
// Internal to lib/Reference. A Frame maps each SSA value of the function
// being run to its HostTensor (or, for `index` values, its integer). Binding
// an op result checks it against the result's IR type and applies the
// precision mode: in F32 mode floats are rounded to their element type;
// integers are always normalized (i32 wraps modulo 2^32, i1 is 0 or 1).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_REFERENCE_FRAME_H
#define LS2C_LIB_REFERENCE_FRAME_H

#include "ls2c/Reference/Interpreter.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Twine.h"

#include <list>
#include <string>
#include <vector>

namespace ls2c::reference::detail {

/// "file:line:col", a NameLoc's name, ... for messages.
std::string describeLocation(mlir::Location loc);

/// Throws InterpreterError("<loc>: '<op name>' op <message>").
[[noreturn]] void fail(mlir::Operation *op, const llvm::Twine &message);

/// The ElementType of an MLIR element type; fails (naming `op`) otherwise.
ElementType elementTypeOf(mlir::Operation *op, mlir::Type type);

/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);
/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);
/// The product of `shape[begin, end)`.
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// An i32 value wrapped modulo 2^32 into [-2^31, 2^31).
int64_t wrapI32(int64_t value);

/// For each element of `shape` in row-major order, the sum over dims of
/// coordinate * strides[d] (a stride of 0 broadcasts that dim).
std::vector<int64_t> stridedOffsets(const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &strides);
/// A tensor of `src`'s type and `shape` whose element e is src's element
/// offsets[e].
HostTensor takeElements(const HostTensor &src, std::vector<int64_t> shape,
                        const std::vector<int64_t> &offsets);

/// The value of the rank-0 operand `name` of `op`.
int64_t scalarInt(mlir::Operation *op, const HostTensor &tensor,
                  const char *name);
double scalarFloat(mlir::Operation *op, const HostTensor &tensor,
                   const char *name);

/// Fails unless `tensor` has `shape`: after the verifier only dynamic dims
/// can disagree, so this is the run-time half of shape checking.
void expectShape(mlir::Operation *op, const HostTensor &tensor,
                 const std::vector<int64_t> &shape, const char *what);

class Frame {
public:
  explicit Frame(Precision precision) : precision(precision) {}

  Precision getPrecision() const { return precision; }

  /// The tensor of `value` (an operand of `user`).
  const HostTensor &get(mlir::Operation *user, mlir::Value value) const;
  /// The integer of the `index` value `value` (an operand of `user`).
  int64_t getIndex(mlir::Operation *user, mlir::Value value) const;

  /// Binds `result` of `op`: checks element type, rank and static dims
  /// against the result type, then rounds or normalizes (see above).
  void bind(mlir::Operation *op, mlir::Value result, HostTensor tensor);
  void bindIndex(mlir::Value result, int64_t value);

  /// `type`'s shape with its dynamic dims taken, in order, from `sizes`.
  std::vector<int64_t> shapeWithSizes(mlir::Operation *op,
                                      mlir::RankedTensorType type,
                                      mlir::ValueRange sizes) const;

  /// Applies the precision mode to a value (or function argument) of type
  /// `type`; shared by bind and argument binding.
  void normalize(HostTensor &tensor) const;

  /// Arena mode (F32 precision only): an arena of `bytes` bytes, every byte
  /// 0xFF (a NaN in every float type).
  void enableArena(int64_t bytes);
  /// Moves `value`'s tensor into the arena at byte `offset`, encoded in its
  /// element type (f32, f16, bf16, i32, i64, 1-byte i1); later reads decode
  /// it from there, so a buffer overwritten while live changes the results.
  /// Fails naming `op` when the tensor does not fit.
  void storeInArena(mlir::Operation *op, mlir::Value value, int64_t offset);
  /// Frees the copies get() decoded from the arena; call between top-level
  /// ops (each read decodes afresh, so a clobbered buffer shows).
  void releaseDecoded() { decoded.clear(); }

private:
  struct ArenaSlot {
    int64_t offset;
    ElementType type;
    std::vector<int64_t> shape;
  };
  Precision precision;
  llvm::DenseMap<mlir::Value, HostTensor> tensors;
  /// Arena values decoded by get() for the op being run; a list, so every
  /// reference get() returned stays valid until releaseDecoded().
  mutable std::list<HostTensor> decoded;
  llvm::DenseMap<mlir::Value, int64_t> indices;
  std::vector<uint8_t> arena;
  llvm::DenseMap<mlir::Value, ArenaSlot> slots;
};

} // namespace ls2c::reference::detail

#endif // LS2C_LIB_REFERENCE_FRAME_H
