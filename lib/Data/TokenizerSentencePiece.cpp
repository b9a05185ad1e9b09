//===- TokenizerSentencePiece.cpp - sentencepiece models: train, load, run ===//
//
// Everything here goes through libsentencepiece's public C++ API
// (sentencepiece_trainer.h, sentencepiece_processor.h). Training reads the
// lines from an in-memory iterator and returns the serialized model, which
// the caller writes atomically; nothing is written beside it.
//
//===----------------------------------------------------------------------===//
#include "TokenizerInternal.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <thread>
#include <unordered_map>

namespace ls2c {

namespace {

namespace spm = sentencepiece;

/// Reads a varint at `p`; false if it runs past `end`.
bool readVarint(const unsigned char *&p, const unsigned char *end, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    unsigned char b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80))
      return true;
  }
  return false;
}

/// Finds field `field` of the protobuf message [p, end): its bytes (wire type
/// 2) or its varint value (wire type 0). False if absent or malformed.
bool findField(const unsigned char *p, const unsigned char *end, uint64_t field,
               std::string_view *bytes, uint64_t *value) {
  while (p < end) {
    uint64_t key, v;
    if (!readVarint(p, end, key))
      return false;
    uint64_t wire = key & 7;
    if (wire == 0) {
      if (!readVarint(p, end, v))
        return false;
      if ((key >> 3) == field && value) {
        *value = v;
        return true;
      }
    } else if (wire == 2) {
      if (!readVarint(p, end, v) || v > static_cast<uint64_t>(end - p))
        return false;
      if ((key >> 3) == field && bytes) {
        *bytes = std::string_view(reinterpret_cast<const char *>(p), v);
        return true;
      }
      p += v;
    } else if (wire == 1 || wire == 5) {
      size_t n = wire == 1 ? 8 : 4;
      if (static_cast<size_t>(end - p) < n)
        return false;
      p += n;
    } else {
      return false;
    }
  }
  return false;
}

/// ModelProto.trainer_spec (field 2).model_type (field 3), as a name.
std::string modelTypeOf(const std::string &proto) {
  auto *b = reinterpret_cast<const unsigned char *>(proto.data());
  std::string_view spec;
  uint64_t type = 0;
  if (!findField(b, b + proto.size(), 2, &spec, nullptr))
    return "sentencepiece";
  auto *s = reinterpret_cast<const unsigned char *>(spec.data());
  if (!findField(s, s + spec.size(), 3, nullptr, &type))
    return "unigram"; // the proto's default
  switch (type) {
  case 1:
    return "unigram";
  case 2:
    return "bpe";
  case 3:
    return "word";
  case 4:
    return "char-sentencepiece";
  default:
    return "sentencepiece";
  }
}

/// A Status's message without sentencepiece's source location and failed
/// condition ("Internal: ./src/x.cc(660) [cond] "), which name its code,
/// not the user's input; "" when nothing else is left.
std::string statusText(const spm::util::Status &st) {
  std::string m = st.ToString();
  size_t source = m.find(".cc(");
  size_t close = source == std::string::npos ? std::string::npos : m.find(") ", source);
  if (close != std::string::npos) {
    size_t rest = close + 2;
    if (rest < m.size() && m[rest] == '[') {
      size_t end = m.find("] ", rest);
      rest = end == std::string::npos ? m.size() : end + 2;
    }
    m = m.substr(std::min(rest, m.size()));
  }
  while (!m.empty() && m.back() == ' ')
    m.pop_back();
  return m;
}

uint32_t specialId(int id) {
  return id < 0 ? kNoTokenId : static_cast<uint32_t>(id);
}

class SentencePieceTokenizer final : public Tokenizer {
public:
  SentencePieceTokenizer(std::string bytes, const std::string &name) {
    spm::util::Status st = processor.LoadFromSerializedProto(bytes);
    if (!st.ok())
      throw DataError(name + ": not a sentencepiece model or character vocabulary" +
                      (statusText(st).empty() ? std::string() : ": " + statusText(st)));
    if (processor.GetPieceSize() <= 0)
      throw DataError(name + ": the sentencepiece model has no pieces");
    kind = modelTypeOf(bytes);
    model = std::move(bytes);
  }

  std::string type() const override { return kind; }
  uint32_t vocabSize() const override {
    return static_cast<uint32_t>(processor.GetPieceSize());
  }

  void encode(std::string_view text, std::vector<uint32_t> &ids) const override {
    std::vector<int> out;
    spm::util::Status st = processor.Encode(text, &out);
    if (!st.ok())
      throw DataError("sentencepiece cannot encode the text: " + statusText(st));
    for (int id : out)
      ids.push_back(static_cast<uint32_t>(id));
  }

  std::string decode(const uint32_t *ids, size_t count) const override {
    std::vector<int> in;
    in.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (ids[i] >= vocabSize())
        throw DataError("id " + std::to_string(ids[i]) +
                        " is beyond the sentencepiece vocabulary of " +
                        std::to_string(vocabSize()) + " ids");
      in.push_back(static_cast<int>(ids[i]));
    }
    std::string text;
    spm::util::Status st = processor.Decode(in, &text);
    if (!st.ok())
      throw DataError("sentencepiece cannot decode: " + statusText(st));
    return text;
  }

  uint32_t lineEndId() const override { return eosId(); }
  bool lineEndIsNewline() const override { return false; }
  uint32_t bosId() const override { return specialId(processor.bos_id()); }
  uint32_t eosId() const override { return specialId(processor.eos_id()); }
  uint32_t unkId() const override { return specialId(processor.unk_id()); }
  uint32_t padId() const override { return specialId(processor.pad_id()); }

private:
  spm::SentencePieceProcessor processor;
  std::string kind;
};

/// Hands the lines to the trainer one by one.
class LineIterator final : public spm::SentenceIterator {
public:
  explicit LineIterator(const std::vector<std::string> &lines) : lines(lines) {}
  bool done() const override { return i >= lines.size(); }
  void Next() override { ++i; }
  const std::string &value() const override { return lines[i]; }
  spm::util::Status status() const override { return spm::util::Status(); }

private:
  const std::vector<std::string> &lines;
  size_t i = 0;
};

} // namespace

std::unique_ptr<Tokenizer> detail::loadSentencePiece(std::string bytes,
                                                     const std::string &name) {
  return std::make_unique<SentencePieceTokenizer>(std::move(bytes), name);
}

std::unique_ptr<Tokenizer> trainSentencePiece(const std::vector<std::string> &lines,
                                              const SentencePieceOptions &o,
                                              const std::string &corpusName) {
  if (o.modelType != "bpe" && o.modelType != "unigram")
    throw DataError("tokenizer type '" + o.modelType +
                    "' is not bpe or unigram");
  if (o.vocabSize < 4)
    throw DataError("vocabulary size " + std::to_string(o.vocabSize) +
                    " is too small (at least 4: <unk>, <s>, </s> and a piece)");
  if (!(o.characterCoverage > 0 && o.characterCoverage <= 1))
    throw DataError("character coverage " + std::to_string(o.characterCoverage) +
                    " must be in (0, 1]");
  size_t longest = 0, nonEmpty = 0;
  for (const std::string &l : lines) {
    longest = std::max(longest, l.size());
    nonEmpty += !l.empty();
  }
  if (nonEmpty == 0)
    throw DataError(corpusName + ": no text to train a tokenizer on");
  int threads = o.threads > 0 ? o.threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool identity = o.normalization == "identity";
  std::unordered_map<std::string, std::string> args = {
      {"model_type", o.modelType},
      {"vocab_size", std::to_string(o.vocabSize)},
      {"character_coverage", std::to_string(o.characterCoverage)},
      {"byte_fallback", o.byteFallback ? "true" : "false"},
      {"normalization_rule_name", o.normalization},
      {"remove_extra_whitespaces", identity ? "false" : "true"},
      // Lines longer than the trainer's default 4192 bytes would be skipped
      // in silence; every line counts.
      {"max_sentence_length", std::to_string(std::max<size_t>(4192, longest + 1))},
      {"num_threads", std::to_string(threads)},
      // Errors come back as a Status; the trainer's log stays quiet.
      {"minloglevel", "3"},
  };
  spm::SetRandomGeneratorSeed(o.seed);
  LineIterator it(lines);
  std::string proto;
  spm::util::Status st = spm::SentencePieceTrainer::Train(args, &it, &proto);
  if (!st.ok()) {
    std::string why = statusText(st);
    // The trainer's own advice names its flags; say it in ls2c's terms.
    size_t at = why.find("Vocabulary size is smaller than required_chars. ");
    if (at != std::string::npos) {
      std::string counts = why.substr(at + 48); // "30 vs 329. Increase ..."
      size_t vs = counts.find(" vs ");
      std::string needed =
          vs == std::string::npos ? "more" : counts.substr(vs + 4, counts.find('.') - vs - 4);
      throw DataError(corpusName + ": a " + o.modelType + " vocabulary of " +
                      std::to_string(o.vocabSize) + " ids cannot hold the " + needed +
                      " pieces the corpus needs (its characters, the special ids" +
                      (o.byteFallback ? " and 256 byte-fallback pieces" : "") +
                      "): raise --vocab-size" +
                      (o.byteFallback ? ", add --no-byte-fallback" : "") +
                      " or lower --character-coverage");
    }
    throw DataError(corpusName + ": training a " + o.modelType + " tokenizer with " +
                    std::to_string(o.vocabSize) + " ids failed: " + why);
  }
  return std::make_unique<SentencePieceTokenizer>(std::move(proto),
                                                  corpusName + " (trained model)");
}

} // namespace ls2c
