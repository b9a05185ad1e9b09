//===- CudaTrainer.cpp - `ls2c train` on a CUDA GPU, opened at run time ----===//
#include "ls2c/Trainer/CudaTrainer.h"

#include "CudaModule.h"

#include "ls2c/Frontend/Decoding.h"
#include "ls2c/Frontend/EvaluationModule.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/JIT.h"
#include "ls2c/Runtime/Bundle.h"

#include "mlir/IR/MLIRContext.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ls2c {

namespace {

namespace fs = std::filesystem;

/// Where ls2c-cuda.so should be: $LS2C_CUDA_MODULE, else beside the
/// executable (the build tree), else in the installed library folder
/// (<prefix>/lib/ls2c from <prefix>/bin).
std::vector<fs::path> moduleCandidates() {
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error)
    return {};
  fs::path dir = exe.parent_path();
  return {dir / cuda::kModuleFile,
          (dir / ".." / LS2C_MODULE_DIR / cuda::kModuleFile).lexically_normal()};
}

/// The module at `path`, or null with `failure` set.
cuda::CudaModule *loadModule(const fs::path &path, std::string &failure) {
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *text = ::dlerror();
    std::string why = text ? text : "dlopen failed";
    // The usual case on a machine without a GPU: say it plainly.
    failure = (why.find("libcuda.so.1") != std::string::npos ? "no NVIDIA driver: " : "") +
              std::string("cannot load ") + path.string() + ": " + why;
    return nullptr;
  }
  auto entry = reinterpret_cast<Ls2cCudaModuleEntry>(::dlsym(handle, cuda::kModuleEntry));
  cuda::CudaModule *m = entry ? entry() : nullptr;
  if (!m) {
    failure = path.string() + " has no " + cuda::kModuleEntry + ": not an ls2c-cuda module";
    return nullptr;
  }
  if (std::string(m->abi()) != cuda::kModuleAbi) {
    failure = path.string() + " is another build's module (" + m->abi() +
              "; this ls2c needs " + cuda::kModuleAbi + ")";
    return nullptr;
  }
  return m;
}

/// The module's CudaModule, opened once (never closed: engines run its
/// code), or null with `why`.
cuda::CudaModule *openModule(std::string &why) {
  static std::string failure;
  static cuda::CudaModule *module = [&]() -> cuda::CudaModule * {
    if (const char *env = std::getenv("LS2C_CUDA_MODULE"); env && *env) {
      // As given, made absolute: dlopen must not search for a bare name.
      std::error_code error;
      fs::path path = fs::absolute(env, error);
      if (error || !fs::is_regular_file(path, error)) {
        failure = std::string("$LS2C_CUDA_MODULE=") + env + ": no such file";
        return nullptr;
      }
      return loadModule(path, failure);
    }
    std::vector<fs::path> candidates = moduleCandidates();
    for (const fs::path &path : candidates) {
      std::error_code error;
      if (fs::is_regular_file(path, error))
        return loadModule(path, failure);
    }
    std::string looked;
    for (const fs::path &path : candidates)
      looked += (looked.empty() ? "" : ", ") + path.string();
    failure = std::string(cuda::kModuleFile) + ", the GPU part of ls2c, is not installed" +
              (looked.empty() ? "" : " (looked for " + looked + ")");
    return nullptr;
  }();
  why = failure;
  return module;
}

/// Everything but the name: a bundle must be of the description it trains.
nlohmann::json comparable(ModelDescription d) {
  d.name.clear();
  return toJson(d);
}

runtime::Program compileFor(mlir::OwningOpRef<mlir::ModuleOp> module, const char *what,
                            const ModelDescription &desc, const ProgramOptions &po,
                            CompileReport &report) {
  if (!module) // a bug, not bad input: ls2c reports it as an internal error
    throw ProgramError(std::string("the ") + what + " module of '" + desc.name +
                       "' does not verify (diagnostics above)");
  CompileReport one;
  runtime::Program p =
      compileModule(*module, desc, toJson(desc).dump(1) + "\n", po, &one);
  report.pipelineSeconds += one.pipelineSeconds;
  report.nvrtcSeconds += one.nvrtcSeconds;
  report.kernels += one.kernels;
  report.fromCache += one.fromCache;
  return p;
}

/// The module and its device, or null with `why`.
cuda::CudaModule *openDevice(cuda::DeviceInfo &device, std::string &why) {
  cuda::CudaModule *module = openModule(why);
  return module && module->probe(device, why) ? module : nullptr;
}

} // namespace

std::unique_ptr<TrainEngine> openCudaEngine(const TrainOptions &o, const ModelDescription &desc,
                                            const WorkspaceLayout &ws,
                                            const std::vector<std::string> &dataInputs,
                                            std::string &why) {
  cuda::EngineOptions options;
  if (std::optional<runtime::AttentionBackend> b = runtime::parseAttentionBackend(o.attention))
    options.attention = *b;
  else
    throw TrainError("--attention '" + o.attention + "' is not one of auto, kernels, cudnn");
  options.graphs = o.graphs;
  cuda::DeviceInfo device;
  cuda::CudaModule *module = openDevice(device, why);
  if (!module)
    return nullptr;

  auto started = std::chrono::steady_clock::now();
  ProgramOptions po;
  po.archs = {device.arch};
  CompileReport report;
  runtime::Program train;
  if (!o.bundle.empty()) {
    if (!fs::is_regular_file(o.bundle))
      throw TrainError("--bundle " + o.bundle + ": no such file");
    try {
      train = runtime::readBundle(o.bundle);
    } catch (const std::exception &e) {
      throw TrainError("--bundle " + o.bundle + ": " + e.what());
    }
    ModelDescription bundled;
    try {
      bundled = parseModelDescription(train.description, o.bundle);
    } catch (const DescriptionError &e) {
      throw TrainError("--bundle " + o.bundle + ": " + e.what());
    }
    if (comparable(bundled) != comparable(desc))
      throw TrainError("--bundle " + o.bundle + " was compiled from another description than " +
                       o.model + " (compile it from this one: ls2c compile " + o.model +
                       " --arch=" + device.arch + " -o " + o.bundle + ")");
  }
  mlir::MLIRContext context;
  if (o.bundle.empty())
    train = compileFor(buildForwardModule(context, desc), "forward", desc, po, report);
  po.functions = {"forward"};
  runtime::Program eval =
      compileFor(buildEvaluationModule(context, desc), "evaluation", desc, po, report);
  std::fprintf(stderr, "compiled for %s (%s): %zu kernels, compiler %.1f s, NVRTC %.1f s (%zu "
                       "from the cache), %.1f s in all\n",
               device.arch.c_str(), device.name.c_str(), report.kernels,
               report.pipelineSeconds, report.nvrtcSeconds, report.fromCache,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                   .count());
  return module->createTrainEngine(std::move(train), std::move(eval), desc, ws, dataInputs,
                                   options);
}

std::unique_ptr<generation::IncrementalDecoder>
openCudaDecoder(const ModelDescription &desc,
                const std::map<std::string, reference::HostTensor> &parameters, bool graphs,
                std::string &why) {
  cuda::DeviceInfo device;
  cuda::CudaModule *module = openDevice(device, why);
  if (!module)
    return nullptr;
  auto started = std::chrono::steady_clock::now();
  ProgramOptions po;
  po.archs = {device.arch};
  po.functions = desc.architecture == Architecture::EncoderDecoder
                     ? std::vector<std::string>{"encode", "decode"}
                     : std::vector<std::string>{"decode"};
  CompileReport report;
  mlir::MLIRContext context;
  runtime::Program decode =
      compileFor(buildDecodingModule(context, desc), "decoding", desc, po, report);
  std::fprintf(stderr, "compiled for %s (%s): %zu kernels, %.1f s (%zu from the cache)\n",
               device.arch.c_str(), device.name.c_str(), report.kernels,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                   .count(),
               report.fromCache);
  return module->createDecoder(std::move(decode), desc, parameters, graphs);
}

} // namespace ls2c
