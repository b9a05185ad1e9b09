//===- Executor.cpp - run a compiled Program's functions on a GPU ---------===//

#include "ls2c/Runtime/Executor.h"

#include "ls2c/Runtime/GemmRunner.h"
#include "ls2c/Runtime/ProgramValidate.h"

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <type_traits>

namespace ls2c::runtime {

namespace {

/// The HelperNeeds kind of the cuDNN attention buffers (the GEMM helpers'
/// kinds are dtype numbers, all below it).
constexpr int kCudnnHelperKind = 1000;

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

/// An instantiated CUDA graph, destroyed with the object (a launch still in
/// flight finishes first: cudaGraphExecDestroy frees it on completion).
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t e) const { cudaGraphExecDestroy(e); }
};
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;
using GraphAction = GraphCache<GraphExec>::Action;

/// Step `si` of `f` in words, for errors ("launch of K", "gemm", "copy").
std::string stepText(const Program &p, const Function &f, size_t si) {
  if (si >= f.steps.size())
    return "after the last step";
  const Step &s = f.steps[si];
  std::string kind = s.kind == Step::Kind::Launch ? "launch of " + p.kernels[s.kernel].name
                     : s.kind == Step::Kind::Gemm ? "gemm"
                     : s.kind == Step::Kind::Copy ? "copy"
                                                  : "attention";
  return "step " + std::to_string(si) + " (" + kind + ")";
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
  DeviceBuffer arena, gemmWorkspace, gemmStaging;
  std::unique_ptr<GemmRunner> gemm;

  GraphCache<GraphExec> graphs{Executor::kMaxGraphs};
  /// With GEMM autotuning: the (function, argument shapes) that ran step by
  /// step once, so their GEMMs' plans were timed (GemmRunner: not while
  /// capturing). A new one runs eagerly first, while the runner still times
  /// (GemmRunner::tuningOpen) and fewer than kMaxGemmTunedCalls are held.
  static constexpr size_t kMaxGemmTunedCalls = 4096;
  std::set<std::pair<size_t, std::vector<std::vector<int64_t>>>> gemmTuned;
  /// Captures go to this stream: the caller's may be the legacy default
  /// stream, which cannot capture.
  cudaStream_t captureStream = nullptr;
  /// Per function, its BiasGradA GEMM steps: GemmRunner's fallback for
  /// them sums over k with a ones vector (per a's dtype) that it grows
  /// lazily, its only such buffer (GraphCache.h); their k are a run's
  /// helper needs. Keep in step with GemmRunner::Impl::onesOf's callers.
  std::vector<std::vector<size_t>> helperSteps;
  /// With AttentionBackend::Cudnn or Auto; its buffers are a helper need too.
  std::unique_ptr<CudnnAttention> cudnn;
  std::set<std::string> refusalsReported;
  /// Auto: the backend of each attention shape, and how many decisions
  /// were reported on stderr.
  AttentionChoices choices;
  size_t decisionsReported = 0;
  /// Per function, per Attention step: its choice key (the device and
  /// cuDNN, the shape, a hash of its fallback kernels' sources); and where
  /// the choices are kept ("" = nowhere).
  std::vector<std::vector<std::string>> choiceKeys;
  std::string choicesPath;
  bool choicesWriteFailed = false;
  /// Per function, per step: the attention step sharing its lse (a
  /// forward's backward and the reverse), else -1.
  std::vector<std::vector<int64_t>> partners;

  /// Device times of one call on both backends: each run once (cuDNN's
  /// first execution loads its kernels), then three times each; medians.
  /// Each timed run starts with the L2 cache holding none of its operands:
  /// repeated back to back on warm operands, the generated kernels (which
  /// re-read K, V, Q and dO per tile) timed 8% faster than they ran in the
  /// step (H200, BERT-base's backward 0.403 against 0.441 ms; cuDNN's 0.354
  /// and 0.357), and won a choice they lose there. Where the device has no
  /// room for the flush buffer the runs are timed warm, as before. The
  /// kernels run last, so the call's outputs are theirs.
  AttentionTiming timeBoth(const std::function<void()> &cudnnCall,
                           const std::function<void()> &kernels, cudaStream_t stream) {
    // Written before each timed run: twice the L2 cache, allocated for the
    // timing only (timing runs go step by step, never captured).
    int device = 0, l2 = 0;
    checkCuda(cudaGetDevice(&device), "cudaGetDevice");
    checkCuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "reading the L2 size");
    const size_t flushBytes = 2 * static_cast<size_t>(std::max(l2, 1 << 20));
    DeviceBuffer flush;
    try {
      flush = DeviceBuffer(flushBytes, "the L2 flush buffer of attention timing");
    } catch (const RuntimeError &e) {
      // A full device (a long context's arena): time warm rather than fail.
      std::fprintf(stderr, "ls2c: attention timing without an L2 flush: %s\n", e.what());
    }
    struct Events {
      cudaEvent_t start = nullptr, end = nullptr;
      ~Events() {
        if (start)
          cudaEventDestroy(start);
        if (end)
          cudaEventDestroy(end);
      }
    } events;
    checkCuda(cudaEventCreate(&events.start), "cudaEventCreate");
    checkCuda(cudaEventCreate(&events.end), "cudaEventCreate");
    cudaEvent_t start = events.start, end = events.end;
    auto median = [&](const std::function<void()> &call) {
      float ms[3];
      for (float &m : ms) {
        if (flush.data())
          checkCuda(cudaMemsetAsync(flush.data(), 0, flushBytes, stream),
                    "flushing the L2 cache");
        checkCuda(cudaEventRecord(start, stream), "cudaEventRecord");
        call();
        checkCuda(cudaEventRecord(end, stream), "cudaEventRecord");
        checkCuda(cudaEventSynchronize(end), "cudaEventSynchronize");
        checkCuda(cudaEventElapsedTime(&m, start, end), "cudaEventElapsedTime");
      }
      std::sort(ms, ms + 3);
      return static_cast<double>(ms[1]);
    };
    cudnnCall();
    kernels();
    AttentionTiming t;
    t.cudnnMs = median(cudnnCall);
    t.kernelsMs = median(kernels);
    return t;
  }
  bool capturing = false;
  size_t step = 0; ///< the step being enqueued (named by capture errors)

  ~Impl() {
    // Graphs point into the modules and buffers below: they go first.
    graphs.clear();
    if (capturing)
      abortCapture();
    if (captureStream)
      cudaStreamDestroy(captureStream);
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

  cudaStream_t beginCapture() {
    // Thread-local: this thread's unsafe calls (cudaMalloc, synchronous
    // copies) fail during the capture; other threads' are left alone.
    checkCuda(cudaStreamBeginCapture(captureStream, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture");
    capturing = true;
    return captureStream;
  }

  /// Before step `si` (f.steps.size(): after the last): while capturing,
  /// throws when an earlier step invalidated the capture without failing.
  void atStep(size_t si) {
    step = si;
    if (!capturing)
      return;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(captureStream, &st) != cudaSuccess ||
        st != cudaStreamCaptureStatusActive) {
      step = si > 0 ? si - 1 : 0;
      throw RuntimeError("the capture was invalidated");
    }
  }

  GraphExec endCapture(const std::string &name) {
    capturing = false;
    cudaGraph_t g = nullptr;
    cudaError_t e = cudaStreamEndCapture(captureStream, &g);
    if (e != cudaSuccess || !g) {
      if (g)
        cudaGraphDestroy(g);
      cudaGetLastError();
      throw RuntimeError("@" + name + ": ending its CUDA graph capture: " + cudaGetErrorName(e) +
                         "; run with graphs off (Executor::setGraphs(false), --no-graphs)");
    }
    cudaGraphExec_t exec = nullptr;
    e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    checkCuda(e, "@" + name + ": cudaGraphInstantiate");
    return GraphExec(exec);
  }

  void abortCapture() {
    capturing = false;
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(captureStream, &g);
    if (g)
      cudaGraphDestroy(g);
    // Capture errors are not sticky: clear them so that later runs'
    // cudaGetLastError checks do not report them again.
    cudaGetLastError();
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
    // Past 48 KiB of shared memory a block must opt in, and the limit
    // counts the kernel's static __shared__ arrays with the dynamic bytes
    // (a scatter-add tile of exactly 48 KiB plus its 8 KiB of id lists
    // failed to launch without it).
    int staticShared = 0;
    checkDriver(cuFuncGetAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                "reading kernel " + k.name + "'s shared memory");
    if (k.launch.dynamicSharedBytes > 0 &&
        static_cast<uint64_t>(staticShared) + k.launch.dynamicSharedBytes > 48 * 1024)
      checkDriver(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(k.launch.dynamicSharedBytes)),
                  "allowing kernel " + k.name + " its " +
                      std::to_string(k.launch.dynamicSharedBytes) + " bytes of dynamic and " +
                      std::to_string(staticShared) + " of static shared memory");
    impl->functions.push_back(fn);
  }
  impl->arena = DeviceBuffer(prog.arenaBytes, "the arena of " + prog.modelName);
  // Scratch counters must start at zero; kernels leave them at zero.
  impl->arena.fill(0);
  impl->gemmWorkspace =
      DeviceBuffer(GemmRunner::kRecommendedWorkspaceBytes, "the cuBLASLt workspace");
  // Staging for GEMMs with unaligned rows (the logits of an odd vocabulary),
  // only when the program has one.
  bool stages = false;
  for (const Function &f : prog.functions)
    for (const Step &s : f.steps)
      stages |= s.kind == Step::Kind::Gemm && GemmRunner::stagesRows(s.gemm);
  if (stages)
    impl->gemmStaging =
        DeviceBuffer(GemmRunner::kRecommendedStagingBytes, "the GEMM staging buffer");
  impl->gemm = std::make_unique<GemmRunner>(impl->gemmWorkspace.data(),
                                            impl->gemmWorkspace.size(),
                                            impl->gemmStaging.data(), impl->gemmStaging.size());
  checkCuda(cudaStreamCreateWithFlags(&impl->captureStream, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags (graph capture)");
  for (const Function &f : prog.functions) {
    impl->partners.push_back(attentionPartners(f));
    std::vector<size_t> &steps = impl->helperSteps.emplace_back();
    for (size_t si = 0; si < f.steps.size(); ++si)
      if (f.steps[si].kind == Step::Kind::Gemm &&
          f.steps[si].gemm.epilogue == GemmEpilogue::BiasGradA)
        steps.push_back(si);
  }
}

Executor::~Executor() = default;

const Function &Executor::function(const std::string &name) const {
  for (const Function &f : prog.functions)
    if (f.name == name)
      return f;
  throw RuntimeError("the program of " + prog.modelName + " has no function '" + name + "'");
}

void Executor::enqueue(const std::string &name, const Call &call, cudaStream_t callerStream) {
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

  // CUDA graphs (Executor.h, GraphCache.h): replay, capture, or step by
  // step.
  size_t fi = static_cast<size_t>(&f - prog.functions.data());
  HelperNeeds needs;
  for (size_t si : impl->helperSteps[fi])
    needs.emplace_back(static_cast<int>(f.steps[si].gemm.aType), dimValue(f.steps[si].gemm.k));
  // How each attention step runs in this call: its generated kernels,
  // cuDNN (planned on the host now; its buffers grow like the GEMM
  // helpers'), or, with Auto and a shape not yet decided, both, timed.
  enum : char { kKernels, kCudnn, kTune };
  std::vector<char> how(f.steps.size(), kKernels);
  const std::vector<int64_t> &partner = impl->partners[fi];
  auto callShape = [&](const Attention &a) {
    return AttentionCallShape{dimValue(a.batchPlusOne) - 1, dimValue(a.tokensQ),
                              dimValue(a.tokensK)};
  };
  bool tuning = false;
  if (attention != AttentionBackend::Kernels && impl->cudnn) {
    std::vector<char> accepted(f.steps.size(), 0);
    for (size_t si = 0; si < f.steps.size(); ++si) {
      if (f.steps[si].kind != Step::Kind::Attention)
        continue;
      const Attention &a = f.steps[si].attention;
      std::string whyNot;
      if (impl->cudnn->prepare(a, callShape(a), whyNot)) {
        accepted[si] = 1;
        continue;
      }
      std::string what = "@" + name + " step " + std::to_string(si) + " (attention " +
                         (a.backward ? "backward" : "forward") + ")";
      if (a.fallbackSteps == 0 || (attention == AttentionBackend::Cudnn && a.dropoutRate > 0))
        throw RuntimeError(what + ": cuDNN refused it (" + whyNot + ")" +
                           (a.fallbackSteps == 0
                                ? " and it has no generated kernels to fall back to"
                                : "; with dropout its forward and backward must draw the same "
                                  "mask on one backend: use the generated kernels for all "
                                  "attention (--attention kernels or auto)"));
      if (impl->refusalsReported.insert(what + whyNot).second)
        std::fprintf(stderr, "ls2c: %s: cuDNN refused it (%s); running the generated kernels\n",
                     what.c_str(), whyNot.c_str());
      // Auto: the shape runs on the kernels, and so does its dropout partner.
      if (attention == AttentionBackend::Auto)
        impl->choices.decide(impl->choiceKeys[fi][si], {INFINITY, 0});
    }
    for (size_t si = 0; si < f.steps.size(); ++si) {
      if (!accepted[si])
        continue;
      if (attention == AttentionBackend::Cudnn) {
        how[si] = kCudnn;
        continue;
      }
      const Attention &a = f.steps[si].attention;
      const std::string &key = impl->choiceKeys[fi][si];
      std::optional<AttentionBackend> chosen = impl->choices.find(key);
      if (!chosen && a.dropoutRate > 0 && partner[si] >= 0) {
        const std::string &other = impl->choiceKeys[fi][partner[si]];
        if (impl->choices.find(other))
          chosen = impl->choices.impose(key, other);
      }
      how[si] = !chosen ? kTune : *chosen == AttentionBackend::Cudnn ? kCudnn : kKernels;
    }
    // A shape's choice holds for every batch, but cuDNN may refuse one
    // batch of it (i32 offsets, its own plan refusals): dropout partners
    // that would then differ both run the kernels (one mask).
    for (size_t si = 0; si < f.steps.size(); ++si)
      if (f.steps[si].kind == Step::Kind::Attention && f.steps[si].attention.dropoutRate > 0 &&
          partner[si] >= 0 && how[si] != how[partner[si]])
        how[si] = how[partner[si]] = kKernels;
    for (char h : how)
      tuning |= h == kTune;
    needs.emplace_back(kCudnnHelperKind,
                       static_cast<int64_t>(impl->cudnn->deviceBytesNeeded()));
  }
  // An attention step with no generated kernels runs only on cuDNN: refused
  // here, before any capture, rather than while capturing.
  for (size_t si = 0; si < f.steps.size(); ++si)
    if (f.steps[si].kind == Step::Kind::Attention && how[si] == kKernels &&
        f.steps[si].attention.fallbackSteps == 0)
      throw RuntimeError("@" + name + " step " + std::to_string(si) +
                         ": an attention step with no generated kernels needs cuDNN "
                         "(setAttentionBackend(AttentionBackend::Cudnn or Auto))");
  GraphKey key;
  // Timing the backends synchronizes: those runs go step by step.
  bool gemmTuning = impl->gemm->tuningOpen() && impl->gemmTuned.size() < Impl::kMaxGemmTunedCalls &&
                    !impl->gemmTuned.count({fi, call.argumentShapes});
  bool wantGraph = graphsOn && !timing && !tuning && !gemmTuning;
  if (wantGraph)
    key = makeGraphKey(fi, call.argumentShapes, call.arguments, call.results);
  auto decision = impl->graphs.decide(wantGraph ? &key : nullptr, needs);
  if (decision.action == GraphAction::Replay) {
    if (cudaError_t e = cudaGraphLaunch(decision.exec->get(), callerStream); e != cudaSuccess)
      checkCuda(e, "@" + name + ": cudaGraphLaunch");
    return;
  }
  // Runs step by step are the only ones that may grow helper buffers
  // (GraphCache::decide destroyed the graphs that used the old ones).
  if (attention != AttentionBackend::Kernels && impl->cudnn &&
      decision.action == GraphAction::Eager)
    impl->cudnn->reserve();
  cudaStream_t stream =
      decision.action == GraphAction::Capture ? impl->beginCapture() : callerStream;

  // One kernel launch (step `index`).
  auto launch = [&](const Step &s, size_t index) {
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
      return;
    int64_t blocks = std::min<int64_t>(
        k.launch.maxBlocks, (work + static_cast<int64_t>(k.launch.workPerBlock) - 1) /
                                static_cast<int64_t>(k.launch.workPerBlock));
    if (CUresult r = cuLaunchKernel(impl->functions[s.kernel], static_cast<unsigned>(blocks), 1,
                                    1, k.launch.blockThreads, 1, 1, k.launch.dynamicSharedBytes,
                                    reinterpret_cast<CUstream>(stream), params.data(), nullptr);
        r != CUDA_SUCCESS)
      checkDriver(r, "@" + name + " step " + std::to_string(index) + ": launching " + k.name);
  };
  // Auto: forward timings waiting for their backward (dropout partners are
  // decided together).
  std::map<size_t, AttentionTiming> waiting;

  if (timing)
    impl->labels.clear();
  size_t skipThrough = 0; ///< fallback launches after an attention cuDNN ran
  bool skipTimed = false; ///< ... or that ran while both backends were timed
  for (size_t si = 0; si < f.steps.size(); ++si) {
    const Step &s = f.steps[si];
    impl->atStep(si);
    // Messages are built only on failure: this loop runs every step.
    auto where = [&] { return "@" + name + " step " + std::to_string(si); };
    bool skipped = si > 0 && si <= skipThrough;
    if (timing) {
      impl->record(si, stream);
      impl->labels.push_back(
          skipped ? (skipTimed ? "ran_while_timing_both" : "skipped_after_cudnn")
          : s.kind == Step::Kind::Launch ? prog.kernels[s.kernel].name
          : s.kind == Step::Kind::Gemm
              // "gemm MxNxK", "/tn" (a, b: t transposed, n not) when either
              // is transposed, "+epilogue" unless none: so a shape's forward
              // and gradient GEMMs get rows of their own in a profile.
              ? "gemm " + std::to_string(dimValue(s.gemm.m)) + "x" +
                    std::to_string(dimValue(s.gemm.n)) + "x" + std::to_string(dimValue(s.gemm.k)) +
                    (s.gemm.transposeA || s.gemm.transposeB
                         ? std::string("/") + (s.gemm.transposeA ? "t" : "n") +
                               (s.gemm.transposeB ? "t" : "n")
                         : std::string()) +
                    (s.gemm.epilogue == GemmEpilogue::None
                         ? std::string()
                         : std::string("+") + epilogueName(s.gemm.epilogue))
          : s.kind == Step::Kind::Copy ? "copy"
          // One word each: profile tables and scripts read labels as one.
          : how[si] == kCudnn ? (s.attention.backward ? "cudnn_attention_backward"
                                                      : "cudnn_attention_forward")
          : how[si] == kTune ? "attention_timing_both_backends"
                             : "attention_kernels_follow");
    }
    if (skipped) {
      if (stepHook)
        stepHook(f, call, si, stream);
      continue;
    }
    switch (s.kind) {
    case Step::Kind::Launch:
      launch(s, si);
      break;
    case Step::Kind::Gemm: {
      const Gemm &g = s.gemm;
      GemmShape shape{dimValue(g.m), dimValue(g.n), dimValue(g.k), dimValue(g.batch)};
      GemmPointers p;
      p.a = pointer(g.a);
      p.b = pointer(g.b);
      p.c = pointer(g.c);
      if (epilogueHasBias(g.epilogue))
        p.bias = pointer(g.bias);
      if (epilogueHasBiasGrad(g.epilogue))
        p.biasGrad = pointer(g.biasGrad);
      if (epilogueWritesAux(g.epilogue) || epilogueReadsAux(g.epilogue))
        p.aux = pointer(g.aux);
      impl->gemm->run(g, shape, p, stream);
      break;
    }
    case Step::Kind::Attention: {
      const Attention &a = s.attention;
      auto callPointers = [&] {
        AttentionCallPointers p;
        p.q = pointer(a.q);
        p.k = pointer(a.k);
        p.v = pointer(a.v);
        p.out = pointer(a.out);
        p.lse = pointer(a.lse);
        p.cuSeqlensQ = pointer(a.cuSeqlensQ);
        p.cuSeqlensK = pointer(a.cuSeqlensK);
        if (a.dropoutRate > 0) {
          p.seed = pointer(a.seed);
          p.offset = pointer(a.offset);
        }
        if (a.backward) {
          p.dout = pointer(a.dout);
          p.dq = pointer(a.dq);
          p.dk = pointer(a.dk);
          p.dv = pointer(a.dv);
        }
        return p;
      };
      if (attentionOverride) {
        skipThrough = si + a.fallbackSteps;
        attentionOverride(a, callShape(a), callPointers(), stream);
        break;
      }
      if (how[si] == kKernels) {
        if (a.fallbackSteps == 0)
          throw RuntimeError(where() + ": an attention step with no generated kernels needs "
                                       "cuDNN (setAttentionBackend(AttentionBackend::Cudnn))");
        break; // its fallback launches follow
      }
      const AttentionCallPointers p = callPointers();
      skipThrough = si + a.fallbackSteps;
      skipTimed = how[si] == kTune;
      if (how[si] == kCudnn) {
        impl->cudnn->run(a, callShape(a), p, stream);
        break;
      }
      // Auto, a shape not yet decided: both backends, timed; the kernels
      // run last, so this call's outputs (and dropout mask) are theirs.
      AttentionTiming t = impl->timeBoth(
          [&] { impl->cudnn->run(a, callShape(a), p, stream); },
          [&] {
            for (size_t j = si + 1; j <= si + a.fallbackSteps; ++j)
              launch(f.steps[j], j);
          },
          stream);
      int64_t other = partner[si];
      if (a.dropoutRate > 0 && other >= 0 && !a.backward && how[other] == kTune)
        waiting[si] = t;
      else if (auto w = waiting.find(static_cast<size_t>(other));
               a.dropoutRate > 0 && other >= 0 && w != waiting.end()) {
        impl->choices.decidePair(impl->choiceKeys[fi][other], w->second,
                                 impl->choiceKeys[fi][si], t);
        waiting.erase(w);
      } else
        impl->choices.decide(impl->choiceKeys[fi][si], t);
      break;
    }
    case Step::Kind::Copy:
      if (cudaError_t e = cudaMemcpyAsync(pointer(s.copyDestination), pointer(s.copySource),
                                          s.copySource.maxBytes, cudaMemcpyDeviceToDevice,
                                          stream);
          e != cudaSuccess)
        checkCuda(e, where() + ": copy");
      break;
    }
    if (stepHook)
      stepHook(f, call, si, stream);
  }
  // A forward whose backward never came (another function has it).
  for (const auto &[si, t] : waiting)
    impl->choices.decide(impl->choiceKeys[fi][si], t);
  const std::vector<AttentionDecision> &made = impl->choices.decisions();
  bool decided = false;
  for (; impl->decisionsReported < made.size(); ++impl->decisionsReported) {
    const AttentionDecision &d = made[impl->decisionsReported];
    decided |= !d.loaded;
    if (d.loaded)
      continue; // reported when read
    if (d.imposed)
      std::fprintf(stderr, "ls2c: attention %s: %s (as its dropout partner)\n", d.key.c_str(),
                   attentionBackendName(d.backend));
    else if (std::isinf(d.timing.cudnnMs))
      std::fprintf(stderr, "ls2c: attention %s: kernels (cuDNN refused it)\n", d.key.c_str());
    else
      std::fprintf(stderr, "ls2c: attention %s: cuDNN %.3f ms, kernels %.3f ms: %s\n",
                   d.key.c_str(), d.timing.cudnnMs, d.timing.kernelsMs,
                   attentionBackendName(d.backend));
  }
  if (decided && !impl->choicesPath.empty() && !impl->choicesWriteFailed) {
    try {
      impl->choices.saveFile(impl->choicesPath);
    } catch (const std::exception &e) {
      impl->choicesWriteFailed = true; // said once; the run goes on
      std::fprintf(stderr, "ls2c: attention choices not kept: %s\n", e.what());
    }
  }
  if (timing)
    impl->record(f.steps.size(), stream);
  if (decision.action == GraphAction::Capture) {
    impl->atStep(f.steps.size());
    GraphExec exec = impl->endCapture(name);
    if (cudaError_t e = cudaGraphLaunch(exec.get(), callerStream); e != cudaSuccess)
      checkCuda(e, "@" + name + ": cudaGraphLaunch");
    impl->graphs.store(key, std::move(exec));
    return;
  }
  checkCuda(cudaGetLastError(), "@" + name);
  impl->graphs.ranEagerly(needs);
  if (gemmTuning)
    impl->gemmTuned.insert({fi, call.argumentShapes});
}

void Executor::run(const std::string &name, const Call &call, cudaStream_t stream) {
  try {
    enqueue(name, call, stream);
  } catch (const std::exception &e) {
    if (!impl->capturing)
      throw;
    impl->abortCapture();
    throw RuntimeError("@" + name + " " + stepText(prog, function(name), impl->step) +
                       " failed while capturing a CUDA graph (which refuses host "
                       "synchronization and allocation): " + e.what() +
                       "; run with graphs off (Executor::setGraphs(false), --no-graphs)");
  }
}

void Executor::setGraphs(bool on) {
  graphsOn = on;
  if (!on)
    impl->graphs.clear();
}

void Executor::setStepHook(StepHook hook) {
  stepHook = std::move(hook);
  impl->graphs.clear();
}

void Executor::setAttentionOverride(AttentionOverride hook) {
  attentionOverride = std::move(hook);
  if (attentionOverride)
    setGraphs(false);
}

void Executor::setAttentionBackend(AttentionBackend backend) {
  // Made only for a program with Attention steps, and kept once made: the
  // graph cache remembers the sizes its buffers grew to.
  bool steps = false;
  for (const Function &f : prog.functions)
    for (const Step &s : f.steps)
      steps |= s.kind == Step::Kind::Attention;
  if (backend != AttentionBackend::Kernels && steps && !impl->cudnn) {
    impl->cudnn = std::make_unique<CudnnAttention>();
    // Choice keys: a timing holds for this device and cuDNN, the shape,
    // and the generated kernels it was timed against (FNV-1a of their
    // sources).
    std::string device = impl->cudnn->deviceKey();
    for (const Function &f : prog.functions) {
      std::vector<std::string> &keys = impl->choiceKeys.emplace_back(f.steps.size());
      for (size_t si = 0; si < f.steps.size(); ++si) {
        if (f.steps[si].kind != Step::Kind::Attention)
          continue;
        const Attention &a = f.steps[si].attention;
        uint64_t h = 1469598103934665603ull;
        for (size_t j = si + 1; j <= si + a.fallbackSteps; ++j)
          for (unsigned char c : prog.kernels[f.steps[j].kernel].source)
            h = (h ^ c) * 1099511628211ull;
        keys[si] = attentionChoiceKey(device, a, h);
      }
    }
  }
  if (backend == AttentionBackend::Auto && impl->cudnn && impl->choicesPath.empty()) {
    impl->choicesPath = CudnnAttention::choicesPath();
    if (!impl->choicesPath.empty()) {
      try {
        if (size_t n = impl->choices.loadFile(impl->choicesPath))
          std::fprintf(stderr, "ls2c: %zu attention choices read from %s\n", n,
                       impl->choicesPath.c_str());
      } catch (const std::exception &e) {
        std::fprintf(stderr, "ls2c: ignoring the attention choices: %s\n", e.what());
      }
    }
  }
  attention = backend;
  impl->graphs.clear();
}

GraphStats Executor::graphStats() const { return impl->graphs.stats(); }

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
