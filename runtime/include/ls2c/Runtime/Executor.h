//===- Executor.h - run a compiled Program's functions on a GPU -----------===//
//
// The thin executor (docs/architecture.md, "Program and bundles"): one
// device arena of Program::arenaBytes (kernel scratch zeroed once) plus the
// cuBLASLt workspace, the kernels' cubins for the device's architecture
// loaded through the driver API, and per call the steps of one function in
// order on one stream: kernel launches (grid from the launch's sizes,
// skipped when there is no work), cuBLASLt GEMMs, copies. The caller owns
// the argument and result buffers (device memory, each at least its
// TensorSpec's bytes at maxShape) and says the arguments' actual shapes,
// which decide every dynamic size. By default each distinct call is
// captured once into a CUDA graph and replayed after (setGraphs). No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_EXECUTOR_H
#define LS2C_RUNTIME_EXECUTOR_H

#include "ls2c/Runtime/CudnnAttention.h"
#include "ls2c/Runtime/GraphCache.h"
#include "ls2c/Runtime/Program.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ls2c::runtime {

/// A refusal or a CUDA failure: what was asked, what the device said.
class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Device memory freed with the object.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (at least 1); throws RuntimeError naming `what`, the
  /// bytes asked and the bytes free when the device has too little.
  DeviceBuffer(size_t bytes, const std::string &what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *data() const { return ptr; }
  size_t size() const { return bytes; }
  void upload(const void *host, size_t n, size_t offset = 0);
  void download(void *host, size_t n, size_t offset = 0) const;
  void fill(int byte);

private:
  void *ptr = nullptr;
  size_t bytes = 0;
};

class Executor {
public:
  /// Takes the program (its cubins for the current device's architecture,
  /// "sm_<major><minor>", must be there), loads the kernels and allocates
  /// the arena. Throws RuntimeError.
  explicit Executor(Program program);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Program &program() const { return prog; }
  /// The function called `name`; throws RuntimeError when there is none.
  const Function &function(const std::string &name) const;

  struct Call {
    std::vector<void *> arguments;                   ///< device pointers
    std::vector<std::vector<int64_t>> argumentShapes; ///< actual dims
    std::vector<void *> results;                     ///< device pointers
  };
  /// Runs function `name` on `stream` (enqueued; the caller synchronizes).
  /// Checks first that every argument has its spec's rank, static dims and
  /// dynamic dims within maxShape (refused before any launch, graphs or
  /// not). With graphs on, a failure while capturing throws RuntimeError
  /// naming the function and the step (setGraphs).
  void run(const std::string &name, const Call &call, cudaStream_t stream = nullptr);

  /// The architecture the kernels were loaded for.
  const std::string &arch() const { return archName; }

  /// With timing on, run() records a CUDA event around every step (which
  /// adds a little time per launch); stepTimes() then gives, after the
  /// stream has finished, each step of the last run with its label (the
  /// kernel's name, "gemm MxNxK", "copy") and its time in milliseconds.
  void setTiming(bool on) { timing = on; }
  std::vector<std::pair<std::string, float>> stepTimes() const;

  /// CUDA graphs, on by default: they replace a launch per step (hundreds
  /// per train step) by one graph launch. A call is keyed by the function,
  /// every argument's shape and every argument's and result's device
  /// pointer (GraphKey), all that its launches bake in; argument contents
  /// may change freely. A key's first run is captured (on the executor's
  /// own stream, so `stream` may be the legacy default stream),
  /// instantiated and launched on `stream`; later runs of it replay the
  /// graph after the same shape checks. At most kMaxGraphs graphs are kept,
  /// the least recently used destroyed first. Runs go step by step instead
  /// with timing on (per-step events) and when a run may grow a GEMM helper
  /// buffer (GraphCache.h; the first train step). Capture refuses host
  /// synchronization and allocation: a step doing either throws
  /// RuntimeError naming it, and graphs off runs it as before. Turning
  /// graphs off destroys the cached ones.
  void setGraphs(bool on);
  bool graphs() const { return graphsOn; }

  /// Work a caller adds between steps (data parallelism's bucket
  /// all-reduces, GradientReduceSchedule.h): called after each step `step`
  /// (an index into Function::steps, skipped launches included) of every run
  /// that is enqueued step by step or captured, with the stream the steps
  /// go to (while capturing, the capture stream: what the hook enqueues
  /// there, or on streams it joins to it with events, becomes part of the
  /// graph and is replayed with it, so the hook is not called on replays).
  /// It must join any stream it forks back to `stream` before the call's
  /// last step returns. Setting or clearing it drops the cached graphs.
  using StepHook = std::function<void(const Function &function, const Call &call, size_t step,
                                      cudaStream_t stream)>;
  void setStepHook(StepHook hook);

  /// Runs in place of every Attention step and its fallback launches
  /// (sequence parallelism's hook, tools/ls2c-seq-parallel): called when
  /// the step is enqueued, with the step (shapes, strides, causal), the
  /// call's sizes, its resolved pointers and the stream; what it enqueues
  /// on that stream, or joins back to it with events, is the step. An
  /// attention the compiler gave no Attention step (fp32 programs, shapes
  /// outside Attention steps' rules, ProgramBuilder.cpp) still runs its
  /// kernels: a caller that must see every attention counts the steps.
  /// The pointers include the dropout seed and offset when the step has
  /// dropout. Setting it turns CUDA graphs off (the hook may wait on other
  /// ranks); an empty function clears it and leaves graphs off
  /// (setGraphs(true) turns them back on).
  using AttentionOverride =
      std::function<void(const Attention &step, const AttentionCallShape &shape,
                         const AttentionCallPointers &pointers, cudaStream_t stream)>;
  void setAttentionOverride(AttentionOverride hook);

  /// Which implementation runs the Attention steps (CudnnAttention.h):
  /// Kernels (the default) runs each step's fallback, the generated
  /// kernels; Cudnn runs cuDNN's fused attention wherever it accepts the
  /// call and the fallback elsewhere (a refusal is reported once on
  /// stderr); with Cudnn a call with dropout that cuDNN refuses throws
  /// RuntimeError: its forward and backward must draw the same mask, so
  /// both run on one backend. Auto times both backends on the first call
  /// of each shape (AttentionChoice.h; that run goes step by step, its
  /// outputs are the kernels'; each timed run starts from an L2 cache
  /// flushed with a transient buffer of twice its size) and keeps the
  /// faster, reporting each choice on stderr and saving it for later
  /// processes (the file CudnnAttention::choicesPath names; read when Auto
  /// is set); dropout partners are decided together. Cudnn and Auto throw
  /// RuntimeError when this build has no cuDNN and the program has Attention
  /// steps (fp32 programs have none). Changing it drops the cached graphs.
  void setAttentionBackend(AttentionBackend backend);
  AttentionBackend attentionBackend() const { return attention; }
  GraphStats graphStats() const;
  static constexpr size_t kMaxGraphs = 16;

private:
  struct Impl;
  /// run() without turning a capture failure into an error naming the step.
  void enqueue(const std::string &name, const Call &call, cudaStream_t callerStream);
  Program prog;
  std::string archName;
  bool timing = false;
  bool graphsOn = true;
  StepHook stepHook;
  AttentionOverride attentionOverride;
  AttentionBackend attention = AttentionBackend::Kernels;
  std::unique_ptr<Impl> impl;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_EXECUTOR_H
