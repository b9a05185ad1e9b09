//===- CudnnAttention.cpp - Attention steps through cuDNN -----------------===//

#include "ls2c/Runtime/CudnnAttention.h"

#include "ls2c/Runtime/Executor.h"

#if LS2C_HAVE_CUDNN
#include "CudnnAttentionGraph.h"

#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/JIT/ProgramCache.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#endif

namespace ls2c::runtime {

#if !LS2C_HAVE_CUDNN

bool cudnnAttentionAvailable() { return false; }

struct CudnnAttention::Impl {};

CudnnAttention::CudnnAttention() {
  throw RuntimeError("this runtime was built without cuDNN (cudnn.h and libcudnn were not "
                     "found at configure time): attention runs on the generated kernels");
}
CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::prepare(const Attention &, const AttentionCallShape &, std::string &whyNot) {
  whyNot = "no cuDNN in this build";
  return false;
}
uint64_t CudnnAttention::deviceBytesNeeded() const { return 0; }
void CudnnAttention::reserve() {}
std::string CudnnAttention::deviceKey() const { return ""; }
std::string CudnnAttention::choicesPath() { return ""; }
void CudnnAttention::run(const Attention &, const AttentionCallShape &,
                         const AttentionCallPointers &, cudaStream_t) {
  throw RuntimeError("no cuDNN in this build");
}

#else

bool cudnnAttentionAvailable() { return true; }

namespace {

// Per call: Philox seed and offset (i64 [2]), then i32 seq_len_q [B],
// seq_len_kv [B], and the ragged offsets [B + 1] of q, k, v, o, stats, dO,
// dQ, dK, dV in that order, each array starting on 16 bytes (the alignment
// the graphs declare): lengths every roundUp4(B) ints, offsets every
// roundUp4(B + 1).
constexpr int kOffsetArrays = 9;
int64_t roundUp4(int64_t n) { return (n + 3) / 4 * 4; }
const char *kArraysSource = R"(
extern "C" __global__ void ls2c_cudnn_attention_arrays(
    const int *cuQ, const int *cuK, long long batch, long long sQ, long long sK,
    long long sV, long long sO, long long heads, long long sDO, long long sDQ,
    long long sDK, long long sDV, const long long *seed, const long long *offset,
    long long stream, long long *philox, long long lengthPitch, long long n) {
  int *lengths = reinterpret_cast<int *>(philox + 2);
  int *offsets = lengths + 2 * lengthPitch;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i <= batch; i += 256ll * gridDim.x) {
    long long q = cuQ[i], k = cuK[i];
    if (i < batch) {
      lengths[i] = cuQ[i + 1] - static_cast<int>(q);
      lengths[lengthPitch + i] = cuK[i + 1] - static_cast<int>(k);
    }
    offsets[i] = static_cast<int>(q * sQ);
    offsets[n + i] = static_cast<int>(k * sK);
    offsets[2 * n + i] = static_cast<int>(k * sV);
    offsets[3 * n + i] = static_cast<int>(q * sO);
    offsets[4 * n + i] = static_cast<int>(q * heads);
    offsets[5 * n + i] = static_cast<int>(q * sDO);
    offsets[6 * n + i] = static_cast<int>(q * sDQ);
    offsets[7 * n + i] = static_cast<int>(k * sDK);
    offsets[8 * n + i] = static_cast<int>(k * sDV);
  }
  // Sites differ by key (the seed mixed with the dropout stream), steps by
  // counter: 2^36 counters a call is more than any call draws.
  if (seed && blockIdx.x == 0 && threadIdx.x == 0) {
    philox[0] = seed[0] ^ static_cast<long long>((stream + 1) * 0x9E3779B97F4A7C15ull);
    philox[1] = offset[0] << 36;
  }
}
)";

uint64_t arraysBytes(int64_t batch) {
  return 16 + 4 * static_cast<uint64_t>(2 * roundUp4(batch) + kOffsetArrays * roundUp4(batch + 1));
}

void check(cudaError_t e, const std::string &what) {
  if (e != cudaSuccess)
    throw RuntimeError("cuDNN attention: " + what + ": " + cudaGetErrorName(e) + " (" +
                       cudaGetErrorString(e) + ")");
}

/// The plan's specialization of step `a` at `shape`.
cudnn::AttentionGraphDesc describe(const Attention &a, const AttentionCallShape &shape) {
  cudnn::AttentionGraphDesc d;
  d.backward = a.backward;
  d.bf16 = a.dtype == DType::BF16;
  d.batch = shape.batch;
  d.heads = a.heads;
  d.kvHeads = a.kvHeads;
  d.headDim = a.headDim;
  // The grid covers the longest sequence the bound allows.
  d.maxSeqQ = a.maxSeqLen > 0 ? std::min(a.maxSeqLen, shape.tokensQ) : shape.tokensQ;
  d.maxSeqK = a.maxSeqLen > 0 ? std::min(a.maxSeqLen, shape.tokensK) : shape.tokensK;
  d.causal = a.causal;
  d.scale = a.scale;
  d.dropoutRate = a.dropoutRate;
  d.strideQ = a.strideQ;
  d.strideK = a.strideK;
  d.strideV = a.strideV;
  d.strideO = a.strideO;
  if (a.backward) {
    d.strideDO = a.strideDO;
    d.strideDQ = a.strideDQ;
    d.strideDK = a.strideDK;
    d.strideDV = a.strideDV;
  }
  return d;
}

std::string keyOf(const cudnn::AttentionGraphDesc &d) {
  std::ostringstream k;
  k << d.backward << d.bf16 << ' ' << d.batch << ' ' << d.heads << ' ' << d.kvHeads << ' '
    << d.headDim << ' ' << d.maxSeqQ << ' ' << d.maxSeqK << ' ' << d.causal << ' ' << d.scale
    << ' ' << d.dropoutRate << ' ' << d.strideQ << ' ' << d.strideK << ' ' << d.strideV << ' '
    << d.strideO << ' ' << d.strideDO << ' ' << d.strideDQ << ' ' << d.strideDK << ' '
    << d.strideDV;
  return k.str();
}

} // namespace

struct CudnnAttention::Impl {
  cudnnHandle_t handle = nullptr;
  cudaLibrary_t library = nullptr;
  cudaKernel_t arraysKernel = nullptr;
  std::map<std::string, std::unique_ptr<cudnn::AttentionPlan>> plans;
  std::map<std::string, std::string> refusals; ///< key -> cuDNN's reason
  uint64_t workspaceNeeded = 0, arraysNeeded = 0;
  DeviceBuffer workspace, arrays;

  ~Impl() {
    if (handle)
      cudnnDestroy(handle);
    if (library)
      cudaLibraryUnload(library);
  }
};

CudnnAttention::CudnnAttention() : impl(std::make_unique<Impl>()) {
  if (cudnnStatus_t s = cudnnCreate(&impl->handle); s != CUDNN_STATUS_SUCCESS) {
    impl->handle = nullptr;
    throw RuntimeError(std::string("cuDNN attention: cudnnCreate: ") + cudnnGetErrorString(s));
  }
  std::vector<jit::CompiledKernel> compiled = jit::compileKernels(
      {{"ls2c_cudnn_attention_arrays", kArraysSource}}, jit::CompileOptions{});
  check(cudaLibraryLoadData(&impl->library, compiled.front().cubin.data(), nullptr, nullptr, 0,
                            nullptr, nullptr, 0),
        "cudaLibraryLoadData");
  check(cudaLibraryGetKernel(&impl->arraysKernel, impl->library, "ls2c_cudnn_attention_arrays"),
        "cudaLibraryGetKernel");
}

CudnnAttention::~CudnnAttention() = default;

bool CudnnAttention::prepare(const Attention &a, const AttentionCallShape &shape,
                             std::string &whyNot) {
  if (shape.batch <= 0 || shape.tokensQ <= 0)
    return true; // no query rows: nothing to compute, run() enqueues nothing
  if (shape.tokensK <= 0) {
    // Queries that see no key get output 0 and lse -inf (the ls2 op's
    // rule); the generated kernels write them.
    whyNot = "no keys in the call";
    return false;
  }
  // Element offsets are i32 (cuDNN's ragged offsets).
  int64_t widest = std::max({a.strideQ, a.strideK, a.strideV, a.strideO, a.strideDO, a.strideDQ,
                             a.strideDK, a.strideDV, static_cast<int64_t>(a.heads)});
  if (std::max(shape.tokensQ, shape.tokensK) * widest > std::numeric_limits<int32_t>::max()) {
    whyNot = "element offsets beyond 2^31 (cuDNN's ragged offsets are i32 here)";
    return false;
  }
  cudnn::AttentionGraphDesc d = describe(a, shape);
  std::string key = keyOf(d);
  if (impl->plans.count(key))
    return true;
  if (auto it = impl->refusals.find(key); it != impl->refusals.end()) {
    whyNot = it->second;
    return false;
  }
  std::unique_ptr<cudnn::AttentionPlan> plan =
      cudnn::AttentionPlan::build(impl->handle, d, whyNot);
  if (!plan) {
    impl->refusals.emplace(key, whyNot);
    return false;
  }
  impl->workspaceNeeded =
      std::max(impl->workspaceNeeded, static_cast<uint64_t>(plan->workspaceBytes()));
  impl->arraysNeeded = std::max(impl->arraysNeeded, arraysBytes(shape.batch));
  impl->plans.emplace(std::move(key), std::move(plan));
  return true;
}

uint64_t CudnnAttention::deviceBytesNeeded() const {
  return impl->workspaceNeeded + impl->arraysNeeded;
}

std::string CudnnAttention::deviceKey() const {
  int device = 0;
  cudaDeviceProp props{};
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  return std::string(props.name) + " sm_" + std::to_string(props.major) +
         std::to_string(props.minor) + " cuDNN " + std::to_string(cudnnGetVersion());
}

std::string CudnnAttention::choicesPath() {
  if (const char *env = std::getenv("LS2C_ATTENTION_CHOICES"))
    return std::string(env) == "off" ? "" : env;
  std::string dir = jit::defaultProgramCacheDir();
  return dir.empty() ? "" : dir + "/attention-choices.json";
}

void CudnnAttention::reserve() {
  if (impl->workspace.size() < impl->workspaceNeeded || !impl->workspace.data())
    impl->workspace = DeviceBuffer(impl->workspaceNeeded, "the cuDNN attention workspace");
  if (impl->arrays.size() < impl->arraysNeeded || !impl->arrays.data())
    impl->arrays = DeviceBuffer(std::max<uint64_t>(impl->arraysNeeded, 16),
                                "the cuDNN attention sequence arrays");
}

void CudnnAttention::run(const Attention &a, const AttentionCallShape &shape,
                         const AttentionCallPointers &p, cudaStream_t stream) {
  if (shape.batch <= 0 || shape.tokensQ <= 0)
    return;
  cudnn::AttentionGraphDesc d = describe(a, shape);
  auto it = impl->plans.find(keyOf(d));
  if (it == impl->plans.end())
    throw RuntimeError("cuDNN attention: a call that was not prepared");
  if (impl->workspace.size() < static_cast<uint64_t>(it->second->workspaceBytes()) ||
      impl->arrays.size() < arraysBytes(shape.batch))
    throw RuntimeError("cuDNN attention: its buffers were not reserved for this call");

  auto *philox = static_cast<long long *>(impl->arrays.data());
  long long batch = shape.batch, sQ = a.strideQ, sK = a.strideK, sV = a.strideV,
            sO = a.strideO, heads = a.heads, sDO = a.strideDO, sDQ = a.strideDQ,
            sDK = a.strideDK, sDV = a.strideDV, dropoutStream = a.stream;
  const void *seed = a.dropoutRate > 0 ? p.seed : nullptr;
  const void *offset = a.dropoutRate > 0 ? p.offset : nullptr;
  long long lengthPitch = roundUp4(batch), n = roundUp4(batch + 1);
  void *args[] = {const_cast<void **>(&p.cuSeqlensQ), const_cast<void **>(&p.cuSeqlensK),
                  &batch, &sQ, &sK, &sV, &sO, &heads, &sDO, &sDQ, &sDK, &sDV,
                  const_cast<void **>(&seed), const_cast<void **>(&offset), &dropoutStream,
                  &philox, &lengthPitch, &n};
  unsigned blocks = static_cast<unsigned>(std::min<int64_t>((batch + 256) / 256, 1024));
  check(cudaLaunchKernel(reinterpret_cast<const void *>(impl->arraysKernel), dim3(blocks),
                         dim3(256), args, 0, stream),
        "launching the sequence-array kernel");

  auto *lengths = reinterpret_cast<int32_t *>(philox + 2);
  int32_t *offsets = lengths + 2 * lengthPitch;
  cudnn::AttentionDeviceArrays arrays;
  arrays.q = p.q;
  arrays.k = p.k;
  arrays.v = p.v;
  arrays.o = p.out;
  arrays.stats = static_cast<float *>(p.lse);
  arrays.seqLenQ = lengths;
  arrays.seqLenK = lengths + lengthPitch;
  arrays.offsetQ = offsets;
  arrays.offsetK = offsets + n;
  arrays.offsetV = offsets + 2 * n;
  arrays.offsetO = offsets + 3 * n;
  arrays.offsetStats = offsets + 4 * n;
  if (a.backward) {
    arrays.dO = p.dout;
    arrays.dQ = p.dq;
    arrays.dK = p.dk;
    arrays.dV = p.dv;
    arrays.offsetDO = offsets + 5 * n;
    arrays.offsetDQ = offsets + 6 * n;
    arrays.offsetDK = offsets + 7 * n;
    arrays.offsetDV = offsets + 8 * n;
  }
  if (a.dropoutRate > 0) {
    arrays.dropoutSeed = reinterpret_cast<int64_t *>(philox);
    arrays.dropoutOffset = reinterpret_cast<int64_t *>(philox + 1);
  }
  if (cudnnStatus_t s = cudnnSetStream(impl->handle, stream); s != CUDNN_STATUS_SUCCESS)
    throw RuntimeError(std::string("cuDNN attention: cudnnSetStream: ") +
                       cudnnGetErrorString(s));
  if (cudnnStatus_t s = it->second->execute(impl->handle, arrays, impl->workspace.data());
      s != CUDNN_STATUS_SUCCESS) {
    char last[1024] = "";
    cudnnGetLastErrorString(last, sizeof last);
    throw RuntimeError(std::string("cuDNN attention ") + (a.backward ? "backward" : "forward") +
                       ": cudnnBackendExecute: " + cudnnGetErrorString(s) +
                       (last[0] ? std::string(" (") + last + ")" : std::string()));
  }
}

#endif // LS2C_HAVE_CUDNN

} // namespace ls2c::runtime
