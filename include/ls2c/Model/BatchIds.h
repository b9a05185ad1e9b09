//===- BatchIds.h - the values a train step's integer inputs may hold -----===//
//
// Token ids, token types, positions and labels index a table (an embedding,
// the positions) or the loss's classes. Neither backend reads outside them:
// the CPU interpreter refuses such an id, the generated GPU gather kernel
// would read past its table. So the tools that take a user's batch
// (ls2c step, ls2c-gpu-step) check every such input here first, by the names
// the frontend gives them (lib/Frontend/Build*.cpp). The ranges follow the
// graph: test/unit/BatchIdsTest.cpp compares them with the tables and
// classes of every preset's @accumulate_gradients. No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_MODEL_BATCHIDS_H
#define LS2C_MODEL_BATCHIDS_H

#include "ls2c/Model/ModelDescription.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ls2c {

/// Values in [0, limit), and `ignore` where the loss skips a label.
struct BatchIdRange {
  int64_t limit = 0;
  std::optional<int64_t> ignore;
  std::string what; ///< the table or classes, e.g. "the vocabulary (vocab 50257)"
};

/// The ranges of the integer batch inputs of `desc`'s train step, by input
/// name: input_ids, src_ids, tgt_ids, token_type_ids, position_ids,
/// src_position_ids, tgt_position_ids and labels, as the architecture has
/// them (cu_seqlens are offsets, not ids: not here).
std::map<std::string, BatchIdRange> batchIdRanges(const ModelDescription &desc);

/// "" when every value of input `name` lies in `ranges` (or `name` has no
/// range), else "batch input 'NAME' element K is V, outside [0, N) (WHAT)"
/// (plus " and not the ignore index I" for labels).
std::string checkBatchIds(const std::map<std::string, BatchIdRange> &ranges,
                          const std::string &name, const std::vector<int64_t> &values);

/// "" when the labels that carry a loss (every value but -100) number at
/// most the description's max_predictions (or it has none), else "batch
/// input 'labels' has N labelled tokens (not -100), more than
/// max_predictions P ...": the gathered masked-LM head holds P rows, so
/// such a batch is refused before anything runs rather than losing labels.
std::string checkLabelCount(const ModelDescription &desc, const std::vector<int64_t> &labels);

/// "" when no sequence that offsets `cu` (input `name`, e.g. cu_seqlens)
/// delimits is longer than `maxSeqLen` tokens, else "batch input 'NAME':
/// sequence S has L tokens, more than max_seq_len M". Decreasing offsets
/// are left to the caller's own check.
std::string checkSequenceLengths(const std::string &name, const std::vector<int64_t> &cu,
                                 int64_t maxSeqLen);

} // namespace ls2c

#endif // LS2C_MODEL_BATCHIDS_H
