//===- Executor.cpp - run a compiled Program's functions on a GPU ---------===//

#include "ls2c/Runtime/Executor.h"

#include "ls2c/Runtime/GemmRunner.h"
#include "ls2c/Runtime/ProgramValidate.h"

#include <cuda.h>

#include <algorithm>
#include <map>

namespace ls2c::runtime {

namespace {

void checkCuda(cudaError_t e, const std::string &what) {
  if (e != cudaSuccess)
    throw RuntimeError(what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void checkDriver(CUresult r, const std::string &what) {
  if (r != CUDA_SUCCESS) {
    const char *name = "?", *text = "";
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &text);
    throw RuntimeError(what + ": " + name + " (" + text + ")");
  }
}

std::string bytesText(size_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%zu bytes (%.2f GiB)", b, double(b) / (1u << 30));
  return buf;
}

} // namespace

DeviceBuffer::DeviceBuffer(size_t n, const std::string &what) : bytes(n) {
  cudaError_t e = cudaMalloc(&ptr, std::max<size_t>(n, 1));
  if (e != cudaSuccess) {
    ptr = nullptr;
    size_t freeBytes = 0, total = 0;
    cudaGetLastError();
    cudaMemGetInfo(&freeBytes, &total);
    throw RuntimeError("out of device memory for " + what + ": asked " + bytesText(n) +
                       ", " + bytesText(freeBytes) + " free of " + bytesText(total));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr)
    cudaFree(ptr);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&o) noexcept : ptr(o.ptr), bytes(o.bytes) {
  o.ptr = nullptr;
  o.bytes = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  std::swap(ptr, o.ptr);
  std::swap(bytes, o.bytes);
  return *this;
}

void DeviceBuffer::upload(const void *host, size_t n, size_t offset) {
  if (offset + n > bytes)
    throw RuntimeError("upload of " + std::to_string(n) + " bytes at " +
                       std::to_string(offset) + " past a buffer of " + std::to_string(bytes));
  checkCuda(cudaMemcpy(static_cast<char *>(ptr) + offset, host, n, cudaMemcpyHostToDevice),
            "cudaMemcpy (upload)");
}

void DeviceBuffer::download(void *host, size_t n, size_t offset) const {
  if (offset + n > bytes)
    throw RuntimeError("download of " + std::to_string(n) + " bytes at " +
                       std::to_string(offset) + " past a buffer of " + std::to_string(bytes));
  checkCuda(cudaMemcpy(host, static_cast<const char *>(ptr) + offset, n, cudaMemcpyDeviceToHost),
            "cudaMemcpy (download)");
}

void DeviceBuffer::fill(int byte) {
  checkCuda(cudaMemset(ptr, byte, bytes), "cudaMemset");
}

struct Executor::Impl {
  std::vector<CUmodule> modules;
  /// Timing: an event before every step and one after the last, and each
  /// step's label, of the last run.
  std::vector<cudaEvent_t> events;
  std::vector<std::string> labels;
  std::vector<CUfunction> functions; ///< per kernel
  DeviceBuffer arena, gemmWorkspace;
  std::unique_ptr<GemmRunner> gemm;

  ~Impl() {
    for (cudaEvent_t e : events)
      cudaEventDestroy(e);
    for (CUmodule m : modules)
      cuModuleUnload(m);
  }

  void record(size_t i, cudaStream_t stream) {
    while (events.size() <= i) {
      cudaEvent_t e;
      checkCuda(cudaEventCreate(&e), "cudaEventCreate");
      events.push_back(e);
    }
    checkCuda(cudaEventRecord(events[i], stream), "cudaEventRecord");
  }
};

Executor::Executor(Program program) : prog(std::move(program)), impl(std::make_unique<Impl>()) {
  validateProgram(prog, "program of " + prog.modelName);
  int device = 0;
  checkCuda(cudaGetDevice(&device), "cudaGetDevice");
  // The runtime API makes the primary context current; the driver calls
  // below use it.
  checkCuda(cudaFree(nullptr), "initializing the CUDA context");
  cudaDeviceProp props{};
  checkCuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  archName = "sm_" + std::to_string(props.major) + std::to_string(props.minor);

  for (const Kernel &k : prog.kernels) {
    auto it = k.cubins.find(archName);
    if (it == k.cubins.end())
      throw RuntimeError("kernel " + k.name + " has no cubin for this device's " + archName +
                         " (recompile with --arch=" + archName + ")");
    CUmodule module;
    checkDriver(cuModuleLoadData(&module, it->second.data()), "loading kernel " + k.name);
    impl->modules.push_back(module);
    CUfunction fn;
    checkDriver(cuModuleGetFunction(&fn, module, k.name.c_str()), "finding kernel " + k.name);
    if (k.launch.dynamicSharedBytes > 48 * 1024)
      checkDriver(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(k.launch.dynamicSharedBytes)),
                  "allowing kernel " + k.name + " its shared memory");
    impl->functions.push_back(fn);
  }
  impl->arena = DeviceBuffer(prog.arenaBytes, "the arena of " + prog.modelName);
  // Scratch counters must start at zero; kernels leave them at zero.
  impl->arena.fill(0);
  impl->gemmWorkspace =
      DeviceBuffer(GemmRunner::kRecommendedWorkspaceBytes, "the cuBLASLt workspace");
  impl->gemm = std::make_unique<GemmRunner>(impl->gemmWorkspace.data(),
                                            impl->gemmWorkspace.size());
}

Executor::~Executor() = default;

const Function &Executor::function(const std::string &name) const {
  for (const Function &f : prog.functions)
    if (f.name == name)
      return f;
  throw RuntimeError("the program of " + prog.modelName + " has no function '" + name + "'");
}

void Executor::run(const std::string &name, const Call &call, cudaStream_t stream) {
  const Function &f = function(name);
  if (call.arguments.size() != f.arguments.size() ||
      call.argumentShapes.size() != f.arguments.size() ||
      call.results.size() != f.results.size())
    throw RuntimeError("@" + name + " takes " + std::to_string(f.arguments.size()) +
                       " arguments and " + std::to_string(f.results.size()) +
                       " results; the call gives " + std::to_string(call.arguments.size()) +
                       " and " + std::to_string(call.results.size()));
  // Every shape is checked before anything runs.
  for (size_t i = 0; i < f.arguments.size(); ++i) {
    const TensorSpec &spec = f.arguments[i];
    const std::vector<int64_t> &shape = call.argumentShapes[i];
    std::string what = "@" + name + " argument " + std::to_string(i) + " '" + spec.name + "'";
    if (shape.size() != spec.shape.size())
      throw RuntimeError(what + " has rank " + std::to_string(shape.size()) + ", not " +
                         std::to_string(spec.shape.size()));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (spec.shape[d].isStatic() && shape[d] != spec.shape[d].size)
        throw RuntimeError(what + " dim " + std::to_string(d) + " is " +
                           std::to_string(shape[d]) + ", not " +
                           std::to_string(spec.shape[d].size));
      if (shape[d] < 0 || shape[d] > spec.maxShape[d])
        throw RuntimeError(what + " dim " + std::to_string(d) + " is " +
                           std::to_string(shape[d]) + ": the program was planned for at most " +
                           std::to_string(spec.maxShape[d]) + " (max_batch_tokens / max_seq_len)");
    }
    int64_t elements = 1;
    for (int64_t d : shape)
      elements *= d;
    if (!call.arguments[i] && elements > 0)
      throw RuntimeError(what + " has no device buffer");
  }
  auto dimValue = [&](const Dim &d) -> int64_t {
    if (d.isStatic())
      return d.size;
    return call.argumentShapes[d.argument][d.axis] * d.multiplier / d.divisor;
  };
  // Sizes the program requires to agree are one symbol (the token count is
  // input_ids' dim 0 whichever input a kernel reads): an argument whose dim
  // names another argument's must have that size, or kernels would read
  // past it.
  for (size_t i = 0; i < f.arguments.size(); ++i) {
    const TensorSpec &spec = f.arguments[i];
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      const Dim &dim = spec.shape[d];
      if (dim.isStatic() || (dim.argument == static_cast<int32_t>(i) &&
                             dim.axis == static_cast<int32_t>(d) && dim.multiplier == 1 &&
                             dim.divisor == 1))
        continue;
      int64_t want = dimValue(dim);
      if (call.argumentShapes[i][d] != want)
        throw RuntimeError("@" + name + " argument " + std::to_string(i) + " '" + spec.name +
                           "' dim " + std::to_string(d) + " is " +
                           std::to_string(call.argumentShapes[i][d]) + ", but the program needs " +
                           std::to_string(want) + " (from argument '" +
                           f.arguments[dim.argument].name + "' dim " +
                           std::to_string(dim.axis) + ")");
    }
  }
  auto pointer = [&](const BufferRef &r) -> char * {
    char *base = nullptr;
    switch (r.space) {
    case BufferRef::Space::Arena:
      base = static_cast<char *>(impl->arena.data());
      break;
    case BufferRef::Space::Argument:
      base = static_cast<char *>(call.arguments[r.index]);
      break;
    case BufferRef::Space::Result:
      base = static_cast<char *>(call.results[r.index]);
      break;
    }
    return base ? base + r.byteOffset : nullptr;
  };

  if (timing)
    impl->labels.clear();
  for (size_t si = 0; si < f.steps.size(); ++si) {
    const Step &s = f.steps[si];
    // Messages are built only on failure: this loop runs every step.
    auto where = [&] { return "@" + name + " step " + std::to_string(si); };
    if (timing) {
      impl->record(si, stream);
      impl->labels.push_back(s.kind == Step::Kind::Launch ? prog.kernels[s.kernel].name
                             : s.kind == Step::Kind::Gemm
                                 ? "gemm " + std::to_string(dimValue(s.gemm.m)) + "x" +
                                       std::to_string(dimValue(s.gemm.n)) + "x" +
                                       std::to_string(dimValue(s.gemm.k))
                                 : s.kind == Step::Kind::Copy ? "copy" : "attention");
    }
    switch (s.kind) {
    case Step::Kind::Launch: {
      const Kernel &k = prog.kernels[s.kernel];
      std::vector<int64_t> ints(s.args.size());
      std::vector<CUdeviceptr> ptrs(s.args.size());
      std::vector<void *> params(s.args.size());
      for (size_t a = 0; a < s.args.size(); ++a) {
        if (s.args[a].kind == ParamKind::Int64) {
          ints[a] = dimValue(s.args[a].value);
          params[a] = &ints[a];
        } else {
          ptrs[a] = reinterpret_cast<CUdeviceptr>(pointer(s.args[a].buffer));
          params[a] = &ptrs[a];
        }
      }
      int64_t work = 1;
      for (const Dim &w : k.launch.work)
        work *= w.isStatic() ? w.size : ints[w.argument] * w.multiplier / w.divisor;
      if (work <= 0)
        break;
      int64_t blocks = std::min<int64_t>(
          k.launch.maxBlocks,
          (work + static_cast<int64_t>(k.launch.workPerBlock) - 1) /
              static_cast<int64_t>(k.launch.workPerBlock));
      if (CUresult r = cuLaunchKernel(impl->functions[s.kernel], static_cast<unsigned>(blocks),
                                      1, 1, k.launch.blockThreads, 1, 1,
                                      k.launch.dynamicSharedBytes,
                                      reinterpret_cast<CUstream>(stream), params.data(), nullptr);
          r != CUDA_SUCCESS)
        checkDriver(r, where() + ": launching " + k.name);
      break;
    }
    case Step::Kind::Gemm: {
      const Gemm &g = s.gemm;
      GemmShape shape{dimValue(g.m), dimValue(g.n), dimValue(g.k), dimValue(g.batch)};
      GemmPointers p;
      p.a = pointer(g.a);
      p.b = pointer(g.b);
      p.c = pointer(g.c);
      if (g.epilogue == GemmEpilogue::Bias)
        p.bias = pointer(g.bias);
      if (g.epilogue == GemmEpilogue::BiasGradA)
        p.biasGrad = pointer(g.biasGrad);
      impl->gemm->run(g, shape, p, stream);
      break;
    }
    case Step::Kind::Attention:
      throw RuntimeError(where() + ": attention steps need the cuDNN path, which this runtime "
                                 "does not have; compile attention to kernels");
    case Step::Kind::Copy:
      if (cudaError_t e = cudaMemcpyAsync(pointer(s.copyDestination), pointer(s.copySource),
                                          s.copySource.maxBytes, cudaMemcpyDeviceToDevice,
                                          stream);
          e != cudaSuccess)
        checkCuda(e, where() + ": copy");
      break;
    }
  }
  if (timing)
    impl->record(f.steps.size(), stream);
  checkCuda(cudaGetLastError(), "@" + name);
}

std::vector<std::pair<std::string, float>> Executor::stepTimes() const {
  std::vector<std::pair<std::string, float>> out;
  for (size_t i = 0; i < impl->labels.size(); ++i) {
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, impl->events[i], impl->events[i + 1]),
              "cudaEventElapsedTime");
    out.emplace_back(impl->labels[i], ms);
  }
  return out;
}

} // namespace ls2c::runtime
