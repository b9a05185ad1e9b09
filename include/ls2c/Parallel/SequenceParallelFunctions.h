//===- SequenceParallelFunctions.h - the functions of a sequence-parallel program ===//
//
// The functions `ls2c compile --program=sequence-parallel` puts in a bundle
// (ls2c/Frontend/SequenceParallelModule.h builds them and says what each
// does) and ls2c-seq-parallel runs: named once here, MLIR-free, for both.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_PARALLEL_SEQUENCEPARALLELFUNCTIONS_H
#define LS2C_PARALLEL_SEQUENCEPARALLELFUNCTIONS_H

#include <string>
#include <vector>

namespace ls2c::parallel {

/// In the order a program lists them.
inline const std::vector<std::string> &sequenceParallelFunctions() {
  static const std::vector<std::string> names = {
      "attention_block_diagonal", "attention_block", "attention_block_grad_diagonal",
      "attention_block_grad",     "merge_attention", "accumulate",
      "round"};
  return names;
}

} // namespace ls2c::parallel

#endif // LS2C_PARALLEL_SEQUENCEPARALLELFUNCTIONS_H
