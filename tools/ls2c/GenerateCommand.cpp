//===- GenerateCommand.cpp - ls2c generate: greedy or beam search ---------===//
#include "Commands.h"

#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/ParallelCorpus.h" // readTextLines, DataError
#include "ls2c/Eval/Bleu.h"
#include "ls2c/Frontend/Decoding.h"
#include "ls2c/Generation/GenerationText.h"
#include "ls2c/Generation/ModelWeights.h"
#include "ls2c/Generation/ReferenceDecoder.h"
#include "ls2c/Generation/Search.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Utf8.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <optional>

namespace ls2c::cli {

namespace {

using namespace ls2c::generation;

constexpr const char *kGenerateUsage =
    "usage: ls2c generate MODEL.json --checkpoint FILE (--tokenizer MODEL | --text CORPUS)\n"
    "                     (--prompt TEXT | --input FILE) [-o FILE] [--beam K]\n"
    "                     [--max-new-tokens N] [--length-penalty A] [--nbest N]\n"
    "                     [--target-tokenizer MODEL] [--reference FILE...] [--json]";

constexpr const char *kGenerateHelp = R"(
Generates with a trained decoder (GPT) or encoder_decoder (translation)
model on the CPU reference backend: the model runs one step at a time over a
KV cache (include/ls2c/Frontend/Decoding.h), with greedy search (--beam 1,
the default) or beam search as fairseq does it (include/ls2c/Generation/
Search.h).

  --checkpoint FILE   parameters: a checkpoint of ls2c train or ls2c-gpu-train
                      (safetensors), or a file of the trainable parameters
  --tokenizer MODEL   the tokenizer the model trained with (ls2c tokenize:
                      sentencepiece or characters); for encoder_decoder the
                      source side's
  --target-tokenizer MODEL  the target side's, when it differs
  --text CORPUS       a decoder trained on a raw text file (ls2c train --data
                      input.txt): its characters are the vocabulary
  --prompt TEXT       one input; --input FILE: one input per line (decoders:
                      prompts; encoder_decoder: source sentences)
  -o FILE             write the outputs there, one line each (atomically);
                      default: stdout
  --beam K            hypotheses kept per input (default 1: greedy)
  --max-new-tokens N  generated tokens per input at most, an end token
                      included (default 200; also bounded by max_seq_len)
  --length-penalty A  scores are log p / length^A (default 1)
  --nbest N           write the N best hypotheses per input (default 1)
  --reference FILE    (repeatable) score the outputs with corpus BLEU as
                      sacreBLEU does by default; the score line goes to stderr
  --json              one JSON object per output line instead of text: input,
                      output, tokens, log_prob, score, ended

Decoders generate until --max-new-tokens (they have no end token); a
translation ends at </s>. Exit status: 0 success, 2 bad input.
)";

struct Options {
  std::string model, checkpoint, tokenizer, targetTokenizer, text, input, output;
  std::optional<std::string> prompt;
  std::vector<std::string> references;
  SearchOptions search;
  int64_t nbest = 1;
  bool json = false;
};

/// Parses an integer or number option; returns an error message or "".
std::string parseNumber(const std::string &name, const std::string &value, double &out) {
  try {
    size_t used = 0;
    out = std::stod(value, &used);
    if (used != value.size())
      throw std::invalid_argument("trailing text");
  } catch (const std::exception &) {
    return name + " needs a number, got '" + value + "'";
  }
  return "";
}

std::string parse(const std::vector<std::string> &args, Options &o) {
  auto value = [&](size_t &i) -> std::optional<std::string> {
    if (i + 1 >= args.size())
      return std::nullopt;
    return args[++i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string *target = nullptr;
    if (a == "--checkpoint")
      target = &o.checkpoint;
    else if (a == "--tokenizer")
      target = &o.tokenizer;
    else if (a == "--target-tokenizer")
      target = &o.targetTokenizer;
    else if (a == "--text")
      target = &o.text;
    else if (a == "--input")
      target = &o.input;
    else if (a == "-o" || a == "--output")
      target = &o.output;
    if (target) {
      auto v = value(i);
      if (!v)
        return a + " needs a value";
      *target = *v;
      continue;
    }
    if (a == "--prompt" || a == "--reference") {
      auto v = value(i);
      if (!v)
        return a + " needs a value";
      if (a == "--prompt")
        o.prompt = *v;
      else
        o.references.push_back(*v);
      continue;
    }
    if (a == "--beam" || a == "--max-new-tokens" || a == "--length-penalty" || a == "--nbest") {
      auto v = value(i);
      if (!v)
        return a + " needs a value";
      double x = 0;
      if (std::string e = parseNumber(a, *v, x); !e.empty())
        return e;
      if (a == "--length-penalty") {
        o.search.lengthPenalty = x;
        continue;
      }
      if (x != static_cast<double>(static_cast<int64_t>(x)) || x < 1)
        return a + " needs an integer >= 1, got '" + *v + "'";
      auto n = static_cast<int64_t>(x);
      (a == "--beam" ? o.search.beam : a == "--nbest" ? o.nbest : o.search.maxNewTokens) = n;
      continue;
    }
    if (a == "--json") {
      o.json = true;
      continue;
    }
    if (a.size() > 1 && a[0] == '-')
      return "unknown option '" + a + "' for generate";
    if (!o.model.empty())
      return "more than one model description ('" + o.model + "' and '" + a + "')";
    o.model = a;
  }
  if (o.model.empty())
    return kGenerateUsage;
  if (o.checkpoint.empty())
    return "no --checkpoint: generation needs the trained parameters";
  if (o.tokenizer.empty() == o.text.empty())
    return "give one of --tokenizer MODEL (ls2c tokenize) or --text CORPUS (a decoder "
           "trained on a raw text file)";
  if (o.prompt.has_value() == !o.input.empty())
    return "give one of --prompt TEXT or --input FILE";
  if (o.nbest > o.search.beam)
    return "--nbest " + std::to_string(o.nbest) + " exceeds --beam " +
           std::to_string(o.search.beam) + ": beam search keeps only that many";
  return "";
}

/// The lines of `path`, each checked to be UTF-8 (file, line and column named).
std::vector<std::string> readInputLines(const std::string &path) {
  std::vector<std::string> lines = readTextLines(path);
  for (size_t i = 0; i < lines.size(); ++i)
    if (size_t pos = findInvalidUtf8(lines[i]); pos != std::string::npos)
      throw DataError(path + ":" + std::to_string(i + 1) + ":" + std::to_string(pos + 1) +
                      ": invalid UTF-8");
  return lines;
}

} // namespace

int runGenerate(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kGenerateUsage, kGenerateHelp);
      return kExitOk;
    }
  Options o;
  if (std::string e = parse(args, o); !e.empty())
    return usageError(e);
  ModelDescription desc;
  try {
    desc = loadModelDescription(o.model);
  } catch (const std::exception &e) {
    return usageError(e.what());
  }
  if (!canGenerate(desc))
    return usageError(o.model + ": generation needs a decoder or encoder_decoder model, not " +
                      std::string(toString(desc.architecture)));
  try {
    std::vector<std::string> inputs =
        o.prompt ? std::vector<std::string>{*o.prompt} : readInputLines(o.input);
    if (inputs.empty())
      return usageError(o.input + ": holds no lines to generate from");
    std::vector<std::vector<std::string>> references;
    for (const std::string &r : o.references) {
      references.push_back(readInputLines(r));
      if (references.back().size() != inputs.size())
        return usageError(r + " has " + std::to_string(references.back().size()) +
                          " lines but there are " + std::to_string(inputs.size()) +
                          " inputs: every output needs one reference line");
    }
    std::optional<GenerationText> text;
    if (!o.text.empty()) {
      text.emplace(GenerationText::fromCharCorpus(desc, o.text));
    } else {
      std::unique_ptr<Tokenizer> target;
      if (!o.targetTokenizer.empty())
        target = loadTokenizer(o.targetTokenizer);
      text.emplace(desc, loadTokenizer(o.tokenizer), std::move(target));
    }
    text->setSpecials(o.search);
    const std::string where = o.prompt ? std::string("--prompt") : o.input;
    std::vector<std::vector<int32_t>> prompts, sources;
    for (size_t i = 0; i < inputs.size(); ++i) {
      try {
        prompts.push_back(text->prompt(inputs[i]));
        if (text->hasSource())
          sources.push_back(text->source(inputs[i]));
      } catch (const GenerationError &e) {
        throw GenerationError(where + ":" + std::to_string(i + 1) + ": " + e.what());
      }
    }
    ReferenceDecoder decoder(desc, loadModelWeights(o.checkpoint, desc));
    auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<Hypothesis>> results;
    try {
      results = generate(decoder, prompts, sources, o.search);
    } catch (const GenerationError &e) {
      throw GenerationError(where + ": " + e.what());
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::string out;
    std::vector<std::string> best;
    uint64_t generated = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      for (size_t k = 0; k < results[i].size() && static_cast<int64_t>(k) < o.nbest; ++k) {
        const Hypothesis &h = results[i][k];
        std::string line = text->text(h.tokens);
        if (k == 0)
          best.push_back(line);
        if (o.json) {
          nlohmann::json j = {{"input", i + 1},        {"rank", k + 1},
                              {"output", line},        {"tokens", h.tokens},
                              {"log_prob", h.logProb}, {"score", h.score},
                              {"ended", h.ended}};
          out += j.dump() + "\n";
        } else {
          out += line + "\n";
        }
      }
      if (!results[i].empty())
        generated += results[i][0].tokens.size() + (results[i][0].ended ? 1 : 0);
      if (results[i].empty())
        best.emplace_back();
    }
    if (o.output.empty())
      std::fputs(out.c_str(), stdout);
    else
      writeFileAtomically(o.output, out);
    std::fprintf(stderr, "ls2c generate: %zu inputs, beam %lld, %.2f s, %.1f tokens/s (best hypotheses)\n",
                 inputs.size(), static_cast<long long>(o.search.beam), seconds,
                 seconds > 0 ? static_cast<double>(generated) / seconds : 0.0);
    if (!references.empty()) {
      eval::BleuScore s = eval::corpusBleu(best, references);
      std::fprintf(stderr, "%s\n", s.format().c_str());
    }
  } catch (const GenerationError &e) {
    return usageError(e.what());
  } catch (const DataError &e) {
    return usageError(e.what());
  } catch (const FileWriteError &e) {
    return usageError(e.what());
  }
  return kExitOk;
}

} // namespace ls2c::cli
