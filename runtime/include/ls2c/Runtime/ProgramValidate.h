//===- ProgramValidate.h - the invariants every Program must keep ---------===//
//
// validateProgram checks everything the runtime relies on without looking at
// a GPU: enum values, names, launch configs, that every Dim names an existing
// argument axis, that every buffer range lies inside the arena or inside its
// argument or result at the shape bounds, that launches match their kernels'
// parameters, and that GEMM and attention operands are large enough at the
// shape bounds. All arithmetic is overflow-checked. writeBundle validates
// before writing and the bundle loader after parsing; the compiler may call
// it directly. docs/bundle-format.md ("Validation") lists every rule.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_PROGRAMVALIDATE_H
#define LS2C_RUNTIME_PROGRAMVALIDATE_H

#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/Program.h"

#include <string>

namespace ls2c::runtime {

/// Throws BundleError(nameForErrors, <JSON path of the field>, <rule>) for
/// the first rule `program` breaks; returns normally when it keeps them all.
/// Paths use the manifest's keys ("functions[0].steps[3].gemm.lda").
void validateProgram(const Program &program,
                     const std::string &nameForErrors = "program");

/// The upper bound of `dim` inside `function`: its size when static, else
/// the bound (maxShape) of the argument axis it names times multiplier /
/// divisor (rounded down). Assumes a validated program.
int64_t dimBound(const Dim &dim, const Function &function);

/// Bytes of `tensor` at its shape bounds: product(maxShape) * dtypeBytes.
/// Assumes a validated program (no overflow).
uint64_t tensorMaxBytes(const TensorSpec &tensor);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_PROGRAMVALIDATE_H
