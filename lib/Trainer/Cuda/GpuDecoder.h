//===- GpuDecoder.h - incremental decoding on the GPU runtime -------------===//
//
// The IncrementalDecoder of a decoding bundle (`ls2c compile MODEL.json
// --program=decode --arch=sm_90 -o DECODE.ls2b`): its @encode and @decode
// run through runtime::Executor (CUDA graphs replayed for repeated shapes).
// The KV cache lives on the device, per layer a key and a value buffer of
// [hypotheses x max_seq_len, kv_heads, head_dim] in the compute dtype
// (hypothesis h's rows from h x max_seq_len, as ReferenceDecoder lays it
// out). After each step the present keys and values are appended: one
// strided copy per tensor when every hypothesis took one token at the same
// length (beam search's steps), else one copy per hypothesis in a batch
// (cudaMemcpyBatchAsync). select() gathers the parents' rows into a second
// cache (the two alternate). No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRAINER_CUDA_GPUDECODER_H
#define LS2C_LIB_TRAINER_CUDA_GPUDECODER_H

#include "ls2c/Generation/DecodingState.h"
#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Runtime/Executor.h"

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace ls2c::tools {

class GpuDecoder : public generation::IncrementalDecoder {
public:
  /// `program`: a decoding bundle of `desc` (its @decode, and @encode for
  /// encoder_decoder); `parameters` by reference name (loadModelWeights),
  /// uploaded in each argument's dtype. Throws runtime::RuntimeError (a
  /// bundle without those functions, a missing parameter, no device memory).
  GpuDecoder(runtime::Program program, const ModelDescription &desc,
             const std::map<std::string, reference::HostTensor> &parameters, bool graphs);
  ~GpuDecoder() override;

  int64_t vocabSize() const override { return desc.vocab; }
  int64_t maxLength() const override { return desc.max_seq_len; }
  int64_t maxBatchTokens() const override { return desc.max_batch_tokens; }
  bool hasSource() const override { return encodeFn != nullptr; }
  void encode(const std::vector<std::vector<int32_t>> &sources) override;
  void start(const std::vector<int32_t> &sourceOf) override;
  std::vector<float> step(const std::vector<std::vector<int32_t>> &tokens) override;
  void select(const std::vector<int32_t> &parent) override;

private:
  /// Uploads i32 `values` into input `name` of `f` (its buffer allocated
  /// once at the bound, so calls repeat their pointers).
  void setInput(const runtime::Function &f, const std::string &name,
                const std::vector<int32_t> &values);
  /// Makes cache set `set` hold at least `hypotheses` slots.
  void reserve(int set, size_t hypotheses);
  /// Copies, on the stream, count bytes each: dst[i] <- src[i].
  void copies(const std::vector<void *> &dst, const std::vector<const void *> &src,
              const std::vector<size_t> &bytes);

  ModelDescription desc;
  runtime::Executor executor;
  const runtime::Function *encodeFn = nullptr, *decodeFn = nullptr;
  cudaStream_t stream = nullptr;
  size_t rowBytes = 0; ///< one cached token of one layer's keys
  /// Inputs and results by "function/name"; @encode's results are the
  /// memory @decode reads, until the next encode().
  std::map<std::string, runtime::DeviceTensor> parameters, inputs, results;
  generation::DecodingState book;
  /// Two cache sets, each 2 x layers buffers (layer i: 2i keys, 2i+1 values).
  std::vector<runtime::DeviceBuffer> cache[2];
  size_t slots[2] = {0, 0};
  int current = 0;
  /// Stands for the cache arguments in makeCall; step() binds the caches.
  runtime::DeviceTensor placeholder;
};

} // namespace ls2c::tools

#endif // LS2C_LIB_TRAINER_CUDA_GPUDECODER_H
