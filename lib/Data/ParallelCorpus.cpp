//===- ParallelCorpus.cpp - source/target pairs for translation -----------===//
#include "ls2c/Data/ParallelCorpus.h"

#include "GzipMessage.h"
#include "OpenRegularFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <sys/stat.h>

#ifdef LS2C_HAVE_ZLIB
#include <zlib.h>
#endif

namespace ls2c {

namespace {
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

#ifdef LS2C_HAVE_ZLIB
std::string readGzip(const std::string &path) {
  struct stat st;
  int fd = openRegularFile(path, 0, st);
  gzFile f = gzdopen(fd, "rb"); // owns fd from here
  if (!f) {
    ::close(fd);
    throw DataError(path + ": cannot open: " + std::strerror(errno));
  }
  std::string out;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    int n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int err = 0;
      std::string msg = gzipMessage(gzerror(f, &err));
      gzclose(f);
      throw DataError(path + ": truncated or corrupt gzip data: " + msg);
    }
    if (n == 0)
      break;
    out.append(chunk.data(), static_cast<size_t>(n));
  }
  // zlib reads data without a gzip header as it is: a .gz that is not gzip
  // is refused rather than read as text.
  if (gzdirect(f) && !out.empty()) {
    gzclose(f);
    throw DataError(path + ": not gzip data (no gzip header), though named .gz");
  }
  int err = Z_OK;
  std::string msg = gzipMessage(gzerror(f, &err));
  int closed = gzclose(f);
  // A stream cut short reads as a clean end, except for these two codes.
  if ((err != Z_OK && err != Z_STREAM_END) || closed == Z_BUF_ERROR)
    throw DataError(path + ": truncated or corrupt gzip data" +
                    (err != Z_OK && err != Z_STREAM_END ? ": " + msg : ""));
  if (closed != Z_OK)
    throw DataError(path + ": gzip read error (zlib code " +
                    std::to_string(closed) + ")");
  return out;
}
#endif
} // namespace

std::string readFileBytes(const std::string &path) {
  // Gzip by name or, as `ls2c tokenize` reads it, by its magic bytes.
  if (endsWith(path, ".gz") || fileStartsWith(path, "\x1f\x8b")) {
#ifdef LS2C_HAVE_ZLIB
    return readGzip(path);
#else
    struct stat st;
    ::close(openRegularFile(path, 0, st)); // a missing file says so first
    throw DataError(path + ": ls2c was built without zlib, so .gz files "
                           "cannot be read (decompress it first)");
#endif
  }
  return readRegularFile(path);
}

std::vector<std::string> readTextLines(const std::string &path,
                                       int64_t maxLines) {
  std::string text = readFileBytes(path);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size() &&
         (maxLines < 0 || static_cast<int64_t>(lines.size()) < maxLines)) {
    size_t end = text.find('\n', start);
    size_t next = end == std::string::npos ? text.size() : end + 1;
    if (end == std::string::npos)
      end = text.size();
    if (end > start && text[end - 1] == '\r')
      --end;
    lines.emplace_back(text, start, end - start);
    start = next;
  }
  return lines;
}

ParallelText loadParallelText(const std::string &sourcePath,
                              const std::string &targetPath, int64_t maxLines) {
  ParallelText t;
  t.source = readTextLines(sourcePath, maxLines);
  t.target = readTextLines(targetPath, maxLines);
  if (t.source.size() != t.target.size())
    throw DataError(sourcePath + " has " + std::to_string(t.source.size()) +
                    " lines but " + targetPath + " has " +
                    std::to_string(t.target.size()) +
                    ": a parallel corpus needs one target line per source line");
  return t;
}

TokenBatch TranslationBatch::source() const {
  TokenBatch b;
  b.input_ids = src_ids;
  b.position_ids = src_position_ids;
  b.cu_seqlens = src_cu_seqlens;
  return b;
}

TokenBatch TranslationBatch::target() const {
  TokenBatch b;
  b.input_ids = tgt_ids;
  b.position_ids = tgt_position_ids;
  b.cu_seqlens = tgt_cu_seqlens;
  b.labels = labels;
  return b;
}

TranslationBatcher::TranslationBatcher(const std::vector<TokenSpan> &source,
                                       const std::vector<TokenSpan> &target,
                                       const BucketingOptions &options,
                                       const TranslationSpecials &specials,
                                       uint64_t seed)
    : source(source), target(target), specials(specials) {
  if (source.size() != target.size())
    throw std::invalid_argument(
        "TranslationBatcher: " + std::to_string(source.size()) +
        " source sentences but " + std::to_string(target.size()) + " targets");
  std::vector<int64_t> srcLen, tgtLen;
  srcLen.reserve(source.size());
  tgtLen.reserve(target.size());
  for (size_t i = 0; i < source.size(); ++i) {
    srcLen.push_back(source[i].size + 1); // + EOS
    tgtLen.push_back(target[i].size + 1); // START + ... / ... + EOS
  }
  batchPlan = planPairBatches(srcLen, tgtLen, options, seed);
}

TranslationBatch TranslationBatcher::batch(int64_t epoch, int64_t k) const {
  if (k < 0 || k >= numBatches())
    throw std::out_of_range("TranslationBatcher: batch " + std::to_string(k) +
                            " of " + std::to_string(numBatches()));
  return planBatch(batchPlan.epochOrder(epoch)[static_cast<size_t>(k)]);
}

TranslationBatch TranslationBatcher::planBatch(int64_t b) const {
  if (b < 0 || b >= numBatches())
    throw std::out_of_range("TranslationBatcher: plan batch " +
                            std::to_string(b) + " of " +
                            std::to_string(numBatches()));
  TranslationBatch out;
  out.src_cu_seqlens.push_back(0);
  out.tgt_cu_seqlens.push_back(0);
  for (int64_t i : batchPlan.batches[static_cast<size_t>(b)]) {
    auto u = static_cast<size_t>(i);
    // Lengths as planned (specials included, clipped to the max).
    int64_t ns = batchPlan.lengths[u] - 1, nt = batchPlan.targetLengths[u] - 1;
    const TokenSpan &x = source[u], &y = target[u];
    for (int64_t j = 0; j < ns; ++j)
      out.src_ids.push_back(x[j]);
    out.src_ids.push_back(specials.eos);
    for (int64_t j = 0; j <= ns; ++j)
      out.src_position_ids.push_back(static_cast<int32_t>(j));
    out.src_cu_seqlens.push_back(static_cast<int32_t>(out.src_ids.size()));

    out.tgt_ids.push_back(specials.decoderStart);
    for (int64_t j = 0; j < nt; ++j) {
      out.tgt_ids.push_back(y[j]);
      out.labels.push_back(y[j]);
    }
    out.labels.push_back(specials.eos);
    for (int64_t j = 0; j <= nt; ++j)
      out.tgt_position_ids.push_back(static_cast<int32_t>(j));
    out.tgt_cu_seqlens.push_back(static_cast<int32_t>(out.tgt_ids.size()));
    out.indices.push_back(i);
  }
  return out;
}

} // namespace ls2c
