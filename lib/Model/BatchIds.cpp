//===- BatchIds.cpp - the values a train step's integer inputs may hold ---===//
#include "ls2c/Model/BatchIds.h"

#include <algorithm>

namespace ls2c {

std::map<std::string, BatchIdRange> batchIdRanges(const ModelDescription &d) {
  std::map<std::string, BatchIdRange> r;
  auto table = [](int64_t rows, const std::string &what) {
    return BatchIdRange{rows, std::nullopt, what + " " + std::to_string(rows) + ")"};
  };
  const BatchIdRange positions = table(d.max_seq_len, "the positions (max_seq_len");
  const BatchIdRange vocab = table(d.vocab, "the vocabulary (vocab");
  switch (d.architecture) {
  case Architecture::Encoder:
    r["input_ids"] = vocab;
    r["token_type_ids"] = table(d.type_vocab_size, "the token types (type_vocab_size");
    r["position_ids"] = positions;
    r["labels"] = {d.vocab, -100, "the classes (vocab " + std::to_string(d.vocab) + ")"};
    break;
  case Architecture::Decoder:
  case Architecture::Llama:
    r["input_ids"] = vocab;
    r["position_ids"] = positions;
    r["labels"] = {d.vocab, -100, "the classes (vocab " + std::to_string(d.vocab) + ")"};
    break;
  case Architecture::EncoderDecoder:
    r["src_ids"] = table(d.src_vocab, "the source vocabulary (src_vocab");
    r["src_position_ids"] = positions;
    r["tgt_ids"] = vocab;
    r["tgt_position_ids"] = positions;
    // Padding carries no loss (fairseq's criterion).
    r["labels"] = {d.vocab, d.padding_idx >= 0 ? d.padding_idx : -100,
                   "the classes (vocab " + std::to_string(d.vocab) + ")"};
    break;
  case Architecture::ViT:
    r["labels"] = {d.num_classes, -100,
                   "the classes (num_classes " + std::to_string(d.num_classes) + ")"};
    break;
  }
  return r;
}

std::string checkBatchIds(const std::map<std::string, BatchIdRange> &ranges,
                          const std::string &name, const std::vector<int64_t> &values) {
  auto it = ranges.find(name);
  if (it == ranges.end())
    return "";
  const BatchIdRange &r = it->second;
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t v = values[k];
    if ((v >= 0 && v < r.limit) || (r.ignore && v == *r.ignore))
      continue;
    return "batch input '" + name + "' element " + std::to_string(k) + " is " +
           std::to_string(v) + ", outside [0, " + std::to_string(r.limit) + ") (" + r.what + ")" +
           (r.ignore ? " and not the ignore index " + std::to_string(*r.ignore) : "");
  }
  return "";
}

std::string checkLabelCount(const ModelDescription &desc, const std::vector<int64_t> &labels) {
  if (desc.max_predictions <= 0)
    return "";
  const int64_t ignore = batchIdRanges(desc).at("labels").ignore.value_or(-100);
  const int64_t labelled =
      static_cast<int64_t>(std::count_if(labels.begin(), labels.end(),
                                         [&](int64_t v) { return v != ignore; }));
  if (labelled <= desc.max_predictions)
    return "";
  return "batch input 'labels' has " + std::to_string(labelled) + " labelled tokens (not " +
         std::to_string(ignore) + "), more than max_predictions " +
         std::to_string(desc.max_predictions) +
         " (the masked-LM head's rows); raise max_predictions in the description or "
         "label fewer tokens";
}

std::string checkSequenceLengths(const std::string &name, const std::vector<int64_t> &cu,
                                 int64_t maxSeqLen) {
  for (size_t s = 1; s < cu.size(); ++s) {
    if (cu[s] <= cu[s - 1])
      continue;
    // In uint64: no overflow whatever the int64 values.
    const uint64_t length = static_cast<uint64_t>(cu[s]) - static_cast<uint64_t>(cu[s - 1]);
    if (length > static_cast<uint64_t>(maxSeqLen))
      return "batch input '" + name + "': sequence " + std::to_string(s - 1) + " has " +
             std::to_string(length) + " tokens, more than max_seq_len " +
             std::to_string(maxSeqLen);
  }
  return "";
}

} // namespace ls2c
