//===- ReferenceDecoder.h - the CPU backend of incremental decoding -------===//
//
// Runs the decoding module (ls2c/Frontend/Decoding.h) in the reference
// interpreter (F32 precision: each result rounded to its IR type, as the
// CPU trainer does). The KV cache holds, per layer, keys and values
// [hypotheses * maxLength, kv_heads, head_dim]: hypothesis h's rows start at
// h * maxLength. select() copies the parents' rows into a new cache.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_REFERENCEDECODER_H
#define LS2C_GENERATION_REFERENCEDECODER_H

#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"

#include <map>
#include <memory>
#include <string>

namespace ls2c::generation {

class ReferenceDecoder : public IncrementalDecoder {
public:
  /// `parameters`: every parameter of `desc` by its reference name
  /// (ParameterLayout), in the model's shapes, any float type (converted to
  /// the compute dtype). Throws GenerationError for an architecture that
  /// does not generate or a missing or misshapen parameter.
  /// With `compiled`, the module first goes through the compile pipeline
  /// (decompose, fuse, plan buffers: what the GPU runs) and the interpreter
  /// runs its fusion groups on the planned arena.
  ReferenceDecoder(const ModelDescription &desc,
                   const std::map<std::string, reference::HostTensor> &parameters,
                   bool compiled = false);
  ~ReferenceDecoder() override;

  int64_t vocabSize() const override;
  int64_t maxLength() const override;
  int64_t maxBatchTokens() const override;
  bool hasSource() const override;
  void encode(const std::vector<std::vector<int32_t>> &sources) override;
  void start(const std::vector<int32_t> &sourceOf) override;
  std::vector<float> step(const std::vector<std::vector<int32_t>> &tokens) override;
  void select(const std::vector<int32_t> &parent) override;

private:
  struct State;
  std::unique_ptr<State> state;
};

} // namespace ls2c::generation

#endif // LS2C_GENERATION_REFERENCEDECODER_H
