//===- KernelCompiler.h - compile generated CUDA C++ to cubins with NVRTC -===//
//
// The last compiler stage: each generated kernel source (one extern "C"
// __global__ function) becomes a cubin, SASS for one real architecture
// (sm_80, sm_90, ...), which the runtime loads with cuModuleLoadData. Kernels
// compile in parallel, and results are kept in a program cache, in memory
// (process-wide) and on disk (shared between processes), keyed by a SHA-256
// over everything that determines the cubin (see ProgramCache.h).
//
// No MLIR dependency, and no link-time dependency on the CUDA driver: the
// driver (libcuda.so.1) is opened with dlopen only to find the current
// device's architecture, so this library loads on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_JIT_KERNELCOMPILER_H
#define LS2C_JIT_KERNELCOMPILER_H

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ls2c::jit {

/// One generated kernel. `name` is its extern "C" __global__ function (a C
/// identifier), and the NVRTC program is called "<name>.cu", which is the
/// file name NVRTC's diagnostics cite.
struct KernelSource {
  std::string name;
  std::string source;
};

struct CompileOptions {
  /// A real architecture, "sm_<major><minor>" with an optional "a"/"f"
  /// suffix ("sm_80", "sm_90", "sm_90a"); empty = the current device's
  /// (currentDeviceArch(), which throws without a device). Virtual
  /// architectures (compute_90) are refused: they give PTX, not a cubin.
  std::string arch;
  /// Appended, in order, after the standard options (nvrtcOptionsFor).
  std::vector<std::string> extraOptions;
  /// Kernels compiled at once; 0 = $LS2C_JOBS if set, else
  /// std::thread::hardware_concurrency().
  unsigned jobs = 0;
  /// Read and write the on-disk program cache (the in-memory cache is always
  /// used).
  bool useDiskCache = true;
  /// The on-disk cache directory; empty = defaultProgramCacheDir():
  /// $LS2C_CACHE_DIR, else $XDG_CACHE_HOME/ls2c, else ~/.cache/ls2c.
  std::string cacheDir;
};

struct CompiledKernel {
  std::string name;  ///< KernelSource::name
  std::string arch;  ///< the architecture compiled for (resolved when empty)
  std::string cubin; ///< an ELF image ("\x7f" "ELF"...), for cuModuleLoadData
  bool fromCache;    ///< served from the memory or disk cache, not NVRTC
  /// Wall seconds spent obtaining this kernel inside compileKernels: the
  /// cache lookup, plus the NVRTC compile and cache write on a miss.
  double compileSeconds;
};

/// NVRTC rejected one or more kernels. what() has, for each failed kernel:
/// its name and architecture, each error line of NVRTC's log followed by the
/// generated source line it cites ("    12 | float x = y;"), then NVRTC's
/// full log.
class CompileError : public std::runtime_error {
public:
  CompileError(const std::string &message, std::vector<std::string> kernels)
      : std::runtime_error(message), failed(std::move(kernels)) {}
  /// Names of the kernels that failed, in request order.
  const std::vector<std::string> &kernels() const { return failed; }

private:
  std::vector<std::string> failed;
};

/// Compiles every source to a cubin for `options.arch`, in parallel, using
/// and filling the program cache. Returns one result per source, in request
/// order (a source requested twice is compiled once). Every kernel is
/// attempted before a CompileError reporting all failures is thrown.
/// Corrupt or unreadable disk entries are reported on stderr (one warning
/// naming the file) and rebuilt; a cache directory that cannot be written is
/// reported (one warning per call) and compilation still succeeds.
/// Throws std::invalid_argument for an invalid kernel name or architecture,
/// and currentDeviceArch()'s error when `arch` is empty and there is no
/// device.
std::vector<CompiledKernel> compileKernels(const std::vector<KernelSource> &sources,
                                           const CompileOptions &options);

/// The NVRTC options used for `arch` (already resolved, not empty), in
/// order: --gpu-architecture=<arch> (sm_90 as sm_90a: either cubin runs on
/// compute capability 9.0 alone, and sm_90a has wgmma), -std=c++17, -default-device,
/// --include-path=<cudaIncludeDir()>, then options.extraOptions. Fast math is
/// deliberately off: kernels must meet docs/numerics.md tolerances.
std::vector<std::string> nvrtcOptionsFor(const std::string &arch,
                                         const CompileOptions &options);

/// The directory holding cuda_fp16.h and cuda_bf16.h, which NVRTC 13 does
/// not ship built in: $LS2C_CUDA_INCLUDE if set, else the first of the
/// toolkit include directory found at build time, $CUDA_HOME/include,
/// $CUDA_PATH/include and /usr/local/cuda/include that has cuda_fp16.h
/// (the build-time one if none has).
std::string cudaIncludeDir();

/// The current CUDA device's architecture, e.g. "sm_90": the device of the
/// calling thread's current context, else device 0. Loads libcuda.so.1 with
/// dlopen; throws std::runtime_error("no CUDA device: pass an explicit arch
/// such as sm_90 (...)") when there is no driver or no device.
std::string currentDeviceArch();

/// Throws std::invalid_argument, saying why, unless `arch` is a real
/// architecture this NVRTC compiles for ("sm_90"; not "compute_90", "sm_090"
/// or an architecture NVRTC dropped).
void checkArchitecture(const std::string &arch);

/// NVRTC's version as "<major>.<minor>", e.g. "13.0".
std::string nvrtcVersionString();

} // namespace ls2c::jit

#endif // LS2C_JIT_KERNELCOMPILER_H
