//===- compile_model.cpp - the ls2c C++ JIT API in a few lines ------------===//
//
// Compiles a model description to a program (generated kernels compiled by
// NVRTC for one GPU architecture), prints what the runtime will execute,
// and saves it as a bundle that the runtime loads without the compiler.
//
//   compile_model MODEL.json [ARCH] [OUT.ls2b]     (ARCH defaults to sm_90)
//
// Exit status: 0 success, 2 bad input, 1 a failure inside the compiler.
//
//===----------------------------------------------------------------------===//

#include "ls2c/JIT.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Support/AtomicFile.h"

#include <string>

#include <cstdio>

int main(int argc, char **argv) {
  const char *usage = "usage: %s MODEL.json [ARCH] [OUT.ls2b]   (ARCH: sm_80, sm_90, ...; "
                      "default sm_90)\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf(usage, argv[0]);
    return 0;
  }
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, usage, argv[0]);
    return 2;
  }
  ls2c::ProgramOptions options;
  options.archs = {argc > 2 ? argv[2] : "sm_90"};
  // Bad input (a description, an architecture, an output path) exits 2, a
  // failure inside the compiler 1, as ls2c does.
  try {
    ls2c::jit::checkArchitecture(options.archs[0]);
  } catch (const std::invalid_argument &e) {
    std::fprintf(stderr, "compile_model: %s\n", e.what());
    return 2;
  }
  if (argc > 3 && (std::string(argv[3]).empty() || std::string(argv[3]) == "-")) {
    std::fprintf(stderr, "compile_model: OUT.ls2b must name a file\n");
    return 2;
  }
  ls2c::CompileReport report;
  ls2c::runtime::Program program;
  try {
    program = ls2c::compileProgram(argv[1], options, &report);
  } catch (const ls2c::DescriptionError &e) {
    std::fprintf(stderr, "compile_model: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "compile_model: %s\n", e.what());
    return 1;
  }
  std::printf("model %s (%s): %zu parameters in a workspace of %llu elements\n",
              program.modelName.c_str(), program.computeDType.c_str(),
              program.parameters.size(),
              static_cast<unsigned long long>(program.workspaceElements));
  std::printf("%zu kernels for %s (compiler %.2f s, NVRTC %.2f s, %zu from the cache)\n",
              program.kernels.size(), options.archs[0].c_str(), report.pipelineSeconds,
              report.nvrtcSeconds, report.fromCache);
  std::printf("arena %llu bytes (kernel scratch from byte %llu)\n",
              static_cast<unsigned long long>(program.arenaBytes),
              static_cast<unsigned long long>(program.scratchOffset));
  for (const ls2c::runtime::Function &f : program.functions) {
    size_t launches = 0, gemms = 0, attention = 0, copies = 0;
    for (const ls2c::runtime::Step &s : f.steps) {
      launches += s.kind == ls2c::runtime::Step::Kind::Launch;
      gemms += s.kind == ls2c::runtime::Step::Kind::Gemm;
      attention += s.kind == ls2c::runtime::Step::Kind::Attention;
      copies += s.kind == ls2c::runtime::Step::Kind::Copy;
    }
    std::printf("  @%s: %zu arguments, %zu results, %zu kernel launches, %zu GEMMs, "
                "%zu attention calls, %zu copies\n",
                f.name.c_str(), f.arguments.size(), f.results.size(), launches, gemms,
                attention, copies);
  }
  if (argc > 3) {
    try {
      ls2c::runtime::writeBundle(program, argv[3]);
      ls2c::runtime::Program loaded = ls2c::runtime::readBundle(argv[3]);
      if (!(loaded == program)) {
        std::fprintf(stderr, "compile_model: %s reads back different\n", argv[3]);
        return 1;
      }
    } catch (const ls2c::FileWriteError &e) {
      std::fprintf(stderr, "compile_model: %s\n", e.what());
      return 2;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "compile_model: %s\n", e.what());
      return 1;
    }
    std::printf("wrote %s and read it back\n", argv[3]);
  }
  return 0;
}
