//===- BleuCommand.cpp - ls2c bleu HYP REF [REF...] -----------------------===//
#include "Commands.h"

#include "ls2c/Data/ParallelCorpus.h" // readTextLines, DataError
#include "ls2c/Eval/Bleu.h"
#include "ls2c/Support/Utf8.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <stdexcept>

namespace ls2c::cli {

namespace {

constexpr const char *kBleuUsage = "usage: ls2c bleu HYPOTHESES REFERENCES... [--json]";

constexpr const char *kBleuHelp = R"(
Corpus BLEU of a file of hypotheses (one sentence per line) against one or
more reference files (line i of each is a reference for hypothesis i), as
sacreBLEU computes it by default: BLEU-4, tokenizer 13a, "exp" smoothing,
case kept (include/ls2c/Eval/Bleu.h). Files are UTF-8 text, plain or .gz.
An empty reference line is a reference of no tokens (as in sacreBLEU 2.x).

Prints sacreBLEU's score line:
  BLEU = 34.12 65.3/40.1/27.0/18.9 (BP = 1.000 ratio = 1.012 hyp_len = 1234 ref_len = 1219)
  (score, 1- to 4-gram precisions in percent, brevity penalty, length ratio,
  hypothesis and reference lengths in tokens)

  --json    one JSON object instead: score, precisions, counts (matched
            n-grams), totals (hypothesis n-grams), bp, ratio, hyp_len,
            ref_len, nrefs, tok, smooth, case and the score line (verbose)
)";

// The lines of `path`, each checked to be UTF-8 (file, line and column named).
std::vector<std::string> readLines(const std::string &path) {
  std::vector<std::string> lines = readTextLines(path);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    size_t pos = findInvalidUtf8(line);
    if (pos == std::string_view::npos)
      continue;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(line[pos])));
    throw DataError(path + ":" + std::to_string(i + 1) + ":" +
                    std::to_string(pos + 1) + ": invalid UTF-8 (byte " + byte +
                    " does not start a well-formed sequence)");
  }
  return lines;
}

} // namespace

int runBleu(const std::vector<std::string> &args) {
  bool json = false;
  std::vector<std::string> paths;
  for (const std::string &a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kBleuUsage, kBleuHelp);
      return kExitOk;
    }
    if (a == "--json")
      json = true;
    else if (a.size() > 1 && a[0] == '-')
      return usageError("unknown option '" + a + "' for bleu");
    else
      paths.push_back(a);
  }
  if (paths.size() < 2)
    return usageError(kBleuUsage);
  const std::string &hypPath = paths.front();
  std::vector<std::string> refPaths(paths.begin() + 1, paths.end());

  std::vector<std::string> hypotheses;
  std::vector<std::vector<std::string>> references;
  try {
    hypotheses = readLines(hypPath);
    for (const std::string &path : refPaths)
      references.push_back(readLines(path));
  } catch (const DataError &e) {
    return usageError(e.what());
  }
  if (hypotheses.empty())
    return usageError(hypPath + ": no lines to score");
  for (size_t r = 0; r < refPaths.size(); ++r)
    if (references[r].size() != hypotheses.size())
      return usageError(refPaths[r] + " has " +
                        std::to_string(references[r].size()) + " lines but " +
                        hypPath + " has " + std::to_string(hypotheses.size()) +
                        ": every hypothesis needs one reference line");

  eval::BleuScore s;
  try {
    s = eval::corpusBleu(hypotheses, references);
  } catch (const std::invalid_argument &e) {
    return usageError(e.what()); // checked above already
  }
  if (!json) {
    std::printf("%s\n", s.format().c_str());
    return kExitOk;
  }
  nlohmann::json j;
  j["name"] = "BLEU";
  j["score"] = s.score;
  j["precisions"] = s.precisions;
  j["counts"] = s.matches;
  j["totals"] = s.totals;
  j["bp"] = s.brevityPenalty;
  j["ratio"] = s.ratio;
  j["hyp_len"] = s.hypLen;
  j["ref_len"] = s.refLen;
  j["nrefs"] = s.numRefs;
  j["tok"] = "13a";
  j["smooth"] = "exp";
  j["case"] = "mixed";
  j["verbose"] = s.format();
  std::printf("%s\n", j.dump(1).c_str());
  return kExitOk;
}

} // namespace ls2c::cli
