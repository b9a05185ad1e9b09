//===- BundleTest.cpp - bundles: round trips, validation, corruption ------===//
//
// A realistic hand-built Program (three kernels with sources and fake ELF
// cubins for sm_80 and sm_90; a forward function with launches, a GEMM with
// a bias epilogue and attention with dropout over dynamic token counts; an
// optimizer step) round-trips through bytes and files. Every validation rule
// is broken once, alone, and the error must name the field and the rule.
// Corrupted containers (truncated, wrong magic, version, checksums, layout)
// and malformed manifests (wrong JSON types, missing and unknown keys, bad
// section references) are refused with clear messages.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/ProgramValidate.h"
#include "ls2c/Support/AtomicFile.h"

#include "BundleTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>

using namespace ls2c::runtime;
using namespace ls2c::testing;
using json = nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// The program
//===----------------------------------------------------------------------===//

// tiny-bert: hidden 64, 4 heads of 16, up to T = 256 tokens in up to 8
// sequences, f16 compute.
constexpr int64_t T = 256, H = 64, B1 = 9;

BufferRef arena(uint64_t offset, uint64_t bytes) {
  return {BufferRef::Space::Arena, 0, offset, bytes};
}
BufferRef argument(uint32_t index, uint64_t offset, uint64_t bytes) {
  return {BufferRef::Space::Argument, index, offset, bytes};
}
BufferRef result(uint32_t index, uint64_t offset, uint64_t bytes) {
  return {BufferRef::Space::Result, index, offset, bytes};
}
KernelArg pointer(BufferRef ref) {
  KernelArg a;
  a.kind = ParamKind::Pointer;
  a.buffer = ref;
  return a;
}
KernelArg int64(Dim value) {
  KernelArg a;
  a.kind = ParamKind::Int64;
  a.value = value;
  return a;
}
TensorSpec tensor(std::string name, ArgumentKind kind, DType dtype,
                  std::vector<Dim> shape, std::vector<int64_t> maxShape) {
  TensorSpec t;
  t.name = std::move(name);
  t.kind = kind;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.maxShape = std::move(maxShape);
  return t;
}
std::string cubin(const std::string &tag) {
  std::string image = "\x7f"
                      "ELF\x02\x01\x01";
  image += std::string("\0\0\x33\x07\0", 5); // NULs and EM_CUDA-ish bytes
  return image + tag;
}
Kernel kernel(const std::string &name, std::vector<ParamKind> params,
              const std::string &body) {
  Kernel k;
  k.name = name;
  k.source = "#include <cuda_fp16.h>\nextern \"C\" __global__ void " + name +
             "(" + body + ") {}\n";
  k.params = std::move(params);
  k.cubins["sm_80"] = cubin(name + "/sm_80");
  k.cubins["sm_90"] = cubin(name + "/sm_90");
  return k;
}

// Arena of @forward (bytes): x [T, H] f16 at 0, qkv [T, 3H] f16 at 32768,
// attention output [T, H] f16 at 131072, lse [T, 4] f32 at 163840; then
// kernel scratch at 167936.
constexpr uint64_t kX = 0, kQkv = 32768, kOut = 131072, kLse = 163840,
                   kForwardArena = 167936, kScratch = 1024;

Program makeProgram() {
  using P = ParamKind;
  Program p;
  p.modelName = "tiny-bert";
  p.description = R"({"architecture": "bert", "hidden_size": 64, )"
                  R"("num_heads": 4, "name": "tiny \u00e9 \"quoted\""})";
  p.computeDType = "f16";
  p.parameters = {
      {"bert.embeddings.word_embeddings.weight", {100, H}, 0, true},
      {"bert.encoder.layer.0.attention.qkv.weight", {3 * H, H}, 6400, true},
      {"bert.encoder.layer.0.attention.qkv.bias", {3 * H}, 18688, false}};
  p.workspaceElements = 18880;
  p.scratchOffset = kForwardArena;
  p.arenaBytes = kForwardArena + kScratch;

  Kernel embed =
      kernel("embedding_0", {P::Pointer, P::Pointer, P::Pointer, P::Int64},
             "const int *ids, const __half *w, __half *x, "
             "long long T");
  embed.launch.blockThreads = 256;
  // Dynamic work dims name the kernel's own int64 parameters: T tokens
  // (parameter 3) times H columns.
  embed.launch.work = {dyn(3, 0), stat(H)};
  embed.launch.workPerBlock = 256;
  embed.launch.maxBlocks = 65535;
  Kernel norm =
      kernel("layer_norm_1", {P::Pointer, P::Pointer, P::Pointer, P::Int64},
             "const __half *x, __half *y, float *scratch, "
             "long long T");
  norm.launch.blockThreads = 128;
  norm.launch.dynamicSharedBytes = 512;
  norm.launch.work = {dyn(3, 0, 1, H)}; // rows: parameter 3 is T * H
  norm.launch.workPerBlock = 4;
  norm.launch.maxBlocks = 1024;
  norm.scratchBytes = kScratch;
  Kernel adam = kernel("adamw_2", {P::Pointer, P::Pointer},
                       "float *w, "
                       "const float *g");
  adam.launch.blockThreads = 1024;
  adam.launch.work = {stat(18880)};
  adam.launch.workPerBlock = 4096;
  adam.launch.maxBlocks = 132;
  adam.cubins.erase("sm_80"); // only sm_90
  p.kernels = {embed, norm, adam};

  Function f;
  f.name = "forward";
  f.arguments = {
      tensor("input_ids", ArgumentKind::Input, DType::I32, {dyn(0, 0)}, {T}),
      tensor("cu_seqlens", ArgumentKind::Input, DType::I32, {dyn(1, 0)}, {B1}),
      tensor("weights", ArgumentKind::Parameter, DType::F16, {stat(18880)},
             {18880}),
      tensor("seed", ArgumentKind::State, DType::I64, {}, {}),
      tensor("offset", ArgumentKind::State, DType::I64, {}, {})};
  f.results = {tensor("hidden", ArgumentKind::Output, DType::F16,
                      {dyn(0, 0), stat(H)}, {T, H}),
               tensor("seed_out", ArgumentKind::State, DType::I64, {}, {})};
  f.arenaBytes = kForwardArena;

  Step s0;
  s0.kind = Step::Kind::Launch;
  s0.kernel = 0;
  s0.args = {pointer(argument(0, 0, T * 4)), pointer(argument(2, 0, 12800)),
             pointer(arena(kX, T * H * 2)), int64(dyn(0, 0))};

  Step s1;
  s1.kind = Step::Kind::Gemm;
  Gemm &g = s1.gemm;
  g.a = arena(kX, T * H * 2);
  g.b = argument(2, 12800, 3 * H * H * 2);
  g.c = arena(kQkv, T * 3 * H * 2);
  g.bias = argument(2, 18688 * 2, 3 * H * 2);
  g.aType = g.bType = g.cType = g.biasType = DType::F16;
  g.transposeB = true; // W is [3H, H] = [N, K]
  g.m = dyn(0, 0);
  g.n = stat(3 * H);
  g.k = stat(H);
  g.batch = stat(1);
  g.lda = H;
  g.ldb = H;
  g.ldc = 3 * H;
  g.epilogue = GemmEpilogue::Bias;

  Step s2;
  s2.kind = Step::Kind::Attention;
  Attention &a = s2.attention;
  a.dtype = DType::F16;
  a.heads = 4;
  a.kvHeads = 2;
  a.headDim = 16;
  a.causal = true;
  a.scale = 0.25f;
  a.dropoutRate = 0.1f;
  a.stream = 3;
  a.tokensQ = dyn(0, 0);
  a.tokensK = dyn(0, 0);
  a.batchPlusOne = dyn(1, 0);
  // q, k, v: strided views of qkv [T, 3H] (k and v use the first 32 columns
  // of their thirds: 2 kv heads of 16).
  a.strideQ = a.strideK = a.strideV = 3 * H;
  uint64_t rowSpan = ((T - 1) * 3 * H + H) * 2;
  a.q = arena(kQkv, rowSpan);
  a.k = arena(kQkv + H * 2, rowSpan);
  a.v = arena(kQkv + 2 * H * 2, rowSpan);
  a.out = arena(kOut, T * H * 2);
  a.strideO = H;
  a.lse = arena(kLse, T * 4 * 4);
  a.cuSeqlensQ = a.cuSeqlensK = argument(1, 0, B1 * 4);
  a.seed = argument(3, 0, 8);
  a.offset = argument(4, 0, 8);
  a.fallbackSteps = 1;
  a.maxSeqLen = 64;

  Step s3;
  s3.kind = Step::Kind::Launch;
  s3.kernel = 1;
  s3.args = {pointer(arena(kOut, T * H * 2)), pointer(result(0, 0, T * H * 2)),
             pointer(arena(kForwardArena, kScratch)),
             int64(dyn(0, 0, H, 1))}; // T * H elements
  Step s4;                            // the seed, passed through
  s4.kind = Step::Kind::Copy;
  s4.copySource = argument(3, 0, 8);
  s4.copyDestination = result(1, 0, 8);
  f.steps = {s0, s1, s2, s3, s4};

  Function opt;
  opt.name = "optimizer_step";
  opt.arguments = {tensor("master", ArgumentKind::Workspace, DType::F32,
                          {stat(18880)}, {18880}),
                   tensor("gradients", ArgumentKind::Gradient, DType::F32,
                          {stat(18880)}, {18880})};
  // The updated master weights, written over argument 0.
  opt.results = {tensor("master", ArgumentKind::State, DType::F32, {stat(18880)}, {18880})};
  opt.results[0].inPlaceOf = 0;
  opt.arenaBytes = 0;
  Step u;
  u.kind = Step::Kind::Launch;
  u.kernel = 2;
  u.args = {pointer(argument(0, 0, 18880 * 4)),
            pointer(argument(1, 0, 18880 * 4))};
  opt.steps = {u};
  p.functions = {f, opt};
  return p;
}

Step &step(Program &p, size_t i) { return p.functions[0].steps[i]; }

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/ls2c-bundle-XXXXXX";
    if (!mkdtemp(tmpl))
      throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    for (const std::string &name : entries())
      unlink((path + "/" + name).c_str());
    rmdir(path.c_str());
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    if (DIR *d = opendir(path.c_str())) {
      while (dirent *e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..")
          out.push_back(name);
      }
      closedir(d);
    }
    return out;
  }
  std::string path;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void writeRaw(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// Expects `f` to throw a BundleError whose message contains every one of
/// `substrings`; returns the message.
std::string expectError(const std::function<void()> &f,
                        const std::vector<std::string> &substrings) {
  try {
    f();
  } catch (const BundleError &e) {
    std::string message = e.what();
    for (const std::string &s : substrings)
      EXPECT_NE(message.find(s), std::string::npos)
          << "message lacks '" << s << "': " << message;
    EXPECT_EQ(message, e.file() + ": " + e.where() + ": " + e.detail());
    return message;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected a BundleError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a BundleError, nothing was thrown";
  return "";
}

std::string editManifest(const std::string &bundle,
                         const std::function<void(json &)> &edit) {
  std::vector<BundleSection> sections = splitBundle(bundle, "edit");
  json manifest = json::parse(sections[0].payload);
  edit(manifest);
  sections[0].payload = manifest.dump();
  return assembleBundle(sections);
}

/// `bundle` as format `version` (1 or 2) wrote it: without the keys later
/// versions added (2: the GEMMs' aux and auxLd; 3: the attention steps'
/// fallbackSteps and maxSeqLen), then `edit`ed.
std::string asVersion(const std::string &bundle, uint32_t version,
                      const std::function<void(json &)> &edit) {
  std::string b = editManifest(bundle, [&](json &m) {
    m["formatVersion"] = version;
    for (json &f : m["functions"])
      for (json &s : f["steps"]) {
        if (version < 2 && s["kind"] == "gemm") {
          s["gemm"].erase("aux");
          s["gemm"].erase("auxLd");
        }
        if (version < 3 && s["kind"] == "attention") {
          s["attention"].erase("fallbackSteps");
          s["attention"].erase("maxSeqLen");
        }
      }
    edit(m);
  });
  putU32(b, 8, version);
  return b;
}

//===----------------------------------------------------------------------===//
// Round trips and layout
//===----------------------------------------------------------------------===//

TEST(BundleTest, ProgramIsValid) {
  EXPECT_NO_THROW(validateProgram(makeProgram()));
}

TEST(BundleTest, RoundTripInMemory) {
  Program p = makeProgram();
  std::string bytes = serializeBundle(p);
  Program q = parseBundle(bytes, "mem");
  EXPECT_TRUE(q == p);
  // Field by field for the parts most likely to drift.
  ASSERT_EQ(q.kernels.size(), 3u);
  EXPECT_EQ(q.kernels[1].source, p.kernels[1].source);
  EXPECT_EQ(q.kernels[0].cubins, p.kernels[0].cubins);
  EXPECT_EQ(q.kernels[2].cubins.count("sm_80"), 0u);
  EXPECT_EQ(q.description, p.description);
  EXPECT_EQ(q.functions[0].steps[2].attention.scale, 0.25f);
  EXPECT_EQ(q.functions[0].steps[2].attention.dropoutRate, 0.1f);
  EXPECT_EQ(q.functions[0].steps[1].gemm.m.argument, 0);
  EXPECT_EQ(q.functions[0].arguments[1].maxShape, std::vector<int64_t>{B1});
  EXPECT_EQ(q.functions[1].results[0].inPlaceOf, 0);
  EXPECT_EQ(q.functions[0].results[0].inPlaceOf, -1);
  // Deterministic bytes.
  EXPECT_EQ(serializeBundle(q), bytes);
}

TEST(BundleTest, RoundTripThroughFile) {
  TempDir dir;
  std::string path = dir.path + "/tiny.ls2b";
  Program p = makeProgram();
  writeBundle(p, path);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"tiny.ls2b"});
  EXPECT_TRUE(readBundle(path) == p);
  EXPECT_EQ(readFile(path), serializeBundle(p));
  // Overwriting keeps exactly one file.
  p.modelName = "tiny-bert-2";
  writeBundle(p, path);
  EXPECT_EQ(readBundle(path).modelName, "tiny-bert-2");
  EXPECT_EQ(dir.entries().size(), 1u);
}

TEST(BundleTest, RoundTripKeepsEdgeValues) {
  Program p = makeProgram();
  p.arenaBytes = uint64_t(1) << 62;
  p.scratchOffset = (uint64_t(1) << 62) - kScratch;
  p.workspaceElements = std::numeric_limits<uint64_t>::max();
  p.description = std::string("line\nbreak \t tab \\ \"q\" \x01 \xe2\x82\xac");
  Attention &a = step(p, 2).attention;
  a.scale = 1.0f / std::sqrt(3.0f);
  a.dropoutRate = std::nextafter(1.0f, 0.0f);
  a.stream = std::numeric_limits<uint32_t>::max();
  p.kernels[0].cubins["sm_100"] = cubin(std::string(3000, '\0'));
  Function kinds{"kinds", {}, {}, 0, {}};
  const ArgumentKind allKinds[] = {
      ArgumentKind::Parameter, ArgumentKind::Input,  ArgumentKind::Workspace,
      ArgumentKind::State,     ArgumentKind::Buffer, ArgumentKind::Output,
      ArgumentKind::Gradient,  ArgumentKind::Loss};
  for (ArgumentKind k : allKinds)
    kinds.arguments.push_back(
        tensor("t" + std::to_string(kinds.arguments.size()), k, DType::I1,
               {dyn(0, 0, 16, 17)}, {16}));
  kinds.arguments[0].shape[0] = stat(17);
  kinds.arguments[0].maxShape[0] = 17;
  p.functions.push_back(kinds);
  Program q = parseBundle(serializeBundle(p), "edge");
  EXPECT_TRUE(q == p);
  EXPECT_EQ(q.functions[0].steps[2].attention.scale, a.scale);
  EXPECT_EQ(q.functions[0].steps[2].attention.dropoutRate, a.dropoutRate);
}

TEST(BundleTest, EqualityIsSemanticForUnusedFields) {
  Program p = makeProgram(), q = makeProgram();
  // A dynamic dim's size and a static dim's axis are unused.
  step(q, 1).gemm.m.size = 77;
  q.kernels[0].launch.work[1].axis = 5;
  // A pointer argument's value and a launch's gemm are unused.
  step(q, 0).args[0].value = stat(9);
  step(q, 0).gemm.lda = 1234;
  EXPECT_TRUE(p == q);
  step(q, 1).gemm.m.axis = 1;
  EXPECT_FALSE(p == q);
  q = makeProgram();
  step(q, 1).gemm.m.divisor = 3;
  EXPECT_FALSE(p == q);
  // The bundle stores only what is used: the round trip equals both.
  EXPECT_TRUE(parseBundle(serializeBundle(p), "p") == p);
}

TEST(BundleTest, LayoutMatchesTheDocumentation) {
  Program p = makeProgram();
  std::string b = serializeBundle(p);
  EXPECT_EQ(b.compare(0, 8, std::string("LS2BNDL\0", 8)), 0);
  EXPECT_EQ(getU32(b, 8), 3u);
  // Manifest + 3 sources + 2 + 2 + 1 cubins.
  uint32_t count = getU32(b, 12);
  EXPECT_EQ(count, 9u);
  EXPECT_EQ(getU64(b, 16), b.size());
  auto tableHash = bundleSha256(std::string_view(b).substr(56, count * 56));
  EXPECT_EQ(std::memcmp(tableHash.data(), &b[24], 32), 0);
  uint64_t previousEnd = 56 + count * 56;
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = 56 + i * 56;
    uint32_t kind = getU32(b, e);
    uint64_t offset = getU64(b, e + 8), size = getU64(b, e + 16);
    EXPECT_EQ(kind, i == 0                         ? 1u
                    : (i == 1 || i == 4 || i == 7) ? 2u
                                                   : 3u)
        << "section " << i;
    EXPECT_EQ(getU32(b, e + 4), 0u);
    EXPECT_EQ(offset % 64, 0u);
    EXPECT_GE(offset, previousEnd);
    EXPECT_LT(offset - previousEnd, 64u);
    auto h = bundleSha256(std::string_view(b).substr(offset, size));
    EXPECT_EQ(std::memcmp(h.data(), &b[e + 24], 32), 0);
    previousEnd = offset + size;
  }
  EXPECT_EQ(previousEnd, b.size());
  // The manifest is JSON naming its sections.
  uint64_t mOffset = getU64(b, 56 + 8), mSize = getU64(b, 56 + 16);
  json m = json::parse(b.substr(mOffset, mSize));
  EXPECT_EQ(m["formatVersion"], 3);
  EXPECT_EQ(m["functions"][0]["steps"][2]["attention"]["fallbackSteps"], 1);
  EXPECT_EQ(m["functions"][0]["steps"][2]["attention"]["maxSeqLen"], 64);
  EXPECT_EQ(m["functions"][0]["steps"][1]["gemm"]["epilogue"], "bias");
  EXPECT_EQ(m["functions"][0]["steps"][1]["gemm"]["auxLd"], 0);
  EXPECT_EQ(m["modelName"], "tiny-bert");
  EXPECT_EQ(m["kernels"][0]["source"], 1);
  EXPECT_EQ(m["kernels"][0]["cubins"]["sm_90"], 3);
  EXPECT_EQ(m["kernels"][2]["cubins"]["sm_90"], 8);
  EXPECT_EQ(m["functions"][0]["steps"][1]["gemm"]["m"],
            json({{"argument", 0}, {"axis", 0}}));
  EXPECT_EQ(m["functions"][0]["steps"][1]["gemm"]["n"], 192);
  EXPECT_EQ(m["kernels"][1]["launch"]["work"],
            json::array({{{"argument", 3}, {"axis", 0}, {"divisor", 64}}}));
  EXPECT_EQ(m["functions"][0]["steps"][3]["args"][3]["value"],
            json({{"argument", 0}, {"axis", 0}, {"multiplier", 64}}));
  EXPECT_EQ(m["functions"][0]["results"][0]["kind"], "output");
  EXPECT_EQ(m["functions"][0]["steps"][4]["kind"], "copy");
  EXPECT_EQ(m["functions"][0]["steps"][4]["copyDestination"]["space"],
            "result");
}

//===----------------------------------------------------------------------===//
// Validation: one broken field at a time
//===----------------------------------------------------------------------===//

struct Rule {
  const char *name;
  std::function<void(Program &)> breakIt;
  std::vector<std::string> expect; ///< substrings of the message
};

const uint64_t kHuge = uint64_t(1) << 63;

std::vector<Rule> rules() {
  using P = ParamKind;
  return {
      // Program-level fields.
      {"EmptyModelName",
       [](Program &p) { p.modelName.clear(); },
       {"program: modelName: empty"}},
      {"ModelNameNotUtf8",
       [](Program &p) { p.modelName = "bad\xff"; },
       {"modelName", "UTF-8"}},
      {"DescriptionNotUtf8",
       [](Program &p) { p.description = "\xc0\x80"; },
       {"description", "UTF-8"}},
      {"ComputeDType",
       [](Program &p) { p.computeDType = "f8"; },
       {"computeDType: 'f8'", "\"bf16\""}},
      {"ParameterNegativeDim",
       [](Program &p) { p.parameters[1].shape[0] = -3; },
       {"parameters[1].shape[0]: -3", ">= 0"}},
      {"ParameterPastWorkspace",
       [](Program &p) { p.workspaceElements = 18879; },
       {"parameters[2].offset", "ends past the workspace",
        "workspaceElements 18879"}},
      {"ParameterOverlap",
       [](Program &p) { p.parameters[2].offset = 18687; },
       {"parameters[2].offset: 18687", "overlaps parameters[1]"}},
      {"ParameterDuplicateName",
       [](Program &p) { p.parameters[2].name = p.parameters[0].name; },
       {"parameters[2].name", "a second parameter"}},
      {"ParameterOffsetOverflow",
       [](Program &p) {
         p.parameters[0].offset = std::numeric_limits<uint64_t>::max() - 5;
       },
       {"parameters[0].offset", "overflows 64 bits"}},
      {"ParameterShapeOverflow",
       [](Program &p) {
         p.parameters[0].shape = {int64_t(1) << 40, int64_t(1) << 40};
       },
       {"parameters[0].shape[1]", "overflows 64 bits"}},
      {"ScratchOffsetPastArena",
       [](Program &p) { p.scratchOffset = p.arenaBytes + 1; },
       {"scratchOffset", "past the end of the arena"}},
      {"ScratchPastArena",
       [](Program &p) { p.kernels[1].scratchBytes = kScratch + 1; },
       {"kernels[1].scratchBytes: 1025", "ends past the arena"}},
      {"ScratchOverflow",
       [](Program &p) { p.kernels[1].scratchBytes = ~uint64_t(0); },
       {"kernels[1].scratchBytes", "overflows 64 bits"}},
      {"ScratchInsideAFunctionPlan",
       [](Program &p) { p.scratchOffset = kForwardArena - 256; },
       {"scratchOffset", "layer_norm_1",
        "inside the plan of function "
        "'forward'"}},
      // Kernels.
      {"KernelNameNotIdentifier",
       [](Program &p) { p.kernels[0].name = "1embedding"; },
       {"kernels[0].name: '1embedding'", "not a C identifier"}},
      {"KernelNameWithDash",
       [](Program &p) {
         p.kernels[2].name = "adam-w";
         p.kernels[2].source += "// adam-w";
       },
       {"kernels[2].name", "C identifier"}},
      {"KernelNameDuplicate",
       [](Program &p) {
         p.kernels[2].name = "embedding_0";
         p.kernels[2].source += "// embedding_0";
       },
       {"kernels[2].name: 'embedding_0'", "a second kernel"}},
      {"KernelSourceMissing",
       [](Program &p) { p.kernels[1].source.clear(); },
       {"kernels[1].source: missing"}},
      {"KernelSourceWithoutName",
       [](Program &p) { p.kernels[1].source = "__global__ void other() {}"; },
       {"kernels[1].source", "does not mention", "layer_norm_1"}},
      {"KernelSourceWithNul",
       [](Program &p) { p.kernels[1].source += std::string(1, '\0'); },
       {"kernels[1].source", "NUL"}},
      {"KernelParamKind",
       [](Program &p) { p.kernels[0].params[3] = static_cast<P>(9); },
       {"kernels[0].params[3]: 9", "not a parameter kind"}},
      {"BlockThreadsZero",
       [](Program &p) { p.kernels[0].launch.blockThreads = 0; },
       {"kernels[0].launch.blockThreads: 0", "1..1024", "multiple of 32"}},
      {"BlockThreadsTooMany",
       [](Program &p) { p.kernels[0].launch.blockThreads = 1056; },
       {"kernels[0].launch.blockThreads: 1056"}},
      {"BlockThreadsNotWarps",
       [](Program &p) { p.kernels[0].launch.blockThreads = 100; },
       {"kernels[0].launch.blockThreads: 100", "multiple of 32"}},
      {"DynamicSharedTooLarge",
       [](Program &p) {
         p.kernels[1].launch.dynamicSharedBytes = 227 * 1024 + 1;
       },
       {"kernels[1].launch.dynamicSharedBytes: 232449", "227 KiB"}},
      {"MaxBlocksZero",
       [](Program &p) { p.kernels[2].launch.maxBlocks = 0; },
       {"kernels[2].launch.maxBlocks: 0", ">= 1"}},
      {"WorkPerBlockZero",
       [](Program &p) { p.kernels[2].launch.workPerBlock = 0; },
       {"kernels[2].launch.workPerBlock: 0", ">= 1"}},
      {"WorkStaticNegative",
       [](Program &p) { p.kernels[2].launch.work[0] = stat(-1); },
       {"kernels[2].launch.work[0]: -1", ">= 0"}},
      {"WorkArgumentPastParams",
       [](Program &p) { p.kernels[0].launch.work[0] = dyn(4, 0); },
       {"kernels[0].launch.work[0].argument: 4",
        "kernel 'embedding_0' has 4 parameters", "int64 parameter"}},
      {"WorkArgumentNamesPointer",
       [](Program &p) { p.kernels[0].launch.work[0] = dyn(1, 0); },
       {"kernels[0].launch.work[0].argument: 1",
        "parameter 1 of kernel 'embedding_0' is a pointer"}},
      {"WorkAxisNotZero",
       [](Program &p) { p.kernels[0].launch.work[0] = dyn(3, 1); },
       {"kernels[0].launch.work[0].axis: 1", "must be 0"}},
      {"WorkDivisorNotReduced",
       [](Program &p) { p.kernels[1].launch.work[0] = dyn(3, 0, 2, H); },
       {"kernels[1].launch.work[0].divisor: 64", "not coprime",
        "multiplier 2"}},
      {"WorkMultiplierZero",
       [](Program &p) { p.kernels[1].launch.work[0].multiplier = 0; },
       {"kernels[1].launch.work[0].multiplier: 0", ">= 1"}},
      {"WorkBoundOverflow",
       [](Program &p) {
         // T = 2^8 tokens times 2^60.
         p.kernels[0].launch.work[0].multiplier = int64_t(1) << 60;
       },
       {"kernels[0].launch.work[0].multiplier", "the bound 256",
        "functions[0].steps[0].args[3].value", "overflows 63 bits"}},
      {"WorkProductOverflow",
       [](Program &p) { p.kernels[0].launch.work[1] = stat(int64_t(1) << 56); },
       {"kernels[0].launch.work", "product", "functions[0].steps[0]",
        "overflows 63 bits"}},
      {"CubinArchName",
       [](Program &p) { p.kernels[0].cubins["compute_90"] = cubin("x"); },
       {"kernels[0].cubins: 'compute_90'", "not an arch name"}},
      {"CubinArchNoDigits",
       [](Program &p) { p.kernels[0].cubins["sm_"] = cubin("x"); },
       {"kernels[0].cubins: 'sm_'"}},
      {"CubinNotElf",
       [](Program &p) { p.kernels[1].cubins["sm_90"] = "PTX .version 8"; },
       {"kernels[1].cubins.sm_90", "ELF magic"}},
      {"CubinEmpty",
       [](Program &p) { p.kernels[2].cubins["sm_90"] = ""; },
       {"kernels[2].cubins.sm_90", "not a cubin"}},
      // Functions and tensors.
      {"FunctionNameEmpty",
       [](Program &p) { p.functions[1].name.clear(); },
       {"functions[1].name: empty"}},
      {"FunctionNameDuplicate",
       [](Program &p) { p.functions[1].name = "forward"; },
       {"functions[1].name: 'forward'", "a second function"}},
      {"FunctionArenaTooLarge",
       [](Program &p) { p.functions[1].arenaBytes = p.arenaBytes + 1; },
       {"functions[1].arenaBytes: 168961", "program's arena"}},
      {"TensorMaxShapeRank",
       [](Program &p) { p.functions[0].results[0].maxShape = {T}; },
       {"functions[0].results[0].maxShape", "has 1 dims but shape has 2"}},
      {"InPlaceOfNoSuchArgument",
       [](Program &p) { p.functions[1].results[0].inPlaceOf = 2; },
       {"functions[1].results[0].inPlaceOf: 2", "has 2 arguments"}},
      {"InPlaceOfAnotherTensor",
       [](Program &p) { p.functions[1].results[0].inPlaceOf = 1; },
       {"functions[1].results[0].inPlaceOf: 1", "argument 'gradients' differs"}},
      {"TensorMaxShapeNegative",
       [](Program &p) { p.functions[0].arguments[1].maxShape = {-9}; },
       {"functions[0].arguments[1].maxShape[0]: -9", ">= 0"}},
      {"TensorStaticDimDiffersFromBound",
       [](Program &p) {
         p.functions[0].results[0].maxShape = {T, H + 1};
       },
       {"functions[0].results[0].maxShape[1]: 65", "the static size 64"}},
      {"TensorDynamicDimDiffersFromBound",
       [](Program &p) {
         p.functions[0].results[0].maxShape = {T - 1, H};
       },
       {"functions[0].results[0].maxShape[0]: 255",
        "smaller than the bound 256"}},
      {"TensorScaledDimAboveBound",
       [](Program &p) {
         // tokens * 3 / 2 at T = 256 is 384.
         p.functions[0].results[0].shape[0] = dyn(0, 0, 3, 2);
       },
       {"functions[0].results[0].maxShape[0]: 256",
        "smaller than the bound 384"}},
      {"DimMultiplierZero",
       [](Program &p) { step(p, 3).args[3].value.multiplier = 0; },
       {"functions[0].steps[3].args[3].value.multiplier: 0", ">= 1"}},
      {"DimDivisorNegative",
       [](Program &p) { step(p, 1).gemm.m = dyn(0, 0, 1, -2); },
       {"functions[0].steps[1].gemm.m.divisor: -2", ">= 1"}},
      {"DimNotReduced",
       [](Program &p) { step(p, 1).gemm.m = dyn(0, 0, 2, 4); },
       {"functions[0].steps[1].gemm.m.divisor: 4", "not coprime",
        "multiplier 2"}},
      {"DimBoundOverflow",
       [](Program &p) {
         step(p, 3).args[3].value.multiplier = int64_t(1) << 60;
       },
       {"functions[0].steps[3].args[3].value.multiplier", "overflows"}},
      {"DimScaledBoundTooLargeForGemm",
       [](Program &p) { step(p, 1).gemm.m = dyn(0, 0, 2, 1); },
       {"functions[0].steps[1].gemm.a.maxBytes: 32768",
        "65536 bytes A (M 512"}},
      {"TensorDimStaticNegative",
       [](Program &p) {
         p.functions[0].results[0].shape[1] = stat(-2);
         p.functions[0].results[0].maxShape[1] = 0;
       },
       {"functions[0].results[0].shape[1]: -2", ">= 0"}},
      {"TensorDimArgumentMissing",
       [](Program &p) { p.functions[0].results[0].shape[0] = dyn(5, 0); },
       {"functions[0].results[0].shape[0].argument: 5", "has 5 arguments"}},
      {"TensorDimAxisPastRank",
       [](Program &p) { p.functions[0].arguments[1].shape[0] = dyn(3, 0); },
       {"functions[0].arguments[1].shape[0].axis: 0", "'seed'", "rank 0"}},
      {"TensorDimAxisNegative",
       [](Program &p) { p.functions[0].results[0].shape[0] = dyn(0, -1); },
       {"functions[0].results[0].shape[0].axis: -1"}},
      {"TensorDType",
       [](Program &p) {
         p.functions[0].arguments[0].dtype = static_cast<DType>(42);
       },
       {"functions[0].arguments[0].dtype: 42", "not a dtype"}},
      {"TensorKind",
       [](Program &p) {
         p.functions[1].arguments[0].kind = static_cast<ArgumentKind>(8);
       },
       {"functions[1].arguments[0].kind: 8", "not an argument kind"}},
      {"TensorBytesOverflow",
       [](Program &p) {
         p.functions[1].arguments[0].shape = {stat(int64_t(1) << 40),
                                              stat(int64_t(1) << 40)};
         p.functions[1].arguments[0].maxShape = {int64_t(1) << 40, int64_t(1)
                                                                       << 40};
       },
       {"functions[1].arguments[0].maxShape", "overflows 64 bits"}},
      // Buffers.
      {"ArenaRangeEndsPastArena",
       [](Program &p) {
         step(p, 0).args[2].buffer.maxBytes = p.arenaBytes + 1;
       },
       {"functions[0].steps[0].args[2].buffer.maxBytes: 168961",
        "ends past the end of the arena (arenaBytes 168960)"}},
      {"ArenaRangeStartsPastArena",
       [](Program &p) {
         step(p, 3).args[2].buffer.byteOffset = p.arenaBytes + 64;
       },
       {"functions[0].steps[3].args[2].buffer.byteOffset: 169024",
        "starts past the end of the arena"}},
      {"ArenaRangeOverflow",
       [](Program &p) {
         step(p, 3).args[2].buffer.byteOffset = 64;
         step(p, 3).args[2].buffer.maxBytes = ~uint64_t(0);
       },
       {"functions[0].steps[3].args[2].buffer.maxBytes", "overflows 64 bits"}},
      {"ArgumentIndexOutOfRange",
       [](Program &p) { step(p, 0).args[0].buffer.index = 5; },
       {"functions[0].steps[0].args[0].buffer.index: 5", "has 5 arguments"}},
      {"ArgumentRangePastTensor",
       [](Program &p) { step(p, 0).args[0].buffer.maxBytes = T * 4 + 1; },
       {"functions[0].steps[0].args[0].buffer.maxBytes: 1025",
        "argument 0 'input_ids' (1024 bytes at its maxShape)"}},
      {"ResultIndexOutOfRange",
       [](Program &p) { step(p, 3).args[1].buffer.index = 2; },
       {"functions[0].steps[3].args[1].buffer.index: 2", "has 2 results"}},
      {"ResultRangePastTensor",
       [](Program &p) { step(p, 3).args[1].buffer.byteOffset = 2; },
       {"functions[0].steps[3].args[1].buffer.maxBytes: 32768",
        "result 0 'hidden' (32768 bytes at its maxShape)"}},
      {"BufferSpace",
       [](Program &p) {
         step(p, 0).args[1].buffer.space = static_cast<BufferRef::Space>(3);
       },
       {"functions[0].steps[0].args[1].buffer.space: 3", "not a buffer space"}},
      // Launch steps.
      {"LaunchKernelIndex",
       [](Program &p) { step(p, 3).kernel = 3; },
       {"functions[0].steps[3].kernel: 3", "the program has 3 kernels"}},
      {"LaunchArgCount",
       [](Program &p) { step(p, 0).args.pop_back(); },
       {"functions[0].steps[0].args: 3 arguments", "'embedding_0' takes 4"}},
      {"LaunchArgKind",
       [](Program &p) { step(p, 0).args[3] = pointer(arena(0, 8)); },
       {"functions[0].steps[0].args[3].kind: pointer", "is an int64"}},
      {"LaunchInt64ArgDim",
       [](Program &p) { step(p, 3).args[3].value = dyn(2, 1); },
       {"functions[0].steps[3].args[3].value.axis: 1", "'weights'", "rank 1"}},
      {"StepKind",
       [](Program &p) { step(p, 1).kind = static_cast<Step::Kind>(9); },
       {"functions[0].steps[1].kind: 9", "not a step kind"}},
      // Copy steps.
      {"CopyDestinationTooSmall",
       [](Program &p) { step(p, 4).copyDestination.maxBytes = 4; },
       {"functions[0].steps[4].copyDestination.maxBytes: 4",
        "smaller than the 8 bytes the copy"}},
      {"CopySourcePastArgument",
       [](Program &p) { step(p, 4).copySource.maxBytes = 16; },
       {"functions[0].steps[4].copySource.maxBytes: 16",
        "argument 3 'seed' (8 bytes at its maxShape)"}},
      {"CopyOverlaps",
       [](Program &p) {
         step(p, 4).copySource = arena(kX, 1024);
         step(p, 4).copyDestination = arena(kX + 512, 1024);
       },
       {"functions[0].steps[4].copyDestination.byteOffset: 512",
        "overlaps its source [0, 1024)"}},
      // GEMM.
      {"GemmStaticDimZero",
       [](Program &p) { step(p, 1).gemm.n = stat(0); },
       {"functions[0].steps[1].gemm.n: 0", ">= 1"}},
      {"GemmDimArgument",
       [](Program &p) { step(p, 1).gemm.m = dyn(9, 0); },
       {"functions[0].steps[1].gemm.m.argument: 9"}},
      {"GemmLdaBelowK",
       [](Program &p) { step(p, 1).gemm.lda = H - 1; },
       {"functions[0].steps[1].gemm.lda: 63", "less than K 64", "[M, K]"}},
      {"GemmLdaTransposed",
       [](Program &p) { step(p, 1).gemm.transposeA = true; },
       {"functions[0].steps[1].gemm.lda: 64", "less than M 256", "transposed"}},
      {"GemmLdbTransposed",
       [](Program &p) { step(p, 1).gemm.ldb = 32; },
       {"functions[0].steps[1].gemm.ldb: 32", "less than K 64", "[N, K]"}},
      {"GemmLdbNotTransposed",
       [](Program &p) { step(p, 1).gemm.transposeB = false; },
       {"functions[0].steps[1].gemm.ldb: 64", "less than N 192"}},
      {"GemmLdcBelowN",
       [](Program &p) { step(p, 1).gemm.ldc = 191; },
       {"functions[0].steps[1].gemm.ldc: 191", "less than N 192"}},
      {"GemmLdNonPositive",
       [](Program &p) { step(p, 1).gemm.ldc = -192; },
       {"functions[0].steps[1].gemm.ldc: -192", ">= 1"}},
      {"GemmNegativeStride",
       [](Program &p) { step(p, 1).gemm.strideB = -1; },
       {"functions[0].steps[1].gemm.strideB: -1", ">= 0"}},
      {"GemmBatchesOfCOverlap",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.batch = stat(2);
         g.strideA = 0;
         g.strideC = 100;
       },
       {"functions[0].steps[1].gemm.strideC: 100", "batches of C overlap"}},
      {"GemmATooSmall",
       [](Program &p) { step(p, 1).gemm.a.maxBytes = T * H * 2 - 2; },
       {"functions[0].steps[1].gemm.a.maxBytes: 32766",
        "smaller than the 32768 bytes A", "M 256"}},
      {"GemmBTooSmall",
       [](Program &p) { step(p, 1).gemm.bType = DType::F32; },
       {"functions[0].steps[1].gemm.b.maxBytes: 24576", "49152 bytes B"}},
      {"GemmCTooSmallForBatch",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.batch = stat(2);
         g.strideA = 0;
         g.strideB = 0;
         g.strideC = T * 3 * H;
       },
       {"functions[0].steps[1].gemm.c.maxBytes: 98304", "196608 bytes C",
        "batch 2"}},
      {"GemmBiasTooSmall",
       [](Program &p) { step(p, 1).gemm.bias.maxBytes = 2 * H; },
       {"functions[0].steps[1].gemm.bias.maxBytes: 128", "384 bytes the bias"}},
      {"GemmBiasGradNeedsTransposedA",
       [](Program &p) { step(p, 1).gemm.epilogue = GemmEpilogue::BiasGradA; },
       {"functions[0].steps[1].gemm.epilogue", "transposed A"}},
      {"GemmBiasGradTooSmall",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         // dW [3H, H] = dY^T x: A = dY [T, 3H] transposed, K = T.
         g.epilogue = GemmEpilogue::BiasGradA;
         g.transposeA = true;
         g.transposeB = false;
         g.m = stat(3 * H);
         g.n = stat(H);
         g.k = dyn(0, 0);
         g.a = arena(kQkv, T * 3 * H * 2);
         g.lda = 3 * H;
         g.b = arena(kX, T * H * 2);
         g.ldb = H;
         g.c = argument(2, 12800, 3 * H * H * 2);
         g.ldc = H;
         g.biasGrad = arena(kOut, 2 * H);
       },
       {"functions[0].steps[1].gemm.biasGrad.maxBytes: 128",
        "384 bytes the bias gradient [M]"}},
      {"GemmDTypeNotFloat",
       [](Program &p) { step(p, 1).gemm.aType = DType::I32; },
       {"functions[0].steps[1].gemm.aType: i32", "f32, f16 or bf16"}},
      {"GemmEpilogueEnum",
       [](Program &p) {
         step(p, 1).gemm.epilogue = static_cast<GemmEpilogue>(99);
       },
       {"functions[0].steps[1].gemm.epilogue: 99", "not an epilogue"}},
      // Activation epilogues (cuBLASLt's rules): the aux leading dimension,
      // the aux and bias-gradient sizes, batch 1, the bias in c's dtype.
      {"GemmGeluAuxLdNotMultipleOf8",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::GeluAuxBias;
         g.aux = arena(kQkv, T * 3 * H * 2);
         g.auxLd = 3 * H + 4;
       },
       {"functions[0].steps[1].gemm.auxLd: 196", "multiple of 8 elements",
        ">= N 192", "EPILOGUE_AUX_LD"}},
      {"GemmReluAuxLdBelowN",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::ReluAuxBias;
         g.aux = arena(kOut, T * 128 / 8);
         g.auxLd = 128;
       },
       {"functions[0].steps[1].gemm.auxLd: 128", "multiple of 128 bits",
        ">= N 192"}},
      {"GemmReluMaskTooSmall",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::ReluAuxBias;
         g.aux = arena(kOut, T * 256 / 8 - 1);
         g.auxLd = 256;
       },
       {"functions[0].steps[1].gemm.aux.maxBytes: 8191",
        "8192 bytes the ReLU bit mask [M, auxLd bits]"}},
      {"GemmGeluInputTooSmall",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::DGelu;
         g.aux = arena(kQkv, T * 3 * H * 2 - 2);
         g.auxLd = 3 * H;
       },
       {"functions[0].steps[1].gemm.aux.maxBytes: 98302",
        "98304 bytes the GELU input [M, auxLd]"}},
      {"GemmActivationBatched",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::GeluBias;
         g.batch = stat(2);
         g.strideA = T * H;
         g.strideC = T * 3 * H;
       },
       {"functions[0].steps[1].gemm.epilogue", "gelu_bias: needs batch 1"}},
      {"GemmActivationBiasDType",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::ReluBias;
         g.biasType = DType::F32;
         g.bias = arena(kLse, 3 * H * 4);
       },
       {"functions[0].steps[1].gemm.biasType: f32", "relu_bias",
        "c's dtype f16"}},
      {"GemmDReluBiasGradTooSmall",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.epilogue = GemmEpilogue::DReluBGrad;
         g.aux = arena(kOut, T * 256 / 8);
         g.auxLd = 256;
         g.biasGrad = arena(kLse, 3 * H * 2 - 2);
       },
       {"functions[0].steps[1].gemm.biasGrad.maxBytes: 382",
        "384 bytes the bias gradient [N]"}},
      {"GemmExtentOverflow",
       [](Program &p) {
         Gemm &g = step(p, 1).gemm;
         g.batch = stat(3);
         g.strideA = int64_t(1) << 62;
         g.strideC = int64_t(1) << 62;
       },
       {"functions[0].steps[1].gemm.a", "overflows 64 bits"}},
      // Attention.
      {"AttentionHeadsZero",
       [](Program &p) { step(p, 2).attention.heads = 0; },
       {"functions[0].steps[2].attention.heads: 0", ">= 1"}},
      {"AttentionKvHeadsZero",
       [](Program &p) { step(p, 2).attention.kvHeads = 0; },
       {"functions[0].steps[2].attention.kvHeads: 0", ">= 1"}},
      {"AttentionKvHeadsDoNotDivide",
       [](Program &p) { step(p, 2).attention.kvHeads = 3; },
       {"functions[0].steps[2].attention.kvHeads: 3",
        "does not divide heads 4"}},
      {"AttentionHeadDimZero",
       [](Program &p) { step(p, 2).attention.headDim = 0; },
       {"functions[0].steps[2].attention.headDim: 0"}},
      {"AttentionScaleNaN",
       [](Program &p) { step(p, 2).attention.scale = std::nanf(""); },
       {"functions[0].steps[2].attention.scale", "finite and > 0"}},
      {"AttentionDropoutOne",
       [](Program &p) { step(p, 2).attention.dropoutRate = 1.0f; },
       {"functions[0].steps[2].attention.dropoutRate", "[0, 1)"}},
      {"AttentionStrideBelowWidth",
       [](Program &p) { step(p, 2).attention.strideO = 63; },
       {"functions[0].steps[2].attention.strideO: 63", "row width 64"}},
      {"AttentionQTooSmall",
       [](Program &p) { step(p, 2).attention.q.maxBytes -= 2; },
       {"functions[0].steps[2].attention.q.maxBytes: 98046",
        "98048 bytes q [Tq, heads, headDim]", "Tq 256"}},
      {"AttentionKRangePastArena",
       [](Program &p) { step(p, 2).attention.k.byteOffset = p.arenaBytes - 8; },
       {"functions[0].steps[2].attention.k.maxBytes", "ends past the end of "
                                                      "the arena"}},
      {"AttentionLseTooSmall",
       [](Program &p) { step(p, 2).attention.lse.maxBytes = T * 4; },
       {"functions[0].steps[2].attention.lse.maxBytes: 1024",
        "4096 bytes lse"}},
      {"AttentionCuSeqlensTooSmall",
       [](Program &p) { step(p, 2).attention.cuSeqlensK.maxBytes = 32; },
       {"functions[0].steps[2].attention.cuSeqlensK.maxBytes: 32",
        "36 bytes cu_seqlens_k"}},
      {"AttentionFallbackPastEnd",
       [](Program &p) { step(p, 2).attention.fallbackSteps = 3; },
       {"functions[0].steps[2].attention.fallbackSteps: 3", "only 2 steps follow"}},
      {"AttentionFallbackNotLaunches",
       [](Program &p) { step(p, 2).attention.fallbackSteps = 2; },
       {"functions[0].steps[2].attention.fallbackSteps: 2", "step 4 is not a kernel launch"}},
      {"AttentionMaxSeqLenNegative",
       [](Program &p) { step(p, 2).attention.maxSeqLen = -1; },
       {"functions[0].steps[2].attention.maxSeqLen: -1", ">= 0"}},
      {"AttentionBatchPlusOneZero",
       [](Program &p) { step(p, 2).attention.batchPlusOne = stat(0); },
       {"functions[0].steps[2].attention.batchPlusOne: 0", "B + 1"}},
      {"AttentionDropoutNeedsSeed",
       [](Program &p) { step(p, 2).attention.seed = BufferRef(); },
       {"functions[0].steps[2].attention.seed.maxBytes: 0", "dropout seed"}},
      {"AttentionBackwardNeedsGradients",
       [](Program &p) { step(p, 2).attention.backward = true; },
       {"functions[0].steps[2].attention.strideDO: 0", "row width 64"}},
      {"AttentionBackwardDqTooSmall",
       [](Program &p) {
         Attention &a = step(p, 2).attention;
         a.backward = true;
         a.strideDO = a.strideDQ = H;
         a.strideDK = a.strideDV = 32;
         a.dout = arena(kOut, T * H * 2);
         a.dq = arena(kX, T * H * 2 - 64);
         a.dk = arena(kQkv, T * 32 * 2);
         a.dv = arena(kQkv + T * 32 * 2, T * 32 * 2);
       },
       {"functions[0].steps[2].attention.dq.maxBytes: 32704",
        "32768 bytes dq"}},
      {"AttentionDType",
       [](Program &p) { step(p, 2).attention.dtype = DType::I64; },
       {"functions[0].steps[2].attention.dtype: i64"}},
  };
}

class ValidationRule : public ::testing::TestWithParam<Rule> {};

TEST_P(ValidationRule, IsEnforced) {
  Program p = makeProgram();
  GetParam().breakIt(p);
  std::vector<std::string> expect = GetParam().expect;
  // Printed: the messages are part of the interface (and easy to review).
  std::cout << expectError([&] { validateProgram(p); }, expect) << "\n";
  // The writer refuses it too (validation comes first).
  expectError([&] { serializeBundle(p); }, expect);
}

INSTANTIATE_TEST_SUITE_P(Bundle, ValidationRule, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule> &info) {
                           return info.param.name;
                         });

// Every activation epilogue, with what it reads and writes, is valid and
// round-trips through the manifest (epilogue names and aux fields).
TEST(BundleTest, ActivationEpiloguesRoundTrip) {
  const GemmEpilogue kinds[] = {
      GemmEpilogue::Relu,       GemmEpilogue::ReluAux,   GemmEpilogue::ReluBias,
      GemmEpilogue::ReluAuxBias, GemmEpilogue::Gelu,     GemmEpilogue::GeluAux,
      GemmEpilogue::GeluBias,   GemmEpilogue::GeluAuxBias, GemmEpilogue::DRelu,
      GemmEpilogue::DReluBGrad, GemmEpilogue::DGelu,     GemmEpilogue::DGeluBGrad};
  for (GemmEpilogue e : kinds) {
    SCOPED_TRACE(epilogueName(e));
    Program p = makeProgram();
    Gemm &g = step(p, 1).gemm;
    g.epilogue = e;
    if (epilogueWritesAux(e) || epilogueReadsAux(e)) {
      // The validator checks ranges, not aliasing: the GELU input may sit
      // over qkv here.
      bool relu = epilogueIsRelu(e);
      g.auxLd = relu ? 256 : 3 * H;
      g.aux = relu ? arena(kOut, T * 256 / 8) : arena(kQkv, T * 3 * H * 2);
    }
    if (epilogueHasBiasGrad(e))
      g.biasGrad = arena(kLse, 3 * H * 2);
    EXPECT_NO_THROW(validateProgram(p));
    std::string bytes = serializeBundle(p);
    EXPECT_TRUE(parseBundle(bytes, "activation") == p);
    std::vector<BundleSection> sections = splitBundle(bytes, "activation");
    json m = json::parse(sections[0].payload);
    const json &gj = m["functions"][0]["steps"][1]["gemm"];
    EXPECT_EQ(gj["epilogue"], epilogueName(e));
    EXPECT_EQ(gj["auxLd"], g.auxLd);
    EXPECT_EQ(gj["aux"]["byteOffset"], g.aux.byteOffset);
  }
  // aux and auxLd take part in equality.
  Program p = makeProgram(), q = makeProgram();
  step(q, 1).gemm.auxLd = 8;
  EXPECT_FALSE(p == q);
}

TEST(BundleTest, BackwardAttentionAndBiasGradAreValid) {
  // The fixes for the rules above give valid programs.
  Program p = makeProgram();
  Attention &a = step(p, 2).attention;
  a.backward = true;
  a.strideDO = a.strideDQ = H;
  a.strideDK = a.strideDV = 32;
  a.dout = arena(kOut, T * H * 2);
  a.dq = arena(kX, T * H * 2);
  a.dk = arena(kQkv, T * 32 * 2);
  a.dv = arena(kQkv + T * 32 * 2, T * 32 * 2);
  a.dropoutRate = 0; // seed and offset are then unused
  a.seed = a.offset = BufferRef();
  EXPECT_NO_THROW(validateProgram(p));
  EXPECT_TRUE(parseBundle(serializeBundle(p), "backward") == p);
}

//===----------------------------------------------------------------------===//
// The container: corruption of any kind is refused
//===----------------------------------------------------------------------===//

class BundleFileTest : public ::testing::Test {
protected:
  std::string bytes = serializeBundle(makeProgram());
  uint32_t count() const { return getU32(bytes, 12); }
  size_t entry(size_t i) const { return 56 + i * 56; }
  uint64_t offsetOf(size_t i) const { return getU64(bytes, entry(i) + 8); }
  uint64_t sizeOf(size_t i) const { return getU64(bytes, entry(i) + 16); }
  void expectRejected(const std::string &b,
                      const std::vector<std::string> &substrings) {
    expectError([&] { parseBundle(b, "t.ls2b"); }, substrings);
  }
};

TEST_F(BundleFileTest, Truncated) {
  expectRejected("", {"t.ls2b: header: 0 bytes: truncated"});
  expectRejected(bytes.substr(0, 55), {"header: 55 bytes: truncated"});
  for (size_t n : {size_t(56), size_t(200), bytes.size() / 2, bytes.size() - 1})
    expectRejected(
        bytes.substr(0, n),
        {"header.fileSize", "the file has " + std::to_string(n), "truncated"});
}

TEST_F(BundleFileTest, TruncatedFileOnDisk) {
  TempDir dir;
  std::string path = dir.path + "/cut.ls2b";
  writeRaw(path, bytes.substr(0, bytes.size() - 10));
  expectError([&] { readBundle(path); },
              {path + ": header.fileSize", "truncated"});
}

TEST_F(BundleFileTest, Extended) {
  expectRejected(bytes + std::string(64, '\0'),
                 {"header.fileSize", "extra bytes at the end"});
}

TEST_F(BundleFileTest, WrongMagic) {
  std::string b = bytes;
  b[3] = 'X';
  expectRejected(b, {"header.magic", "\"LS2XNDL\\x00\"", "not a bundle"});
  expectRejected(std::string(100, 'A'), {"header.magic", "not a bundle"});
}

TEST_F(BundleFileTest, WrongVersion) {
  std::string b = bytes;
  putU32(b, 8, 4);
  expectRejected(b, {"header.version: 4", "unsupported format version",
                     "reads versions 1 to 3"});
  putU32(b, 8, 0);
  expectRejected(b, {"header.version: 0"});
}

TEST_F(BundleFileTest, BadSectionChecksum) {
  std::string b = bytes;
  // A byte inside the second cubin of kernel 0 (section 3).
  b[offsetOf(3) + 9] ^= 0x20;
  expectRejected(b, {"sections[3].sha256", "checksum mismatch"});
  b = bytes;
  b[offsetOf(0) + 5] ^= 1; // the manifest
  expectRejected(b, {"sections[0].sha256", "checksum mismatch"});
}

TEST_F(BundleFileTest, BadTableChecksum) {
  std::string b = bytes;
  b[entry(2) + 30] ^= 1; // inside a section's stored checksum
  expectRejected(b, {"header.tableSha256", "section table is corrupt"});
  b = bytes;
  b[24] ^= 1;
  expectRejected(b, {"header.tableSha256"});
}

TEST_F(BundleFileTest, SectionCount) {
  std::string b = bytes;
  putU32(b, 12, 0);
  expectRejected(b, {"header.sectionCount: 0"});
  putU32(b, 12, 0xFFFFFFFF);
  expectRejected(b, {"header.sectionCount: 4294967295", "past the end"});
  // One section fewer: the table checksum covers a different range.
  putU32(b, 12, count() - 1);
  expectRejected(b, {"header.tableSha256"});
}

TEST_F(BundleFileTest, SectionTableFields) {
  // Each edit is resealed so the layout rule, not the checksum, refuses it.
  auto edited = [&](size_t at, uint64_t value, bool wide) {
    std::string b = bytes;
    if (wide)
      putU64(b, at, value);
    else
      putU32(b, at, static_cast<uint32_t>(value));
    resealTable(b);
    return b;
  };
  expectRejected(edited(entry(1), 7, false),
                 {"sections[1].kind: 7", "unknown section kind"});
  expectRejected(edited(entry(0), 2, false),
                 {"sections[0].kind: 2", "must be the manifest"});
  expectRejected(edited(entry(4), 1, false),
                 {"sections[4].kind", "a second manifest"});
  expectRejected(edited(entry(2) + 4, 1, false),
                 {"sections[2].reserved: 1", "must be 0"});
  expectRejected(edited(entry(2) + 8, offsetOf(2) + 1, true),
                 {"sections[2].offset", "not a multiple of 64"});
  expectRejected(edited(entry(1) + 8, 0, true),
                 {"sections[1].offset: 0", "inside the header or section "
                                           "table"});
  expectRejected(edited(entry(5) + 16, bytes.size(), true),
                 {"sections[5].size", "past the end of the file"});
  expectRejected(edited(entry(5) + 16, ~uint64_t(0), true),
                 {"sections[5].size", "past the end of the file"});
  expectRejected(edited(entry(5) + 8, ~uint64_t(0) - 63, true),
                 {"sections[5].size", "past the end of the file"});
  // Section 2 moved onto section 1.
  expectRejected(edited(entry(2) + 8, offsetOf(1), true),
                 {"overlaps sections[1]"});
  // Section 8 (the last) made 1 byte shorter: its last byte is now outside
  // every section, and not zero.
  expectRejected(edited(entry(8) + 16, sizeOf(8) - 1, true),
                 {"padding", "byte " + std::to_string(bytes.size() - 1)});
  // Two sections' checksums swapped (table resealed): the payloads no longer
  // match.
  std::string b = bytes;
  std::string h2 = b.substr(entry(2) + 24, 32);
  b.replace(entry(2) + 24, 32, b.substr(entry(3) + 24, 32));
  b.replace(entry(3) + 24, 32, h2);
  resealTable(b);
  expectRejected(b, {"sections[2].sha256", "checksum mismatch"});
}

TEST_F(BundleFileTest, NonzeroPadding) {
  std::string b = bytes;
  uint64_t tableEnd = 56 + count() * 56;
  ASSERT_LT(tableEnd, offsetOf(0));
  b[tableEnd] = 1;
  expectRejected(
      b, {"padding", "byte " + std::to_string(tableEnd), "must be zero"});
  b = bytes;
  ASSERT_NE((offsetOf(1) + sizeOf(1)) % 64, 0u);
  b[offsetOf(1) + sizeOf(1)] = 'x'; // after the first source
  expectRejected(b, {"padding", "not zero"});
}

TEST_F(BundleFileTest, EverySingleByteChangeIsRefused) {
  // Every byte is covered by a check: header fields, checksums, zero
  // padding. Flip each byte of the header and table and every 11th byte of
  // the rest.
  uint64_t tableEnd = 56 + count() * 56;
  size_t refused = 0, tried = 0;
  for (size_t i = 0; i < bytes.size(); i += i < tableEnd ? 1 : 11) {
    std::string b = bytes;
    b[i] ^= 0x5A;
    ++tried;
    try {
      parseBundle(b, "flip");
      ADD_FAILURE() << "byte " << i << " changed, bundle still loads";
    } catch (const BundleError &) {
      ++refused;
    }
  }
  EXPECT_EQ(refused, tried);
}

TEST_F(BundleFileTest, UnreadableFiles) {
  TempDir dir;
  expectError([&] { readBundle(dir.path + "/missing.ls2b"); },
              {"missing.ls2b: file: cannot open", "No such file"});
  expectError([&] { readBundle(dir.path); },
              {"file: cannot read", "Is a directory"});
}

//===----------------------------------------------------------------------===//
// The manifest: JSON types, keys and section references
//===----------------------------------------------------------------------===//

TEST_F(BundleFileTest, ManifestEditsStillLoadWhenValid) {
  // The harness itself: an edit that keeps the program valid loads.
  std::string b =
      editManifest(bytes, [](json &m) { m["modelName"] = "renamed"; });
  EXPECT_EQ(parseBundle(b, "t").modelName, "renamed");
}

TEST_F(BundleFileTest, ManifestStringWhereNumberExpected) {
  expectRejected(editManifest(bytes, [](json &m) { m["arenaBytes"] = "lots"; }),
                 {"t.ls2b: arenaBytes: \"lots\"",
                  "expected an unsigned integer, found a string"});
  expectRejected(
      editManifest(
          bytes,
          [](json &m) { m["functions"][0]["steps"][1]["gemm"]["lda"] = "64"; }),
      {"functions[0].steps[1].gemm.lda: \"64\"", "expected an integer"});
}

TEST_F(BundleFileTest, ManifestNegativeWhereUnsigned) {
  expectRejected(
      editManifest(
          bytes,
          [](json &m) {
            m["functions"][1]["steps"][0]["args"][1]["buffer"]["byteOffset"] =
                -1;
          }),
      {"functions[1].steps[0].args[1].buffer.byteOffset: -1", "must be >= 0"});
}

TEST_F(BundleFileTest, ManifestFractionWhereInteger) {
  expectRejected(
      editManifest(
          bytes,
          [](json &m) { m["kernels"][0]["launch"]["blockThreads"] = 256.5; }),
      {"kernels[0].launch.blockThreads: 256.5", "found a fractional number"});
}

TEST_F(BundleFileTest, ManifestOutOfRangeIntegers) {
  expectRejected(
      editManifest(bytes,
                   [](json &m) {
                     m["kernels"][0]["launch"]["blockThreads"] = 4294967296u;
                   }),
      {"kernels[0].launch.blockThreads: 4294967296", "out of range"});
  expectRejected(
      editManifest(bytes,
                   [](json &m) {
                     m["functions"][0]["steps"][1]["gemm"]["ldc"] = uint64_t(1)
                                                                    << 63;
                   }),
      {"functions[0].steps[1].gemm.ldc: 9223372036854775808", "out of range"});
  expectRejected(
      editManifest(bytes,
                   [](json &m) {
                     m["functions"][0]["steps"][1]["gemm"]["m"]["argument"] =
                         -1;
                   }),
      {"functions[0].steps[1].gemm.m.argument: -1", "out of range"});
  expectRejected(
      editManifest(bytes,
                   [](json &m) {
                     m["functions"][0]["steps"][2]["attention"]["scale"] =
                         1e300;
                   }),
      {"attention.scale", "32-bit float"});
}

TEST_F(BundleFileTest, ManifestWrongContainerTypes) {
  expectRejected(editManifest(bytes, [](json &m) { m["kernels"] = 3; }),
                 {"kernels: 3", "expected an array"});
  expectRejected(
      editManifest(bytes, [](json &m) { m["functions"][0]["steps"][0] = 1; }),
      {"functions[0].steps[0]: 1", "expected an object"});
  expectRejected(editManifest(bytes,
                              [](json &m) {
                                m["functions"][0]["steps"][1]["gemm"]["k"] =
                                    "64";
                              }),
                 {"gemm.k: \"64\"", "expected a dim"});
  expectRejected(
      editManifest(bytes,
                   [](json &m) {
                     m["functions"][0]["steps"][2]["attention"]["causal"] = 1;
                   }),
      {"attention.causal: 1", "expected true or false"});
  expectRejected(editManifest(bytes, [](json &m) { m = json::array(); }),
                 {"t.ls2b: manifest: an array: expected an object"});
}

TEST_F(BundleFileTest, ManifestDimObjects) {
  auto value = [](json &m) -> json & {
    return m["functions"][0]["steps"][3]["args"][3]["value"];
  };
  expectRejected(
      editManifest(bytes, [&](json &m) { value(m)["multiplier"] = "64"; }),
      {"args[3].value.multiplier: \"64\"", "expected an integer"});
  expectRejected(editManifest(bytes, [&](json &m) { value(m)["scale"] = 2; }),
                 {"args[3].value.scale: unknown key"});
  expectRejected(editManifest(bytes, [&](json &m) { value(m).erase("axis"); }),
                 {"args[3].value.axis: missing"});
  // multiplier and divisor are optional (1).
  Program p = parseBundle(editManifest(bytes,
                                       [&](json &m) {
                                         value(m)["divisor"] = 1;
                                         value(m).erase("multiplier");
                                       }),
                          "t");
  EXPECT_EQ(p.functions[0].steps[3].args[3].value.multiplier, 1);
}

TEST_F(BundleFileTest, ManifestMissingAndUnknownKeys) {
  expectRejected(
      editManifest(bytes,
                   [](json &m) { m["functions"][0].erase("arenaBytes"); }),
      {"functions[0].arenaBytes: missing"});
  expectRejected(
      editManifest(bytes,
                   [](json &m) {
                     m["functions"][0]["steps"][2]["attention"].erase("lse");
                   }),
      {"functions[0].steps[2].attention.lse: missing"});
  expectRejected(editManifest(bytes, [](json &m) { m["extra"] = 1; }),
                 {"extra: unknown key"});
  expectRejected(editManifest(bytes,
                              [](json &m) {
                                m["functions"][0]["steps"][0]["gemm"] =
                                    json::object();
                              }),
                 {"functions[0].steps[0].gemm: unknown key"});
}

TEST_F(BundleFileTest, ManifestBadEnumSpellings) {
  expectRejected(
      editManifest(
          bytes,
          [](json &m) {
            m["functions"][0]["steps"][0]["args"][0]["buffer"]["space"] =
                "heap";
          }),
      {"args[0].buffer.space: \"heap\"",
       "expected \"arena\", \"argument\" or \"result\""});
  expectRejected(editManifest(bytes,
                              [](json &m) {
                                m["functions"][0]["arguments"][0]["dtype"] =
                                    "u8";
                              }),
                 {"functions[0].arguments[0].dtype: \"u8\"", "\"bf16\""});
  expectRejected(editManifest(bytes,
                              [](json &m) {
                                m["functions"][0]["steps"][0]["kind"] = "move";
                              }),
                 {"functions[0].steps[0].kind: \"move\"",
                  "\"launch\", \"gemm\", \"attention\" or \"copy\""});
}

TEST_F(BundleFileTest, ManifestVersionAndSyntax) {
  expectRejected(editManifest(bytes, [](json &m) { m["formatVersion"] = 1; }),
                 {"formatVersion: 1", "differs from the header's format version 3"});
  std::vector<BundleSection> sections = splitBundle(bytes, "t");
  sections[0].payload = "{\"modelName\": ";
  expectRejected(assembleBundle(sections),
                 {"sections[0]", "manifest is not valid JSON"});
  sections[0].payload = std::string(100, '[') + std::string(100, ']');
  expectRejected(assembleBundle(sections),
                 {"sections[0]", "nests deeper than 32"});
}

// Version 2 bundles (before the attention fallback) load with no fallback
// and an unknown sequence bound; version 3 requires both keys.
TEST_F(BundleFileTest, Version2BundlesStillLoad) {
  auto asVersion2 = [&](const std::function<void(json &)> &edit) {
    return asVersion(bytes, 2, edit);
  };
  Program before3 = makeProgram();
  step(before3, 2).attention.fallbackSteps = 0;
  step(before3, 2).attention.maxSeqLen = 0;
  EXPECT_TRUE(parseBundle(asVersion2([](json &) {}), "v2") == before3);
  expectRejected(asVersion2([](json &m) {
                   m["functions"][0]["steps"][2]["attention"]["maxSeqLen"] = 8;
                 }),
                 {"functions[0].steps[2].attention.maxSeqLen",
                  "unknown key (format version 2 has no such field)"});
  expectRejected(editManifest(bytes,
                              [](json &m) {
                                m["functions"][0]["steps"][2]["attention"].erase(
                                    "fallbackSteps");
                              }),
                 {"functions[0].steps[2].attention.fallbackSteps", "missing"});
}

// Version 1 bundles (before the activation epilogues: no `aux`, `auxLd`)
// still load; in version 1 those keys and the new epilogue names are
// unknown, and version 2 requires them.
TEST_F(BundleFileTest, Version1BundlesStillLoad) {
  auto asVersion1 = [&](const std::function<void(json &)> &edit) {
    return asVersion(bytes, 1, edit);
  };
  Program before3 = makeProgram(); // no attention fallback or bound before 3
  step(before3, 2).attention.fallbackSteps = 0;
  step(before3, 2).attention.maxSeqLen = 0;
  EXPECT_TRUE(parseBundle(asVersion1([](json &) {}), "v1") == before3);
  expectRejected(asVersion1([](json &m) {
                   m["functions"][0]["steps"][1]["gemm"]["auxLd"] = 0;
                 }),
                 {"functions[0].steps[1].gemm.auxLd",
                  "unknown key (format version 1 has no such field)"});
  expectRejected(asVersion1([](json &m) {
                   m["functions"][0]["steps"][1]["gemm"]["epilogue"] = "gelu_bias";
                 }),
                 {"functions[0].steps[1].gemm.epilogue: \"gelu_bias\"",
                  "\"bias_grad_a\""});
  expectRejected(editManifest(bytes,
                              [](json &m) {
                                m["functions"][0]["steps"][1]["gemm"].erase("auxLd");
                              }),
                 {"functions[0].steps[1].gemm.auxLd", "missing"});
}

TEST_F(BundleFileTest, ManifestSectionReferences) {
  // The source of kernel 0 pointing at a cubin section.
  expectRejected(
      editManifest(bytes, [](json &m) { m["kernels"][0]["source"] = 2; }),
      {"kernels[0].source: 2", "has kind 3", "expected a source"});
  // A section referenced twice.
  expectRejected(
      editManifest(bytes,
                   [](json &m) { m["kernels"][1]["cubins"]["sm_80"] = 2; }),
      {"kernels[1].cubins.sm_80: 2", "already referenced"});
  // Out of range.
  expectRejected(
      editManifest(bytes,
                   [](json &m) { m["kernels"][2]["cubins"]["sm_90"] = 9; }),
      {"kernels[2].cubins.sm_90: 9", "the bundle has 9 sections"});
  // The manifest itself is not a source.
  expectRejected(
      editManifest(bytes, [](json &m) { m["kernels"][0]["source"] = 0; }),
      {"kernels[0].source: 0", "has kind 1"});
  // A section nobody references.
  expectRejected(
      editManifest(bytes,
                   [](json &m) { m["kernels"][2]["cubins"].erase("sm_90"); }),
      {"sections[8]", "not referenced by any kernel"});
  // Cubins must be an object.
  expectRejected(
      editManifest(
          bytes, [](json &m) { m["kernels"][2]["cubins"] = json::array({8}); }),
      {"kernels[2].cubins: an array", "expected an object"});
}

TEST_F(BundleFileTest, ValidatorRunsOnLoad) {
  // Well-formed JSON, valid checksums, an invalid program.
  expectRejected(
      editManifest(
          bytes,
          [](json &m) { m["kernels"][1]["launch"]["blockThreads"] = 48; }),
      {"t.ls2b: kernels[1].launch.blockThreads: 48", "multiple of 32"});
  std::vector<BundleSection> sections = splitBundle(bytes, "t");
  sections[3].payload = "not elf";
  expectRejected(assembleBundle(sections),
                 {"kernels[0].cubins.sm_90", "ELF magic"});
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

TEST(BundleTest, WriteInvalidProgramLeavesNothing) {
  TempDir dir;
  std::string path = dir.path + "/bad.ls2b";
  Program p = makeProgram();
  step(p, 1).gemm.lda = 1;
  expectError([&] { writeBundle(p, path); },
              {path + ": functions[0].steps[1].gemm.lda: 1"});
  EXPECT_TRUE(dir.entries().empty());
  // An existing bundle is left as it was.
  writeBundle(makeProgram(), path);
  std::string before = readFile(path);
  expectError([&] { writeBundle(p, path); }, {"gemm.lda"});
  EXPECT_EQ(readFile(path), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"bad.ls2b"});
}

TEST(BundleTest, WriteToMissingDirectoryThrowsFileWriteError) {
  TempDir dir;
  EXPECT_THROW(writeBundle(makeProgram(), dir.path + "/no/such/dir/x.ls2b"),
               ls2c::FileWriteError);
  EXPECT_TRUE(dir.entries().empty());
}

} // namespace
