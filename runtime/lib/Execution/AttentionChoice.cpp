//===- AttentionChoice.cpp - which backend runs each attention shape ------===//

#include "ls2c/Runtime/AttentionChoice.h"

#include "ChoicesFile.h"

#include "ls2c/Support/Hex.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

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

std::vector<int64_t> attentionPartners(const Function &f) {
  const size_t n = f.steps.size();
  std::vector<int64_t> partner(n, -1);
  auto attention = [&](size_t i, bool backward) {
    return f.steps[i].kind == Step::Kind::Attention && f.steps[i].attention.backward == backward;
  };
  for (size_t b = 0; b < n; ++b) {
    if (!attention(b, true))
      continue;
    for (size_t a = b; a-- > 0;)
      if (attention(a, false) && f.steps[a].attention.lse == f.steps[b].attention.lse) {
        partner[b] = static_cast<int64_t>(a);
        partner[a] = static_cast<int64_t>(b);
        break;
      }
  }
  for (size_t a = n; a-- > 0;) {
    if (!attention(a, false) || partner[a] >= 0 || f.steps[a].attention.dropoutRate <= 0)
      continue;
    for (size_t later = a + 1; later < n; ++later)
      if (attention(later, false) && partner[later] >= 0 &&
          f.steps[later].attention.stream == f.steps[a].attention.stream) {
        partner[a] = partner[later];
        break;
      }
  }
  return partner;
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
                                          AttentionBackend b, bool imposed, bool loaded) {
  auto [it, inserted] = chosen.emplace(key, b);
  if (inserted)
    made.push_back({key, t, b, imposed, loaded});
  return it->second;
}

std::string attentionChoiceKey(const std::string &device, const Attention &a,
                               uint64_t kernelsHash) {
  std::ostringstream k;
  k << device << " | " << attentionShapeKey(a) << " | kernels x" << kKernelsInStepFactor
    << " in the step | kernels " << hex64(kernelsHash);
  return k.str();
}

size_t AttentionChoices::loadFile(const std::string &path) {
  std::optional<nlohmann::json> choices = readChoicesFile(path);
  if (!choices)
    return 0;
  auto fail = [&](const std::string &where, const std::string &rule) -> size_t {
    throw std::runtime_error(path + ": " + where + ": " + rule);
  };
  std::vector<AttentionDecision> read;
  for (size_t i = 0; i < choices->size(); ++i) {
    const nlohmann::json &c = (*choices)[i];
    std::string at = "choices[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains("key") || !c["key"].is_string())
      return fail(at + ".key", "must be a string");
    std::optional<AttentionBackend> b =
        c.contains("backend") && c["backend"].is_string()
            ? parseAttentionBackend(c["backend"].get<std::string>())
            : std::nullopt;
    if (!b || *b == AttentionBackend::Auto)
      return fail(at + ".backend", "must be \"kernels\" or \"cudnn\"");
    AttentionDecision d;
    d.key = c["key"].get<std::string>();
    d.backend = *b;
    for (auto [field, ms] : {std::pair<const char *, double *>{"cudnn_ms", &d.timing.cudnnMs},
                             {"kernels_ms", &d.timing.kernelsMs}}) {
      if (!c.contains(field) || !c[field].is_number() || !(c[field].get<double>() >= 0))
        return fail(at + "." + field, "must be a number >= 0");
      *ms = c[field].get<double>();
    }
    read.push_back(std::move(d));
  }
  size_t added = 0;
  for (const AttentionDecision &d : read)
    if (!chosen.count(d.key)) {
      record(d.key, d.timing, d.backend, false, true);
      ++added;
    }
  return added;
}

void AttentionChoices::saveFile(const std::string &path) const {
  nlohmann::json choices = nlohmann::json::array();
  for (const AttentionDecision &d : made) {
    // A refusal (timed as infinitely slow) is not saved: cuDNN may take the
    // shape at another batch.
    if (!std::isfinite(d.timing.cudnnMs))
      continue;
    choices.push_back({{"key", d.key},
                       {"backend", attentionBackendName(d.backend)},
                       {"cudnn_ms", d.timing.cudnnMs},
                       {"kernels_ms", d.timing.kernelsMs}});
  }
  writeChoicesFile(path, choices);
}

namespace {

/// The faster backend by `cudnnMs` against `kernelsMs`, the kernels' time
/// counted with kKernelsInStepFactor (cuDNN on a tie).
AttentionBackend faster(double cudnnMs, double kernelsMs) {
  return cudnnMs <= kKernelsInStepFactor * kernelsMs ? AttentionBackend::Cudnn
                                                     : AttentionBackend::Kernels;
}

} // namespace

AttentionBackend AttentionChoices::decide(const std::string &key, AttentionTiming t) {
  return record(key, t, faster(t.cudnnMs, t.kernelsMs), false);
}

AttentionBackend AttentionChoices::decidePair(const std::string &forwardKey,
                                              AttentionTiming forward,
                                              const std::string &backwardKey,
                                              AttentionTiming backward) {
  std::optional<AttentionBackend> f = find(forwardKey), b = find(backwardKey);
  AttentionBackend both =
      f ? *f
      : b ? *b
          : faster(forward.cudnnMs + backward.cudnnMs, forward.kernelsMs + backward.kernelsMs);
  record(forwardKey, forward, both, false);
  record(backwardKey, backward, both, false);
  return both;
}

AttentionBackend AttentionChoices::impose(const std::string &key, const std::string &partnerKey) {
  std::optional<AttentionBackend> p = find(partnerKey);
  // Imposed by a refusal (timed as infinitely slow): a consequence of this
  // batch, kept out of a choices file as the refusal itself is (saveFile).
  AttentionTiming t;
  for (const AttentionDecision &d : made)
    if (d.key == partnerKey && !std::isfinite(d.timing.cudnnMs))
      t.cudnnMs = INFINITY;
  return record(key, t, p ? *p : AttentionBackend::Kernels, true);
}

} // namespace ls2c::runtime
