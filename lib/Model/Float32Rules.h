//===- Float32Rules.h - Range rules for values the compiler keeps as f32 -===//
//
// Private to lib/Model. Dropout rates, label smoothing, the epsilons and the
// optimizer's hyperparameters are read as doubles but end up as 32-bit float
// attributes and scalars. Each rule checks the value as the f32 it becomes,
// so that a value accepted here cannot turn into 1, 0 or infinity later.
// Every function returns "" when the value is allowed, else the rule text.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_MODEL_FLOAT32RULES_H
#define LS2C_LIB_MODEL_FLOAT32RULES_H

#include <string>

namespace ls2c::detail {

/// A probability in [0, 1) that stays below 1 after rounding to f32
/// (0.99999999 rounds to 1).
std::string probabilityRule(double v);

/// Positive, and after rounding to f32 a normal, finite number: from
/// 1.1754944e-38 (FLT_MIN) to 3.4028235e+38 (FLT_MAX). Epsilons and the
/// learning rate: an f32 zero, subnormal (flushed to zero on GPUs) or
/// infinity would divide by zero or poison every update.
std::string positiveF32Rule(double v);

/// Non-negative and finite after rounding to f32 (weight decay, clip norm).
std::string nonNegativeF32Rule(double v);

} // namespace ls2c::detail

#endif // LS2C_LIB_MODEL_FLOAT32RULES_H
