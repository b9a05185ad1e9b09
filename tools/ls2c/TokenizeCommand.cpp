//===- TokenizeCommand.cpp - ls2c tokenize CORPUS... -o TOKENS -----------===//
#include "Commands.h"

#include "ls2c/Data/TokenFile.h"
#include "ls2c/Data/TokenFileBuilder.h"
#include "ls2c/Data/Tokenizer.h"
#include "ls2c/Data/TokenizerCorpus.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Hex.h"

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

namespace ls2c::cli {

namespace {

constexpr const char *kTokenizeUsage =
    "usage: ls2c tokenize CORPUS... -o TOKENS (--model MODEL | --train "
    "bpe|unigram|char [--vocab-size N] [--model-out MODEL]) [options]\n"
    "       ls2c tokenize --show TOKENS\n"
    "       ls2c tokenize --decode TOKENS --model MODEL [-o TEXT]";

constexpr const char *kTokenizeHelp = R"(
Encodes text corpora (UTF-8, plain or gzip-compressed, one sentence or
paragraph per line) into a binary token file that training memory-maps
(layout: include/ls2c/Data/TokenFile.h), with a sentencepiece model
(BPE or unigram) or characters.

tokenizer (one of):
  --model MODEL            an existing model: a sentencepiece .model, or a
                           character vocabulary written by --train char
  --train TYPE             train one on the corpus first: bpe or unigram
                           (libsentencepiece), or char (the corpus's distinct
                           bytes, sorted: the ids ls2c train uses)
  --model-out MODEL        where the trained model goes (default: TOKENS
                           with .model, or .chars for char)
  --vocab-size N           bpe, unigram: ids in the vocabulary (default 8000)
  --train-lines N          train on the first N lines only (default: all)
  --character-coverage F   bpe, unigram: share of characters the vocabulary
                           must cover (default 0.9995)
  --no-byte-fallback       bpe, unigram: rare characters become <unk>
                           instead of UTF-8 byte pieces
  --normalization NAME     bpe, unigram: nmt_nfkc (default), nfkc,
                           nmt_nfkc_cf, nfkc_cf, or identity (the text as it
                           is, whitespace included)
  --seed N                 the trainer's random seed (default 1234)
  --threads N              trainer threads (default: all cores)

sequences:
  (default)                one line is one sequence
  --concat                 language-model corpora: each file is one token
                           stream, every line followed by its line end ('\n'
                           for char, </s> for sentencepiece), cut into
                           sequences of --max-seq-len tokens (default: one
                           sequence per file)
  --max-seq-len N          lines: the most tokens a sequence may have
                           (default: no limit)
  --long-lines MODE        truncate (default) or skip lines longer than
                           --max-seq-len; counted and reported
  --keep-empty             keep lines without tokens as empty sequences
                           (default: skipped, counted and reported)
  --invalid-utf8 MODE      refuse (default: file, line and column named) or
                           replace ill-formed UTF-8 with U+FFFD (counted)

--show TOKENS validates a token file and prints its header; --decode writes
its text (one line per sequence; line ends of a concatenated stream become
newlines again) with the model it was encoded with.
)";

struct Options {
  std::vector<std::string> corpora;
  std::string out, model, train, modelOut, show, decode;
  uint64_t vocabSize = 0, trainLines = 0, seed = 1234, threads = 0;
  bool vocabSizeGiven = false;
  SentencePieceOptions sp;
  bool spOptionGiven = false;
  TokenizeOptions tok;
  bool longLinesGiven = false;
};

std::string parseCount(const std::string &flag, const std::string &text,
                       uint64_t &out, uint64_t max = UINT64_MAX) {
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || text[0] == '-' || v > max)
    return flag + " '" + text + "' is not an integer in [0, " +
           std::to_string(max) + "]";
  out = v;
  return "";
}
/// "" unless an output of `o` (-o, --model-out) is one of its inputs (a
/// corpus, --model, --decode): same path or the same file by another name.
std::string outputReplacesInput(const Options &o) {
  std::vector<ls2c::FileOption> inputs;
  for (const std::string &c : o.corpora)
    inputs.push_back({"the corpus", c});
  inputs.push_back({"--model", o.model});
  inputs.push_back({"--decode", o.decode});
  return ls2c::outputReplacesInput(
      {{"-o", o.out}, {"--model-out", o.train.empty() ? "" : o.modelOut}}, inputs);
}

std::string parse(const std::vector<std::string> &args, Options &o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string text, error;
    auto value = [&](std::string &dst) -> std::string {
      if (i + 1 == args.size())
        return a + " needs a value";
      dst = args[++i];
      return "";
    };
    auto count = [&](uint64_t &dst, uint64_t max) -> std::string {
      if (std::string e = value(text); !e.empty())
        return e;
      return parseCount(a, text, dst, max);
    };
    if (a == "-o")
      error = value(o.out);
    else if (a == "--model")
      error = value(o.model);
    else if (a == "--train")
      error = value(o.train);
    else if (a == "--model-out")
      error = value(o.modelOut);
    else if (a == "--show")
      error = value(o.show);
    else if (a == "--decode")
      error = value(o.decode);
    else if (a == "--vocab-size") {
      o.vocabSizeGiven = true;
      error = count(o.vocabSize, UINT32_MAX - 1);
    } else if (a == "--train-lines")
      error = count(o.trainLines, UINT64_MAX);
    else if (a == "--seed") {
      o.spOptionGiven = true;
      error = count(o.seed, UINT32_MAX - 1);
    } else if (a == "--threads") {
      o.spOptionGiven = true;
      error = count(o.threads, 1024);
    } else if (a == "--character-coverage") {
      o.spOptionGiven = true;
      if ((error = value(text)).empty()) {
        char *end = nullptr;
        o.sp.characterCoverage = std::strtod(text.c_str(), &end);
        if (text.empty() || *end || !(o.sp.characterCoverage > 0) ||
            o.sp.characterCoverage > 1)
          error = "--character-coverage '" + text + "' is not a number in (0, 1]";
      }
    } else if (a == "--no-byte-fallback") {
      o.spOptionGiven = true;
      o.sp.byteFallback = false;
    } else if (a == "--normalization") {
      o.spOptionGiven = true;
      if ((error = value(o.sp.normalization)).empty()) {
        const std::string &n = o.sp.normalization;
        if (n != "nmt_nfkc" && n != "nfkc" && n != "nmt_nfkc_cf" &&
            n != "nfkc_cf" && n != "identity")
          error = "--normalization '" + n +
                  "' is not nmt_nfkc, nfkc, nmt_nfkc_cf, nfkc_cf or identity";
      }
    } else if (a == "--concat")
      o.tok.concatenate = true;
    else if (a == "--max-seq-len")
      error = count(o.tok.maxSeqLen, UINT64_MAX);
    else if (a == "--long-lines") {
      o.longLinesGiven = true;
      if ((error = value(text)).empty()) {
        if (text == "truncate")
          o.tok.longLines = LongLinePolicy::Truncate;
        else if (text == "skip")
          o.tok.longLines = LongLinePolicy::Skip;
        else
          error = "--long-lines '" + text + "' is not truncate or skip";
      }
    } else if (a == "--keep-empty")
      o.tok.keepEmptyLines = true;
    else if (a == "--invalid-utf8") {
      if ((error = value(text)).empty()) {
        if (text == "refuse")
          o.tok.invalidUtf8 = InvalidUtf8Policy::Refuse;
        else if (text == "replace")
          o.tok.invalidUtf8 = InvalidUtf8Policy::Replace;
        else
          error = "--invalid-utf8 '" + text + "' is not refuse or replace";
      }
    } else if (a.size() > 1 && a[0] == '-')
      error = "unknown option '" + a + "' for tokenize";
    else
      o.corpora.push_back(a);
    if (!error.empty())
      return error;
  }

  if (!o.show.empty() || !o.decode.empty()) {
    if (!o.show.empty() && !o.decode.empty())
      return "--show and --decode are separate uses of tokenize";
    if (!o.corpora.empty() || !o.train.empty())
      return std::string(!o.show.empty() ? "--show" : "--decode") +
             " reads a token file; it takes no corpus and no --train";
    if (!o.decode.empty() && o.model.empty())
      return "--decode needs the --model the token file was encoded with";
    if (!o.show.empty() && (!o.model.empty() || !o.out.empty()))
      return "--show takes the token file only (--decode takes --model and -o)";
    return outputReplacesInput(o);
  }
  if (o.corpora.empty() || o.out.empty())
    return kTokenizeUsage;
  if (o.model.empty() == o.train.empty())
    return "tokenize needs exactly one of --model (an existing model) and "
           "--train (bpe, unigram or char)";
  if (!o.train.empty() && o.train != "bpe" && o.train != "unigram" &&
      o.train != "char")
    return "--train '" + o.train + "' is not bpe, unigram or char";
  bool sentencePiece = o.train == "bpe" || o.train == "unigram";
  if ((o.vocabSizeGiven || o.spOptionGiven) && !sentencePiece)
    return std::string("--vocab-size, --character-coverage, --no-byte-fallback, "
                       "--normalization, --seed and --threads apply to "
                       "--train bpe or unigram") +
           (o.train == "char" ? " (a character vocabulary is the corpus's "
                                "distinct bytes)"
                              : "");
  if (!o.model.empty() && (!o.modelOut.empty() || o.trainLines))
    return "--model-out and --train-lines apply to --train";
  if (o.longLinesGiven && (o.tok.maxSeqLen == 0 || o.tok.concatenate))
    return "--long-lines applies to line sequences with --max-seq-len";
  if (o.tok.keepEmptyLines && o.tok.concatenate)
    return "--keep-empty applies to line sequences (--concat keeps every line)";
  if (sentencePiece) {
    if (o.vocabSizeGiven && o.vocabSize < 4)
      return "--vocab-size " + std::to_string(o.vocabSize) +
             " is too small (at least 4: <unk>, <s>, </s> and one piece)";
    o.sp.modelType = o.train;
    if (o.vocabSizeGiven)
      o.sp.vocabSize = static_cast<uint32_t>(o.vocabSize);
    o.sp.seed = static_cast<uint32_t>(o.seed);
    o.sp.threads = static_cast<int>(o.threads);
  }
  if (!o.train.empty() && o.modelOut.empty()) {
    std::string stem = o.out;
    if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".tok") == 0)
      stem.resize(stem.size() - 4);
    o.modelOut = stem + (o.train == "char" ? ".chars" : ".model");
  }
  if (!o.train.empty() && o.modelOut == o.out)
    return "--model-out and -o both name '" + o.out + "'";
  return outputReplacesInput(o);
}

/// Throws FileWriteError unless `path` could be written atomically: its
/// folder exists and is writable, and it is not a folder.
void checkWritable(const std::string &path) {
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty())
    dir = "/";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw FileWriteError("cannot write " + path + ": " + std::strerror(EISDIR));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw FileWriteError("cannot write " + path + ": " + dir + ": " + std::strerror(errno));
}

std::string idText(uint32_t id) {
  return id == kNoTokenId ? "none" : std::to_string(id);
}

int show(const Options &o) {
  TokenFile f(o.show);
  std::printf("%s: token file version %u\n", f.path().c_str(), kTokenFileVersion);
  std::printf("  vocab_size %u, %s ids\n", f.vocabSize(),
              f.tokenBytes() == 2 ? "uint16" : "uint32");
  std::printf("  %llu sequences, %llu tokens%s\n",
              static_cast<unsigned long long>(f.numSequences()),
              static_cast<unsigned long long>(f.numTokens()),
              f.concatenated() ? " (concatenated streams)" : " (one per line)");
  std::printf("  bos %s, eos %s, unk %s, pad %s\n", idText(f.bosId()).c_str(),
              idText(f.eosId()).c_str(), idText(f.unkId()).c_str(),
              idText(f.padId()).c_str());
  std::printf("  tokenizer fingerprint %s\n", hex64(f.tokenizerFingerprint()).c_str());
  return kExitOk;
}

int decode(const Options &o) {
  TokenFile f(o.decode);
  std::unique_ptr<Tokenizer> tok = loadTokenizer(o.model);
  if (f.vocabSize() != tok->vocabSize() ||
      (f.tokenizerFingerprint() && f.tokenizerFingerprint() != tok->fingerprint())) {
    return usageError(f.path() + " was encoded with another tokenizer (vocab " +
                      std::to_string(f.vocabSize()) + ", fingerprint " +
                      hex64(f.tokenizerFingerprint()) + ") than " + o.model +
                      " (vocab " + std::to_string(tok->vocabSize()) +
                      ", fingerprint " + hex64(tok->fingerprint()) + ")");
  }
  // A concatenated file is decoded as one stream (its sequences may cut
  // lines, even pieces, anywhere); line files one sequence per line.
  std::string text;
  try {
    if (f.concatenated()) {
      std::vector<uint32_t> ids(f.numTokens());
      for (uint64_t i = 0; i < ids.size(); ++i)
        ids[i] = f.token(i);
      text = tok->decodeLines(ids.data(), ids.size());
    } else {
      for (uint64_t s = 0; s < f.numSequences(); ++s) {
        std::vector<uint32_t> ids = f.sequence(s);
        text += tok->decode(ids.data(), ids.size());
        text.push_back('\n');
      }
    }
  } catch (const DataError &e) {
    return usageError(f.path() + ": " + e.what());
  }
  if (o.out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    writeFileAtomically(o.out, text);
  }
  return kExitOk;
}

int encode(Options &o) {
  std::unique_ptr<Tokenizer> tok;
  std::string trained; // the line reporting a trained model
  if (!o.model.empty()) {
    tok = loadTokenizer(o.model);
  } else {
    bool sawNewline = false;
    std::vector<std::string> lines =
        readCorpusLines(o.corpora, o.tok.invalidUtf8, o.trainLines, &sawNewline);
    std::string name = o.corpora.front() +
                       (o.corpora.size() > 1 ? " and " + std::to_string(o.corpora.size() - 1) + " more" : "");
    if (o.train == "char")
      tok = trainCharTokenizer(lines, sawNewline);
    else
      tok = trainSentencePiece(lines, o.sp, name);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "trained a %s tokenizer of %u ids on %zu lines: ",
                  tok->type().c_str(), tok->vocabSize(), lines.size());
    trained = buf + o.modelOut + "\n";
  }
  TokenizeReport r;
  TokenFileContents contents = tokenizeCorpus(o.corpora, *tok, o.tok, r);
  // Both files only once everything is encoded: bad data leaves neither,
  // and a token file that cannot be written (no such folder, no write
  // permission) is refused before the model is written.
  if (!trained.empty()) {
    checkWritable(o.out);
    writeFileAtomically(o.modelOut, tok->modelBytes());
  }
  writeTokenFile(o.out, contents);
  std::fputs(trained.c_str(), stdout);
  std::printf("tokenized %llu lines of %llu file%s into %llu sequences, %llu "
              "tokens (%s, vocab %u): %s\n",
              static_cast<unsigned long long>(r.lines),
              static_cast<unsigned long long>(r.files), r.files == 1 ? "" : "s",
              static_cast<unsigned long long>(r.sequences),
              static_cast<unsigned long long>(r.tokens),
              tokenBytesForVocab(tok->vocabSize()) == 2 ? "uint16" : "uint32",
              tok->vocabSize(), o.out.c_str());
  if (r.emptyLines && !o.tok.concatenate)
    std::printf("%s %llu empty lines (no tokens)\n",
                o.tok.keepEmptyLines ? "kept" : "skipped",
                static_cast<unsigned long long>(r.emptyLines));
  if (r.truncatedLines)
    std::printf("truncated %llu lines longer than %llu tokens, dropping %llu "
                "tokens (first: %s)\n",
                static_cast<unsigned long long>(r.truncatedLines),
                static_cast<unsigned long long>(o.tok.maxSeqLen),
                static_cast<unsigned long long>(r.truncatedTokens),
                r.firstLongLine.c_str());
  if (r.skippedLongLines)
    std::printf("skipped %llu lines longer than %llu tokens (first: %s)\n",
                static_cast<unsigned long long>(r.skippedLongLines),
                static_cast<unsigned long long>(o.tok.maxSeqLen),
                r.firstLongLine.c_str());
  if (r.replacedUtf8)
    std::printf("replaced %llu ill-formed UTF-8 sequences with U+FFFD (first: "
                "%s)\n",
                static_cast<unsigned long long>(r.replacedUtf8),
                r.firstReplacedLine.c_str());
  if (r.unknownTokens)
    std::printf("%llu tokens are <unk> (characters the vocabulary lacks)\n",
                static_cast<unsigned long long>(r.unknownTokens));
  return kExitOk;
}

} // namespace

int runTokenize(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kTokenizeUsage, kTokenizeHelp);
      return kExitOk;
    }
  Options o;
  if (std::string error = parse(args, o); !error.empty())
    return usageError(error);
  try {
    if (!o.show.empty())
      return show(o);
    if (!o.decode.empty())
      return decode(o);
    return encode(o);
  } catch (const DataError &e) {
    return usageError(e.what());
  } catch (const FileWriteError &e) {
    return usageError(e.what());
  }
}

} // namespace ls2c::cli
