//===- GenerateDriver.cpp - options, inputs, outputs of generate ----------===//
#include "ls2c/Generation/GenerateDriver.h"

#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/ParallelCorpus.h" // readTextLines, DataError
#include "ls2c/Eval/Bleu.h"
#include "ls2c/Generation/GenerationText.h"
#include "ls2c/Generation/ModelWeights.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Utf8.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>

namespace ls2c::generation {

namespace {

/// Parses a number option; returns an error message or "".
std::string parseNumber(const std::string &name, const std::string &value, double &out) {
  try {
    size_t used = 0;
    out = std::stod(value, &used);
    if (used != value.size())
      throw std::invalid_argument("trailing text");
  } catch (const std::exception &) {
    return name + " needs a number, got '" + value + "'";
  }
  // Integers are cast to int64_t: keep them well inside its range.
  if (!(std::abs(out) < 1e15))
    return name + " is out of range: '" + value + "'";
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

std::string generateUsage(const std::string &command, const std::string &modelWhat, bool gpu) {
  std::string pad(command.size(), ' ');
  return "usage: " + command + " " + modelWhat +
         " --checkpoint FILE (--tokenizer MODEL | --text CORPUS)\n" + "       " + pad +
         " (--prompt TEXT | --input FILE) [-o FILE] [--beam K]\n" + "       " + pad +
         " [--max-new-tokens N] [--length-penalty A] [--nbest N]\n" + "       " + pad +
         " [--target-tokenizer MODEL] [--reference FILE...] [--json]" +
         (gpu ? " [--no-graphs]" : "\n       " + pad + " [--device auto|cpu|cuda] [--no-graphs]");
}

std::string generateHelp(bool gpu) {
  std::string text = R"(
Generates with a trained decoder (GPT), llama or encoder_decoder (translation)
model, one step at a time over a KV cache (include/ls2c/Frontend/
Decoding.h), with greedy search (--beam 1, the default) or beam search as
fairseq does it (include/ls2c/Generation/Search.h).

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
                      rank, output, tokens, log_prob, score, ended
)";
  if (!gpu)
    text += R"(  --device D          auto (default): on the GPU when ls2c-cuda.so loads and
                      sees a device (the decoding program compiled for it in
                      process), else on the CPU reference backend; cpu; cuda
)";
  text += R"(  --no-graphs         GPU: launch step by step instead of replaying CUDA graphs
)";
  text += R"(
Decoders generate until --max-new-tokens (they have no end token); a
translation ends at </s>. A line on stderr gives the inputs, the time and
tokens/s. Exit status: 0 success, 2 bad input.
)";
  return text;
}

std::string parseGenerateOptions(const std::vector<std::string> &args, GenerateOptions &o,
                                 bool gpu) {
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
    if (a == "--no-graphs") {
      o.graphs = false;
      continue;
    }
    if (!gpu && a == "--device") {
      auto v = value(i);
      if (!v)
        return a + " needs a value";
      if (*v != "auto" && *v != "cpu" && *v != "cuda")
        return "--device '" + *v + "' is not one of auto, cpu, cuda";
      o.device = *v;
      continue;
    }
    if (a.size() > 1 && a[0] == '-')
      return "unknown option '" + a + (gpu ? "'" : "' for generate");
    if (!o.model.empty())
      return "more than one model ('" + o.model + "' and '" + a + "')";
    o.model = a;
  }
  if (o.model.empty())
    return "no model given (see --help)";
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
  if (!(o.search.lengthPenalty >= 0.0) || !std::isfinite(o.search.lengthPenalty))
    return "--length-penalty must be finite and >= 0";
  if (o.prompt)
    if (size_t pos = findInvalidUtf8(*o.prompt); pos != std::string::npos)
      return "--prompt: column " + std::to_string(pos + 1) + ": invalid UTF-8";
  std::vector<FileOption> inputs = {{"the model", o.model},        {"--checkpoint", o.checkpoint},
                                    {"--tokenizer", o.tokenizer},  {"--target-tokenizer", o.targetTokenizer},
                                    {"--text", o.text},            {"--input", o.input}};
  for (const std::string &r : o.references)
    inputs.push_back({"--reference", r});
  return outputReplacesInput({{"-o", o.output}}, inputs);
}

int runGeneration(const GenerateOptions &o, const ModelDescription &desc,
                  const DecoderFactory &makeDecoder, const std::string &tool,
                  const std::string &command) {
  auto bad = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), message.c_str());
    return 2;
  };
  if (!isCausalLM(desc.architecture) && desc.architecture != Architecture::EncoderDecoder)
    return bad(o.model + ": generation needs a decoder, llama or encoder_decoder model, not " +
               std::string(toString(desc.architecture)));
  try {
    std::vector<std::string> inputs =
        o.prompt ? std::vector<std::string>{*o.prompt} : readInputLines(o.input);
    if (inputs.empty())
      return bad(o.input + ": holds no lines to generate from");
    std::vector<std::vector<std::string>> references;
    for (const std::string &r : o.references) {
      references.push_back(readInputLines(r));
      if (references.back().size() != inputs.size())
        return bad(r + " has " + std::to_string(references.back().size()) +
                   " lines but there are " + std::to_string(inputs.size()) +
                   " inputs: every output needs one reference line");
    }
    if (!o.targetTokenizer.empty() && desc.architecture != Architecture::EncoderDecoder)
      return bad("--target-tokenizer is for encoder_decoder models; " + o.model + " is " +
                 std::string(toString(desc.architecture)));
    std::optional<GenerationText> text;
    if (!o.text.empty()) {
      text.emplace(GenerationText::fromCharCorpus(desc, o.text));
    } else {
      std::unique_ptr<Tokenizer> source = loadTokenizer(o.tokenizer), target;
      if (!o.targetTokenizer.empty())
        target = loadTokenizer(o.targetTokenizer);
      // As ls2c train refuses it: one embedding cannot serve two vocabularies.
      if (target && desc.share_embeddings && target->fingerprint() != source->fingerprint())
        return bad(o.targetTokenizer + ": another tokenizer than " + o.tokenizer + ", but " +
                   o.model + " shares one embedding (share_embeddings) between the sides");
      text.emplace(desc, std::move(source), std::move(target));
    }
    // The checkpoint before the inputs: a prompt that another vocabulary
    // cannot encode is reported as that vocabulary's mistake.
    std::map<std::string, reference::HostTensor> weights =
        loadModelWeights(o.checkpoint, desc, text->vocabulary(),
                         o.text.empty() ? "--tokenizer " + o.tokenizer : "--text " + o.text);
    SearchOptions search = o.search;
    text->setSpecials(search);
    const std::string where = o.prompt ? std::string("--prompt") : o.input;
    std::vector<std::vector<int32_t>> prompts, sources;
    size_t cut = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      try {
        prompts.push_back(text->prompt(inputs[i]));
        bool longer = false;
        if (text->hasSource())
          sources.push_back(text->source(inputs[i], &longer));
        cut += longer;
      } catch (const GenerationError &e) {
        throw GenerationError(where + ":" + std::to_string(i + 1) + ": " + e.what());
      }
    }
    if (cut)
      std::fprintf(stderr, "%s: %zu of %zu sources cut to their first %lld tokens (max_seq_len "
                           "- 1, as training cuts them)\n",
                   command.c_str(), cut, inputs.size(),
                   static_cast<long long>(desc.max_seq_len - 1));
    std::unique_ptr<IncrementalDecoder> decoder = makeDecoder(desc, weights);
    weights.clear(); // the decoder holds its own copy
    // Prompt and output share max_seq_len positions (Search.h): say so when
    // that, not --max-new-tokens, ends an output (after the checkpoint is
    // read, and not for a prompt with no room, which the search refuses:
    // an error stays one line).
    size_t capped = 0;
    int64_t least = search.maxNewTokens;
    for (const std::vector<int32_t> &p : prompts) {
      const int64_t room = desc.max_seq_len - static_cast<int64_t>(p.size());
      if (room < search.maxNewTokens) {
        ++capped;
        least = std::min(least, room);
      }
    }
    if (capped && least >= 1)
      std::fprintf(stderr,
                   "%s: %zu of %zu inputs generate at most %lld tokens, not --max-new-tokens "
                   "%lld: prompt and output share max_seq_len %lld positions\n",
                   command.c_str(), capped, inputs.size(), static_cast<long long>(least),
                   static_cast<long long>(search.maxNewTokens),
                   static_cast<long long>(desc.max_seq_len));
    auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<Hypothesis>> results;
    try {
      results = generate(*decoder, prompts, sources, search);
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
      if (results[i].empty())
        best.emplace_back();
      else
        // A translation's end token counts, chosen or forced at the limit.
        generated += results[i][0].tokens.size() + (text->hasSource() ? 1 : 0);
    }
    if (o.output.empty())
      std::fputs(out.c_str(), stdout);
    else
      writeFileAtomically(o.output, out);
    std::fprintf(stderr,
                 "%s: %zu inputs, beam %lld, %.2f s, %.1f tokens/s (best hypotheses)\n",
                 command.c_str(), inputs.size(), static_cast<long long>(search.beam), seconds,
                 seconds > 0 ? static_cast<double>(generated) / seconds : 0.0);
    if (!references.empty())
      std::fprintf(stderr, "%s\n", eval::corpusBleu(best, references).format().c_str());
  } catch (const GenerationError &e) {
    return bad(e.what());
  } catch (const DataError &e) {
    return bad(e.what());
  } catch (const FileWriteError &e) {
    return bad(e.what());
  }
  return 0;
}

} // namespace ls2c::generation
