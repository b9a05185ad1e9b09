//===- Prelude.h - device helpers every generated kernel includes ---------===//
#ifndef LS2C_LIB_CODEGEN_PRELUDE_H
#define LS2C_LIB_CODEGEN_PRELUDE_H

#include <map>
#include <string>

namespace ls2c::codegen {

/// CUDA C++ placed before every generated kernel (NVRTC compiles each
/// kernel as its own translation unit).
const char *kernelPrelude();

/// Kernel text with every ${KEY} replaced by its value (templates of the
/// hand-structured kernels: attention, embedding gradient).
std::string substitute(std::string text, const std::map<std::string, std::string> &values);

} // namespace ls2c::codegen

#endif // LS2C_LIB_CODEGEN_PRELUDE_H
