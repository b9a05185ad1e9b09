//===- LS2Dialect.cpp - ls2 dialect registration --------------------------===//
#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ls2c::ls2;

#include "ls2/IR/LS2Dialect.cpp.inc"
#include "ls2/IR/LS2Enums.cpp.inc"
#include "ls2/IR/LS2Interfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ls2/IR/LS2Attrs.cpp.inc"

void LS2Dialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ls2/IR/LS2Attrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ls2/IR/LS2Ops.cpp.inc"
      >();
}

Operation *LS2Dialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}
