//===- ls2c-opt.cpp - the ls2 dialect's mlir-opt driver for lit tests -----===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ls2c::ls2::LS2Dialect, mlir::func::FuncDialect>();
  ls2c::registerLS2CPasses();
  // Upstream canonicalize and cse, so lit tests can tidy pass output.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ls2c optimizer driver\n", registry));
}
