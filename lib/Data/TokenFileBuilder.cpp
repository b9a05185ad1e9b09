//===- TokenFileBuilder.cpp - corpus files to token file sequences ---------===//
#include "ls2c/Data/TokenFileBuilder.h"

#include <algorithm>

namespace ls2c {

namespace {

std::string where(const CorpusLineReader &r) {
  return r.path() + ":" + std::to_string(r.lineNumber());
}

} // namespace

TokenFileContents tokenizeCorpus(const std::vector<std::string> &paths,
                                 const Tokenizer &tok, const TokenizeOptions &o,
                                 TokenizeReport &report) {
  report = TokenizeReport();
  TokenFileContents out;
  out.vocabSize = tok.vocabSize();
  out.flags = o.concatenate ? kTokenFileConcatenated : 0;
  out.bosId = tok.bosId();
  out.eosId = tok.eosId();
  out.unkId = tok.unkId();
  out.padId = tok.padId();
  out.tokenizerFingerprint = tok.fingerprint();
  const uint32_t lineEnd = tok.lineEndId();
  if (o.concatenate && lineEnd == kNoTokenId)
    throw DataError(std::string("the ") + tok.type() + " tokenizer has no " +
                    (tok.lineEndIsNewline() ? "'\\n' in its vocabulary"
                                            : "end-of-sentence id (</s>)") +
                    " to end lines with in a concatenated stream");

  std::vector<uint32_t> ids;
  std::string line;
  for (const std::string &path : paths) {
    CorpusLineReader reader(path, o.invalidUtf8);
    ++report.files;
    const uint64_t tokensBefore = out.tokens.size();
    uint64_t textTokens = 0, skippedLong = 0;
    while (reader.next(line)) {
      ++report.lines;
      ids.clear();
      try {
        tok.encode(line, ids);
      } catch (const DataError &e) {
        throw DataError(where(reader) + ": " + e.what());
      }
      for (uint32_t id : ids)
        report.unknownTokens += id == out.unkId;
      report.longestLineTokens =
          std::max<uint64_t>(report.longestLineTokens, ids.size());
      if (ids.empty())
        ++report.emptyLines;

      if (o.concatenate) {
        textTokens += ids.size();
        out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
        if (!tok.lineEndIsNewline() || reader.lineHadNewline())
          out.tokens.push_back(lineEnd);
        continue;
      }
      if (ids.empty() && !o.keepEmptyLines)
        continue;
      if (o.maxSeqLen && ids.size() > o.maxSeqLen) {
        if (report.firstLongLine.empty())
          report.firstLongLine =
              where(reader) + ", " + std::to_string(ids.size()) + " tokens";
        if (o.longLines == LongLinePolicy::Skip) {
          ++report.skippedLongLines;
          ++skippedLong;
          continue;
        }
        ++report.truncatedLines;
        report.truncatedTokens += ids.size() - o.maxSeqLen;
        ids.resize(o.maxSeqLen);
      }
      textTokens += ids.size();
      out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
      out.offsets.push_back(out.tokens.size());
    }
    if (reader.replacements()) {
      if (report.firstReplacedLine.empty())
        report.firstReplacedLine =
            path + ":" + std::to_string(reader.firstReplacedLine());
      report.replacedUtf8 += reader.replacements();
    }

    if (textTokens == 0)
      throw DataError(path + ": no tokens in its " +
                      std::to_string(reader.lineNumber()) + " lines" +
                      (skippedLong ? " (" + std::to_string(skippedLong) +
                                         " skipped as longer than " +
                                         std::to_string(o.maxSeqLen) + " tokens)"
                                   : std::string(" (all blank)")));
    const uint64_t fileTokens = out.tokens.size() - tokensBefore;
    if (o.concatenate) {
      uint64_t len = o.maxSeqLen ? o.maxSeqLen : fileTokens;
      for (uint64_t at = tokensBefore + len; at < out.tokens.size(); at += len)
        out.offsets.push_back(at);
      out.offsets.push_back(out.tokens.size());
    }
  }
  report.sequences = out.numSequences();
  report.tokens = out.tokens.size();
  return out;
}

} // namespace ls2c
