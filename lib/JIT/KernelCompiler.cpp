//===- KernelCompiler.cpp - compile generated CUDA C++ to cubins ----------===//
#include "ls2c/JIT/KernelCompiler.h"

#include "ls2c/JIT/ProgramCache.h"
#include "ls2c/Support/AtomicFile.h"

#include <cuda.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <sstream>
#include <thread>

#ifndef LS2C_CUDA_INCLUDE_DIR
#define LS2C_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace ls2c::jit {

namespace {

void warn(const std::string &message) {
  std::fprintf(stderr, "ls2c: warning: %s\n", message.c_str());
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::vector<int> supportedArchs() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return {};
  std::vector<int> archs(static_cast<size_t>(count));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

/// Accepts "sm_<digits>" with an optional "a" or "f" suffix that NVRTC
/// supports; refuses virtual architectures, which give no cubin.
void checkArch(const std::string &arch) {
  std::string digits;
  if (arch.rfind("sm_", 0) == 0) {
    digits = arch.substr(3);
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f'))
      digits.pop_back();
  }
  // NVRTC spells versions without leading zeros (sm_90, not sm_090).
  bool wellFormed = !digits.empty() && digits.size() <= 4 && digits[0] != '0' &&
                    std::all_of(digits.begin(), digits.end(),
                                [](char c) { return c >= '0' && c <= '9'; });
  std::vector<int> archs = supportedArchs();
  std::string list;
  for (int a : archs)
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
  if (!wellFormed) {
    std::string why = arch.rfind("compute_", 0) == 0
                          ? "it is a virtual architecture, which gives PTX, not a cubin"
                          : "expected sm_<version>, such as sm_80 or sm_90";
    throw std::invalid_argument("invalid CUDA architecture '" + arch + "': " + why);
  }
  if (!archs.empty() &&
      std::find(archs.begin(), archs.end(), std::stoi(digits)) == archs.end())
    throw std::invalid_argument("CUDA architecture '" + arch + "' is not supported by NVRTC " +
                                nvrtcVersionString() + " (it supports " + list + ")");
  // The generated attention kernels use mma.sync m16n8k16 with bf16 and
  // cp.async-era PTX: Ampere (sm_80) is the oldest target.
  if (std::stoi(digits) < 80)
    throw std::invalid_argument("CUDA architecture '" + arch +
                                "' is older than sm_80, the oldest ls2c generates kernels for "
                                "(tensor-core attention needs mma.sync m16n8k16 with bf16)");
}

unsigned resolveJobs(unsigned requested) {
  if (requested)
    return requested;
  if (const char *env = std::getenv("LS2C_JOBS")) {
    char *end = nullptr;
    long jobs = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && jobs > 0)
      return static_cast<unsigned>(std::min(jobs, 1024L));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The source's lines, 1-based (lines[0] is empty).
std::vector<std::string> sourceLines(const std::string &source) {
  std::vector<std::string> lines(1);
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

/// For each NVRTC diagnostic "<name>.cu(<line>): <...>error: ..." in `log`,
/// the diagnostic and then the generated source line it cites.
std::string quoteErrorLines(const std::string &name, const std::string &source,
                            const std::string &log) {
  std::vector<std::string> lines = sourceLines(source);
  std::string prefix = name + ".cu(";
  std::string out;
  std::istringstream in(log);
  std::string diagnostic;
  while (std::getline(in, diagnostic)) {
    if (diagnostic.rfind(prefix, 0) != 0)
      continue;
    size_t close = diagnostic.find("): ", prefix.size());
    if (close == std::string::npos || close == prefix.size())
      continue;
    std::string number = diagnostic.substr(prefix.size(), close - prefix.size());
    if (number.size() > 9 || !std::all_of(number.begin(), number.end(),
                                          [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::string kind = diagnostic.substr(close + 3, diagnostic.find(':', close + 3) -
                                                        (close + 3));
    if (kind.find("error") == std::string::npos)
      continue;
    size_t line = std::stoul(number);
    out += diagnostic + "\n";
    if (line >= 1 && line < lines.size()) {
      char label[32];
      std::snprintf(label, sizeof(label), "%6zu | ", line);
      out += label + lines[line] + "\n";
    }
  }
  return out;
}

struct NvrtcProgram {
  nvrtcProgram program = nullptr;
  ~NvrtcProgram() {
    if (program)
      nvrtcDestroyProgram(&program);
  }
};

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

/// Compiles one source; returns "" and sets `cubin`, or returns the failure
/// report for CompileError.
std::string compileOne(const KernelSource &kernel, const std::string &arch,
                       const std::vector<std::string> &options, std::string &cubin) {
  std::string head = "kernel '" + kernel.name + "' (" + kernel.name + ".cu, " + arch + ")";
  NvrtcProgram holder;
  nvrtcResult result = nvrtcCreateProgram(&holder.program, kernel.source.c_str(),
                                          (kernel.name + ".cu").c_str(), 0, nullptr,
                                          nullptr);
  if (result != NVRTC_SUCCESS)
    return head + ": nvrtcCreateProgram: " + nvrtcGetErrorString(result) + "\n";
  std::vector<const char *> argv;
  for (const std::string &option : options)
    argv.push_back(option.c_str());
  result = nvrtcCompileProgram(holder.program, static_cast<int>(argv.size()), argv.data());
  if (result != NVRTC_SUCCESS) {
    std::string log = programLog(holder.program);
    std::string report = head + " failed to compile: " + nvrtcGetErrorString(result) + "\n";
    report += quoteErrorLines(kernel.name, kernel.source, log);
    if (log.find("open source file \"cuda_") != std::string::npos)
      report += "hint: set LS2C_CUDA_INCLUDE to the CUDA toolkit's include directory "
                "(searched: " + cudaIncludeDir() + ")\n";
    report += "NVRTC log:\n" + log + "\n";
    return report;
  }
  size_t size = 0;
  result = nvrtcGetCUBINSize(holder.program, &size);
  if (result != NVRTC_SUCCESS || size == 0)
    return head + ": NVRTC produced no cubin (" + nvrtcGetErrorString(result) + ")\n";
  cubin.assign(size, '\0');
  result = nvrtcGetCUBIN(holder.program, cubin.data());
  if (result != NVRTC_SUCCESS)
    return head + ": nvrtcGetCUBIN: " + nvrtcGetErrorString(result) + "\n";
  return "";
}

bool hasFp16Header(const std::string &dir) {
  return !dir.empty() && ::access((dir + "/cuda_fp16.h").c_str(), R_OK) == 0;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    throw std::runtime_error("nvrtcVersion failed");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string cudaIncludeDir() {
  if (const char *env = std::getenv("LS2C_CUDA_INCLUDE"); env && *env)
    return env;
  std::vector<std::string> candidates = {LS2C_CUDA_INCLUDE_DIR};
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *env = std::getenv(var); env && *env)
      candidates.push_back(std::string(env) + "/include");
  candidates.push_back("/usr/local/cuda/include");
  for (const std::string &dir : candidates)
    if (hasFp16Header(dir))
      return dir;
  return LS2C_CUDA_INCLUDE_DIR;
}

void checkArchitecture(const std::string &arch) { checkArch(arch); }

std::vector<std::string> nvrtcOptionsFor(const std::string &arch,
                                         const CompileOptions &options) {
  // sm_90 is compiled as sm_90a: either cubin runs on compute capability
  // 9.0 alone, and the arch-specific one has wgmma, which the attention
  // kernels use there (FlashAttentionParts.cpp).
  const std::string target = arch == "sm_90" ? "sm_90a" : arch;
  std::vector<std::string> out = {"--gpu-architecture=" + target, "-std=c++17",
                                  "-default-device", "--include-path=" + cudaIncludeDir()};
  out.insert(out.end(), options.extraOptions.begin(), options.extraOptions.end());
  return out;
}

std::string currentDeviceArch() {
  const std::string noDevice = "no CUDA device: pass an explicit arch such as sm_90";
  // Opened once and never closed (unloading the driver is not supported);
  // dlerror's text is kept, as it is only available right after dlopen.
  struct Driver {
    void *handle = nullptr;
    std::string error;
  };
  static const Driver loaded = [] {
    Driver d;
    d.handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.handle) {
      const char *why = ::dlerror();
      d.error = why ? why : "libcuda.so.1: not found";
    }
    return d;
  }();
  void *driver = loaded.handle;
  if (!driver)
    throw std::runtime_error(noDevice + " (cannot load the driver: " + loaded.error + ")");
  auto cuInitFn = reinterpret_cast<decltype(&::cuInit)>(::dlsym(driver, "cuInit"));
  auto cuDeviceGetFn =
      reinterpret_cast<decltype(&::cuDeviceGet)>(::dlsym(driver, "cuDeviceGet"));
  auto cuCtxGetDeviceFn =
      reinterpret_cast<decltype(&::cuCtxGetDevice)>(::dlsym(driver, "cuCtxGetDevice"));
  auto cuDeviceGetAttributeFn = reinterpret_cast<decltype(&::cuDeviceGetAttribute)>(
      ::dlsym(driver, "cuDeviceGetAttribute"));
  auto cuGetErrorNameFn =
      reinterpret_cast<decltype(&::cuGetErrorName)>(::dlsym(driver, "cuGetErrorName"));
  if (!cuInitFn || !cuDeviceGetFn || !cuDeviceGetAttributeFn)
    throw std::runtime_error(noDevice + " (libcuda.so.1 lacks the driver API)");
  auto fail = [&](const char *call, CUresult result) {
    const char *name = nullptr;
    if (!cuGetErrorNameFn || cuGetErrorNameFn(result, &name) != CUDA_SUCCESS || !name)
      name = "unknown error";
    throw std::runtime_error(noDevice + " (" + call + ": " + name + ")");
  };
  if (CUresult r = cuInitFn(0); r != CUDA_SUCCESS)
    fail("cuInit", r);
  CUdevice device = 0;
  // The device of the caller's current context (the CUDA runtime makes one
  // current), else device 0.
  if (!cuCtxGetDeviceFn || cuCtxGetDeviceFn(&device) != CUDA_SUCCESS)
    if (CUresult r = cuDeviceGetFn(&device, 0); r != CUDA_SUCCESS)
      fail("cuDeviceGet", r);
  int major = 0, minor = 0;
  if (CUresult r = cuDeviceGetAttributeFn(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
      r != CUDA_SUCCESS)
    fail("cuDeviceGetAttribute", r);
  if (CUresult r = cuDeviceGetAttributeFn(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
      r != CUDA_SUCCESS)
    fail("cuDeviceGetAttribute", r);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::vector<CompiledKernel> compileKernels(const std::vector<KernelSource> &sources,
                                           const CompileOptions &options) {
  if (sources.empty())
    return {};
  for (const KernelSource &kernel : sources)
    if (!isIdentifier(kernel.name))
      throw std::invalid_argument("kernel name '" + kernel.name +
                                  "' is not a C identifier (it names the extern \"C\" "
                                  "__global__ function)");
  std::string arch = options.arch.empty() ? currentDeviceArch() : options.arch;
  checkArch(arch);
  std::vector<std::string> nvrtcOptions = nvrtcOptionsFor(arch, options);
  std::string version = nvrtcVersionString();

  // One work item per distinct key; duplicate requests share its result.
  std::vector<std::string> keys;
  std::vector<size_t> itemOf(sources.size());
  std::vector<size_t> firstRequest; // work item -> request index
  std::map<std::string, size_t> itemOfKey;
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string key = programCacheKey(sources[i].name, sources[i].source, nvrtcOptions,
                                      arch, version);
    auto [it, inserted] = itemOfKey.emplace(key, firstRequest.size());
    if (inserted) {
      firstRequest.push_back(i);
      keys.push_back(key);
    }
    itemOf[i] = it->second;
  }

  std::unique_ptr<DiskProgramCache> disk;
  if (options.useDiskCache) {
    std::string dir = options.cacheDir.empty() ? defaultProgramCacheDir() : options.cacheDir;
    if (dir.empty())
      warn("no program cache directory (set LS2C_CACHE_DIR or HOME); "
           "compiled kernels are not cached on disk");
    else
      disk = std::make_unique<DiskProgramCache>(dir);
  }

  struct Item {
    std::string cubin;
    bool fromCache = false;
    double seconds = 0;
    std::string failure;              // CompileError report
    std::exception_ptr otherError;    // anything else
    std::string storeFailure;         // the disk write's error
  };
  std::vector<Item> items(keys.size());
  MemoryProgramCache &memory = MemoryProgramCache::global();

  auto work = [&](size_t index) {
    Item &item = items[index];
    const KernelSource &kernel = sources[firstRequest[index]];
    const std::string &key = keys[index];
    auto start = std::chrono::steady_clock::now();
    try {
      if (auto cached = memory.lookup(key)) {
        item.cubin = *cached;
        item.fromCache = true;
      } else if (disk) {
        DiskProgramCache::Lookup found = disk->lookup(key);
        if (found.status == DiskProgramCache::Lookup::Hit) {
          item.cubin = std::move(found.payload);
          item.fromCache = true;
          memory.insert(key, item.cubin);
        } else if (found.status != DiskProgramCache::Lookup::Miss) {
          bool corrupt = found.status == DiskProgramCache::Lookup::Corrupt;
          warn(std::string(corrupt ? "corrupt" : "unreadable") + " program cache entry '" +
               disk->entryPath(key) + "' for kernel '" + kernel.name + "': " +
               found.problem + "; recompiling it");
        }
      }
      if (!item.fromCache) {
        item.failure = compileOne(kernel, arch, nvrtcOptions, item.cubin);
        if (item.failure.empty()) {
          memory.insert(key, item.cubin);
          if (disk) {
            try {
              disk->store(key, item.cubin);
            } catch (const FileWriteError &e) {
              item.storeFailure = e.what();
            }
          }
        }
      }
    } catch (...) {
      item.otherError = std::current_exception();
    }
    item.seconds = secondsSince(start);
  };

  // A small pool: workers take the next item until none are left; the
  // calling thread is one of them.
  size_t workers = std::min<size_t>(resolveJobs(options.jobs), items.size());
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t i; (i = next.fetch_add(1)) < items.size();)
      work(i);
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t)
    threads.emplace_back(loop);
  loop();
  for (std::thread &thread : threads)
    thread.join();

  size_t storeFailures = 0;
  std::string firstStoreFailure;
  for (const Item &item : items)
    if (!item.storeFailure.empty() && storeFailures++ == 0)
      firstStoreFailure = item.storeFailure;
  if (storeFailures)
    warn("program cache directory '" + disk->dir() + "' is not writable; " +
         std::to_string(storeFailures) + " compiled kernel(s) not cached on disk (" +
         firstStoreFailure + ")");

  for (const Item &item : items)
    if (item.otherError)
      std::rethrow_exception(item.otherError);
  std::vector<std::string> failed;
  std::string report;
  for (size_t i = 0; i < items.size(); ++i)
    if (!items[i].failure.empty()) {
      failed.push_back(sources[firstRequest[i]].name);
      report += "\n" + items[i].failure;
    }
  if (!failed.empty()) {
    std::string message = "NVRTC " + version + ": " + std::to_string(failed.size()) + " of " +
                          std::to_string(items.size()) + " kernel(s) failed to compile:\n" +
                          report;
    throw CompileError(message, std::move(failed));
  }

  std::vector<CompiledKernel> results;
  results.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const Item &item = items[itemOf[i]];
    results.push_back({sources[i].name, arch, item.cubin, item.fromCache, item.seconds});
  }
  return results;
}

} // namespace ls2c::jit
