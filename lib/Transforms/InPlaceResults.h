//===- InPlaceResults.h - results that may overwrite their argument -------===//
//
// Internal to ls2-plan-buffers. A train step's state (master weights, Adam
// moments, the gradient workspace) comes in as an argument and goes out as
// a result of the same name; written to a fresh buffer, every such result
// costs a second copy of the state (5.3 GiB for GPT-2 medium). A result may
// instead be written over its argument when no element of the argument is
// read after it has been overwritten:
//
//   - the result is a loop fusion's output, or an in-place concat (along
//     axis 0) of loop fusion outputs, each writing one range of it;
//   - every op that reads the argument (through contiguous views) and runs
//     after a writer reads none of that writer's range;
//   - a writer that reads the argument itself reads each element only to
//     compute the result element at the same index: through elementwise ops
//     of one shape and concats along axis 0 that put it back at its own
//     offset (the optimizer's decay / no-decay segments), 1-D values only;
//   - a 1-D result of dynamic length only when one loop fusion writes all
//     of it and is the argument's only reader, at each element's own index.
//
// Anything else keeps a fresh buffer. Such a result gets the attribute
// `ls2.in_place_of` = the argument's index; the runtime binds both to one
// buffer (runtime::TensorSpec::inPlaceOf).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRANSFORMS_INPLACERESULTS_H
#define LS2C_LIB_TRANSFORMS_INPLACERESULTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace ls2c {

/// Sets `ls2.in_place_of` on every result of `f` that may overwrite the
/// argument with its ls2.name and type (above); a result that is that
/// argument unchanged is left alone (the program copies it).
void markInPlaceResults(mlir::func::FuncOp f);

} // namespace ls2c

#endif // LS2C_LIB_TRANSFORMS_INPLACERESULTS_H
