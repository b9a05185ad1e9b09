//===- ModelInputs.h - random weights and batches for the tiny presets ----===//
//
// Arguments of a frontend @forward for tests: weights N(0, 0.1^2) rounded to
// f32 (layer-norm scales 1 + N(0, 0.1^2)); two packed sequences of different
// lengths per side (a length-1 third one for decoders); labels with ignored
// positions; ViT images N(0, 1); dropout seed 1234, offset 5.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TEST_UNIT_MODELINPUTS_H
#define LS2C_TEST_UNIT_MODELINPUTS_H

#include "ReferenceTestUtil.h"

#include "ls2c/Model/ModelDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <random>
#include <string>
#include <vector>

namespace ls2c::reference::testing {

std::string argName(mlir::func::FuncOp f, unsigned i);
std::string argKind(mlir::func::FuncOp f, unsigned i);

/// One value per argument of `forward` (a frontend @forward of `d`).
std::vector<HostTensor> modelArguments(const ls2c::ModelDescription &d,
                                       mlir::func::FuncOp forward,
                                       std::mt19937 &rng);

} // namespace ls2c::reference::testing

#endif // LS2C_TEST_UNIT_MODELINPUTS_H
