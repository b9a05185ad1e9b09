//===- AttentionChoice.cpp - which backend runs each attention shape ------===//

#include "ls2c/Runtime/AttentionChoice.h"

#include <sstream>

namespace ls2c::runtime {

const char *attentionBackendName(AttentionBackend b) {
  switch (b) {
  case AttentionBackend::Kernels:
    return "kernels";
  case AttentionBackend::Cudnn:
    return "cudnn";
  case AttentionBackend::Auto:
    return "auto";
  }
  return "?";
}

std::optional<AttentionBackend> parseAttentionBackend(const std::string &name) {
  for (AttentionBackend b :
       {AttentionBackend::Kernels, AttentionBackend::Cudnn, AttentionBackend::Auto})
    if (name == attentionBackendName(b))
      return b;
  return std::nullopt;
}

std::string attentionShapeKey(const Attention &a) {
  std::ostringstream k;
  k << (a.backward ? "backward" : "forward") << ' ' << dtypeName(a.dtype) << " heads "
    << a.heads << '/' << a.kvHeads << " dim " << a.headDim << (a.causal ? " causal" : "")
    << " dropout " << a.dropoutRate << " seq " << a.maxSeqLen << " strides " << a.strideQ
    << ',' << a.strideK << ',' << a.strideV << ',' << a.strideO;
  if (a.backward)
    k << ',' << a.strideDO << ',' << a.strideDQ << ',' << a.strideDK << ',' << a.strideDV;
  return k.str();
}

std::optional<AttentionBackend> AttentionChoices::find(const std::string &key) const {
  auto it = chosen.find(key);
  if (it == chosen.end())
    return std::nullopt;
  return it->second;
}

AttentionBackend AttentionChoices::record(const std::string &key, AttentionTiming t,
                                          AttentionBackend b, bool imposed) {
  auto [it, inserted] = chosen.emplace(key, b);
  if (inserted)
    made.push_back({key, t, b, imposed});
  return it->second;
}

AttentionBackend AttentionChoices::decide(const std::string &key, AttentionTiming t) {
  return record(key, t,
                t.cudnnMs <= t.kernelsMs ? AttentionBackend::Cudnn : AttentionBackend::Kernels,
                false);
}

AttentionBackend AttentionChoices::decidePair(const std::string &forwardKey,
                                              AttentionTiming forward,
                                              const std::string &backwardKey,
                                              AttentionTiming backward) {
  std::optional<AttentionBackend> f = find(forwardKey), b = find(backwardKey);
  AttentionBackend both =
      f ? *f
      : b ? *b
          : (forward.cudnnMs + backward.cudnnMs <= forward.kernelsMs + backward.kernelsMs
                 ? AttentionBackend::Cudnn
                 : AttentionBackend::Kernels);
  record(forwardKey, forward, both, false);
  record(backwardKey, backward, both, false);
  return both;
}

AttentionBackend AttentionChoices::impose(const std::string &key, const std::string &partnerKey) {
  std::optional<AttentionBackend> p = find(partnerKey);
  return record(key, {}, p ? *p : AttentionBackend::Kernels, true);
}

} // namespace ls2c::runtime
