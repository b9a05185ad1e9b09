//===- Prelude.h - device helpers every generated kernel includes ---------===//
#ifndef LS2C_LIB_CODEGEN_PRELUDE_H
#define LS2C_LIB_CODEGEN_PRELUDE_H

namespace ls2c::codegen {

/// CUDA C++ placed before every generated kernel (NVRTC compiles each
/// kernel as its own translation unit).
const char *kernelPrelude();

} // namespace ls2c::codegen

#endif // LS2C_LIB_CODEGEN_PRELUDE_H
