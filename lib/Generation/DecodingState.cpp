//===- DecodingState.cpp - sources, hypotheses and a step's inputs --------===//
#include "ls2c/Generation/DecodingState.h"

#include <string>

namespace ls2c::generation {

DecodingState::DecodingState(const ModelDescription &d, bool source)
    : desc(d), hasSource(source) {}

DecodingState::Sources DecodingState::encode(const std::vector<std::vector<int32_t>> &sources) {
  if (!hasSource)
    throw GenerationError(desc.name + ": a decoder model has no source to encode");
  Sources out;
  out.cuSeqlens = {0};
  memoryStart.clear();
  memoryLength.clear();
  for (const std::vector<int32_t> &src : sources) {
    memoryStart.push_back(static_cast<int32_t>(out.ids.size()));
    memoryLength.push_back(static_cast<int32_t>(src.size()));
    for (size_t j = 0; j < src.size(); ++j) {
      if (src[j] < 0 || src[j] >= desc.src_vocab)
        throw GenerationError("source id " + std::to_string(src[j]) + " is outside src_vocab " +
                              std::to_string(desc.src_vocab));
      out.ids.push_back(src[j]);
      out.positions.push_back(static_cast<int32_t>(j));
    }
    out.cuSeqlens.push_back(static_cast<int32_t>(out.ids.size()));
  }
  if (sources.empty() || static_cast<int64_t>(out.ids.size()) > desc.max_batch_tokens)
    throw GenerationError(desc.name + ": " + std::to_string(sources.size()) + " sources of " +
                          std::to_string(out.ids.size()) + " tokens; a batch holds 1 to " +
                          std::to_string(desc.max_batch_tokens) + " tokens");
  return out;
}

void DecodingState::start(const std::vector<int32_t> &sources) {
  if (sources.empty() || static_cast<int64_t>(sources.size()) > desc.max_batch_tokens)
    throw GenerationError(desc.name + ": " + std::to_string(sources.size()) +
                          " hypotheses; a step holds 1 to " +
                          std::to_string(desc.max_batch_tokens));
  if (hasSource)
    for (int32_t s : sources)
      if (s < 0 || static_cast<size_t>(s) >= memoryStart.size())
        throw GenerationError("hypothesis source " + std::to_string(s) + " was not encoded (" +
                              std::to_string(memoryStart.size()) + " sources)");
  sourceOf = sources;
  cachedLength.assign(sources.size(), 0);
}

DecodingState::Step DecodingState::step(const std::vector<std::vector<int32_t>> &tokens) const {
  const size_t n = sourceOf.size();
  if (tokens.size() != n)
    throw GenerationError(std::to_string(tokens.size()) + " token lists for " +
                          std::to_string(n) + " hypotheses");
  const int64_t slot = capacity();
  Step s;
  s.cuSeqlens = {0};
  for (size_t h = 0; h < n; ++h) {
    if (tokens[h].empty())
      throw GenerationError("hypothesis " + std::to_string(h) + " was fed no token");
    const int64_t holds = cachedLength[h] + static_cast<int64_t>(tokens[h].size());
    if (holds > slot)
      throw GenerationError("hypothesis " + std::to_string(h) + " would hold " +
                            std::to_string(holds) + " tokens, past max_seq_len " +
                            std::to_string(slot));
    for (size_t j = 0; j < tokens[h].size(); ++j) {
      if (tokens[h][j] < 0 || tokens[h][j] >= desc.vocab)
        throw GenerationError("id " + std::to_string(tokens[h][j]) +
                              " is outside the vocabulary [0, " + std::to_string(desc.vocab) +
                              ")");
      s.ids.push_back(tokens[h][j]);
      s.positions.push_back(cachedLength[h] + static_cast<int32_t>(j));
    }
    s.cuSeqlens.push_back(static_cast<int32_t>(s.ids.size()));
    s.cacheStarts.push_back(static_cast<int32_t>(static_cast<int64_t>(h) * slot));
    s.cacheLengths.push_back(cachedLength[h]);
    s.lockstep &= tokens[h].size() == 1 && cachedLength[h] == cachedLength[0];
    if (hasSource) {
      s.memoryStarts.push_back(memoryStart[static_cast<size_t>(sourceOf[h])]);
      s.memoryLengths.push_back(memoryLength[static_cast<size_t>(sourceOf[h])]);
    }
  }
  if (static_cast<int64_t>(s.ids.size()) > desc.max_batch_tokens)
    throw GenerationError(std::to_string(s.ids.size()) +
                          " tokens in one step, past max_batch_tokens " +
                          std::to_string(desc.max_batch_tokens));
  s.cacheStarts.push_back(static_cast<int32_t>(static_cast<int64_t>(n) * slot));
  if (hasSource)
    s.memoryStarts.push_back(0); // not read
  return s;
}

void DecodingState::advance(const std::vector<std::vector<int32_t>> &tokens) {
  for (size_t h = 0; h < cachedLength.size(); ++h)
    cachedLength[h] += static_cast<int32_t>(tokens[h].size());
}

void DecodingState::select(const std::vector<int32_t> &parent) {
  if (parent.empty() || static_cast<int64_t>(parent.size()) > desc.max_batch_tokens)
    throw GenerationError(std::to_string(parent.size()) + " hypotheses; a step holds 1 to " +
                          std::to_string(desc.max_batch_tokens));
  for (int32_t p : parent)
    if (p < 0 || static_cast<size_t>(p) >= sourceOf.size())
      throw GenerationError("parent " + std::to_string(p) + " is not one of the " +
                            std::to_string(sourceOf.size()) + " hypotheses");
  std::vector<int32_t> sources, cached;
  for (int32_t p : parent) {
    sources.push_back(sourceOf[static_cast<size_t>(p)]);
    cached.push_back(cachedLength[static_cast<size_t>(p)]);
  }
  sourceOf = std::move(sources);
  cachedLength = std::move(cached);
}

} // namespace ls2c::generation
