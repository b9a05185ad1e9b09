//===- LS2Dialect.h - the ls2 dialect -------------------------------------===//
//
// Include this header to use the ls2 dialect: its ops, enums and attributes.
//
//===----------------------------------------------------------------------===//
#ifndef LS2_IR_LS2DIALECT_H
#define LS2_IR_LS2DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ls2/IR/LS2Dialect.h.inc"
#include "ls2/IR/LS2Enums.h.inc"
#include "ls2/IR/LS2Interfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ls2/IR/LS2Attrs.h.inc"

#define GET_OP_CLASSES
#include "ls2/IR/LS2Ops.h.inc"

#endif // LS2_IR_LS2DIALECT_H
