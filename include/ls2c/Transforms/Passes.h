//===- Passes.h - ls2c transformation passes ------------------------------===//
//
// Pass flags are prefixed `ls2-`; Passes.td documents each with IR before
// and after.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRANSFORMS_PASSES_H
#define LS2C_TRANSFORMS_PASSES_H

#include "ls2/IR/LS2Dialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace ls2c {

#define GEN_PASS_DECL
#include "ls2c/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ls2c/Transforms/Passes.h.inc"

} // namespace ls2c

#endif // LS2C_TRANSFORMS_PASSES_H
