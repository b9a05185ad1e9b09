//===- BundleFuzzTest.cpp - mutated bundles never crash the loader --------===//
//
// Thousands of deterministic mutations (std::mt19937, fixed seeds) of a
// valid bundle. Each mutated bundle must either load, and then pass
// validateProgram and round-trip through serializeBundle, or be refused with
// a BundleError. Any other exception fails the test, and a crash or an
// ASan/UBSan report fails the sanitizer build's run of it.
//
//  - Byte level: bit flips, byte overwrites, truncation, extension, chunk
//    insertion and deletion, header and section-table field edits (often
//    with the table checksum and file size repaired, so that the layout
//    rules rather than the checksum must catch them), and payload edits
//    with the section checksum repaired (garbage the checksums do not see).
//  - Structure aware: the manifest JSON is parsed, one node is changed
//    (extreme or random numbers, deleted keys and elements, changed types,
//    other enum spellings, renamed or added keys, swapped elements), and the
//    bundle is reassembled with every checksum recomputed, so the manifest
//    reader and validateProgram are what must refuse it. Sections are also
//    dropped, duplicated, swapped and rewritten.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/ProgramValidate.h"

#include "BundleTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace ls2c::runtime;
using namespace ls2c::testing;
using json = nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// The seed program: small (fast to parse under ASan) but touching every
// kind of field: launches with pointer and int64 arguments, a batched GEMM,
// a bias-gradient GEMM, backward attention with grouped-query heads, a copy,
// a dim scaled by a fraction.
//===----------------------------------------------------------------------===//

BufferRef ref(BufferRef::Space space, uint32_t index, uint64_t offset,
              uint64_t bytes) {
  return {space, index, offset, bytes};
}
constexpr auto kArena = BufferRef::Space::Arena;
constexpr auto kArg = BufferRef::Space::Argument;
constexpr auto kResult = BufferRef::Space::Result;

Program seedProgram() {
  Program p;
  p.modelName = "fuzz";
  p.description = "{\"hidden_size\": 32}";
  p.computeDType = "bf16";
  p.parameters = {{"w", {32, 32}, 0, true}, {"b", {32}, 1024, false}};
  p.workspaceElements = 1056;
  // Arena: x [T, 32] bf16 at 0 (T <= 64: 4096 bytes), y at 4096, lse at
  // 8192 ([64, 4] f32 = 1024), scratch 256 at 9216.
  p.scratchOffset = 9216;
  p.arenaBytes = 9472;

  Kernel k0;
  k0.name = "scale_0";
  k0.source = "extern \"C\" __global__ void scale_0(float *x, long long n) {}";
  k0.params = {ParamKind::Pointer, ParamKind::Int64};
  // Work: the int64 parameter 1 (n, T tokens at the launch) times 32.
  k0.launch = {128, 0, {dyn(1, 0), stat(32)}, 512, 256};
  k0.cubins["sm_80"] = std::string("\x7f"
                                   "ELF\x01\0\0",
                                   7);
  k0.cubins["sm_90"] = "\x7f"
                       "ELFsm90";
  Kernel k1;
  k1.name = "reduce_1";
  k1.source = "extern \"C\" __global__ void reduce_1(const float *x, "
              "float *out, float *scratch) {}";
  k1.params = {ParamKind::Pointer, ParamKind::Pointer, ParamKind::Pointer};
  k1.launch = {256, 1024, {stat(32)}, 1, 64};
  k1.scratchBytes = 256;
  k1.cubins["sm_90"] = "\x7f"
                       "ELF";
  p.kernels = {k0, k1};

  Function f;
  f.name = "step";
  TensorSpec ids{"tokens", ArgumentKind::Input, DType::I32, {dyn(0, 0)}, {64}};
  TensorSpec cu{
      "cu_seqlens", ArgumentKind::Input, DType::I32, {dyn(1, 0)}, {5}};
  TensorSpec w{
      "weights", ArgumentKind::Parameter, DType::BF16, {stat(1056)}, {1056}};
  TensorSpec g{
      "grads", ArgumentKind::Gradient, DType::F32, {stat(1056)}, {1056}};
  f.arguments = {ids, cu, w, g};
  Dim half = dyn(0, 0);
  half.divisor = 2;
  f.results = {
      TensorSpec{"loss", ArgumentKind::Loss, DType::F32, {}, {}},
      TensorSpec{"pooled", ArgumentKind::Output, DType::F32, {half}, {32}}};
  f.arenaBytes = 9216;

  Step s0;
  s0.kind = Step::Kind::Launch;
  s0.kernel = 0;
  s0.args.resize(2);
  s0.args[0].kind = ParamKind::Pointer;
  s0.args[0].buffer = ref(kArena, 0, 0, 4096);
  s0.args[1].kind = ParamKind::Int64;
  s0.args[1].value = dyn(0, 0);

  Step s1; // y[2][T/2, 32] = x[2][T/2, 32] W^T, batched over halves
  s1.kind = Step::Kind::Gemm;
  Gemm &gm = s1.gemm;
  gm.a = ref(kArena, 0, 0, 4096);
  gm.b = ref(kArg, 2, 0, 2048);
  gm.c = ref(kArena, 0, 4096, 4096);
  gm.aType = gm.bType = gm.cType = gm.biasType = DType::BF16;
  gm.transposeB = true;
  gm.m = stat(32);
  gm.n = stat(32);
  gm.k = stat(32);
  gm.batch = stat(2);
  gm.lda = gm.ldb = gm.ldc = 32;
  gm.strideA = gm.strideC = 32 * 32;
  gm.strideB = 0;

  Step s2; // attention backward, 4 query heads over 2 kv heads of 8
  s2.kind = Step::Kind::Attention;
  Attention &a = s2.attention;
  a.backward = true;
  a.dtype = DType::BF16;
  a.heads = 4;
  a.kvHeads = 2;
  a.headDim = 8;
  a.scale = 0.35355339f;
  a.tokensQ = a.tokensK = dyn(0, 0);
  a.batchPlusOne = dyn(1, 0);
  a.strideQ = a.strideO = a.strideDO = a.strideDQ = 32;
  a.strideK = a.strideV = a.strideDK = a.strideDV = 32;
  a.q = a.out = a.dout = ref(kArena, 0, 0, 4096);
  a.k = a.v = ref(kArena, 0, 4096, 4096);
  a.dq = ref(kArena, 0, 0, 4096);
  a.dk = a.dv = ref(kArena, 0, 4096, 4096);
  a.lse = ref(kArena, 0, 8192, 1024);
  a.cuSeqlensQ = a.cuSeqlensK = ref(kArg, 1, 0, 20);

  Step s3; // bias gradient with the weight gradient: dW = dY^T x
  s3.kind = Step::Kind::Gemm;
  Gemm &bg = s3.gemm;
  bg.a = ref(kArena, 0, 4096, 4096);
  bg.b = ref(kArena, 0, 0, 4096);
  bg.c = ref(kArg, 3, 0, 4096);
  bg.biasGrad = ref(kArg, 3, 4096, 128);
  bg.aType = bg.bType = DType::BF16;
  bg.cType = bg.biasType = DType::F32;
  bg.transposeA = true;
  bg.m = stat(32);
  bg.n = stat(32);
  bg.k = dyn(0, 0);
  bg.batch = stat(1);
  bg.lda = bg.ldb = bg.ldc = 32;
  bg.epilogue = GemmEpilogue::BiasGradA;

  Step s4;
  s4.kind = Step::Kind::Launch;
  s4.kernel = 1;
  s4.args.resize(3);
  s4.args[0].buffer = ref(kArena, 0, 4096, 4096);
  s4.args[1].buffer = ref(kResult, 0, 0, 4);
  s4.args[2].buffer = ref(kArena, 0, 9216, 256);
  Step s6; // dY [T, 32] W -> [T, 32] with the tanh-GELU gradient of y (aux)
  s6.kind = Step::Kind::Gemm;
  Gemm &dg = s6.gemm;
  dg.a = ref(kArena, 0, 0, 4096);
  dg.b = ref(kArg, 2, 0, 2048);
  dg.c = ref(kArena, 0, 4096, 4096);
  dg.aux = ref(kArena, 0, 0, 4096);
  dg.auxLd = 32;
  dg.biasGrad = ref(kArena, 0, 8192, 64);
  dg.aType = dg.bType = dg.cType = dg.biasType = DType::BF16;
  dg.m = dyn(0, 0);
  dg.n = stat(32);
  dg.k = stat(32);
  dg.batch = stat(1);
  dg.lda = dg.ldb = dg.ldc = 32;
  dg.epilogue = GemmEpilogue::DGeluBGrad;

  Step s5; // half of x copied into y's second half
  s5.kind = Step::Kind::Copy;
  s5.copySource = ref(kArena, 0, 0, 2048);
  s5.copyDestination = ref(kArena, 0, 6144, 2048);
  f.steps = {s0, s1, s2, s3, s4, s6, s5};
  p.functions = {f};
  return p;
}

//===----------------------------------------------------------------------===//
// The harness
//===----------------------------------------------------------------------===//

struct Counts {
  size_t loaded = 0, rejected = 0;
  std::map<std::string, size_t> byPlace; ///< rejections by coarse place
};

/// "functions[0].steps[2].attention.q" -> "functions.steps.attention.q".
std::string coarse(const std::string &where) {
  std::string out;
  bool inIndex = false;
  for (char c : where) {
    if (c == '[')
      inIndex = true;
    else if (c == ']')
      inIndex = false;
    else if (!inIndex)
      out += c;
  }
  return out;
}

/// Loads `bytes`; records the outcome; fails the test on anything but a
/// BundleError, or on a loaded program that does not validate or round-trip.
void tryLoad(const std::string &bytes, Counts &counts,
             const std::string &what) {
  Program p;
  try {
    p = parseBundle(bytes, "fuzz.ls2b");
  } catch (const BundleError &e) {
    if (e.file() != "fuzz.ls2b" || e.where().empty() || e.detail().empty())
      ADD_FAILURE() << what << ": malformed BundleError: " << e.what();
    ++counts.rejected;
    ++counts.byPlace[coarse(e.where())];
    return;
  } catch (const std::exception &e) {
    ADD_FAILURE() << what << ": not a BundleError: " << e.what();
    return;
  } catch (...) {
    ADD_FAILURE() << what << ": threw something that is not an exception";
    return;
  }
  // Loaded: it is valid, and it round-trips.
  try {
    validateProgram(p);
    Program q = parseBundle(serializeBundle(p), "reserialized");
    if (!(q == p))
      ADD_FAILURE() << what << ": a loaded program does not round-trip";
  } catch (const std::exception &e) {
    ADD_FAILURE() << what << ": a loaded program fails again: " << e.what();
  }
  ++counts.loaded;
}

void report(const char *name, const Counts &c, size_t expectedTotal) {
  std::cout << name << ": " << c.loaded + c.rejected << " mutated bundles, "
            << c.loaded << " loaded, " << c.rejected << " rejected ("
            << c.byPlace.size() << " distinct places)\n";
  // The most frequent places, for a sense of what caught what.
  std::vector<std::pair<size_t, std::string>> top;
  for (const auto &[place, n] : c.byPlace)
    top.push_back({n, place});
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 8; ++i)
    std::cout << "    " << top[i].first << "  " << top[i].second << "\n";
  EXPECT_EQ(c.loaded + c.rejected, expectedTotal);
}

uint64_t pick(std::mt19937 &rng, uint64_t n) { return n ? rng() % n : 0; }
uint64_t random64(std::mt19937 &rng) { return (uint64_t(rng()) << 32) | rng(); }

/// Extreme and ordinary values for integer fields.
uint64_t interesting(std::mt19937 &rng, uint64_t current) {
  switch (pick(rng, 14)) {
  case 0:
    return 0;
  case 1:
    return 1;
  case 2:
    return ~uint64_t(0); // -1 as a u64
  case 3:
    return uint64_t(1) << 63;
  case 4:
    return (uint64_t(1) << 63) - 1;
  case 5:
    return uint64_t(1) << 32;
  case 6:
    return 0xFFFFFFFFu;
  case 7:
    return current + 1;
  case 8:
    return current - 1;
  case 9:
    return current * 2;
  case 10:
    return current / 2;
  case 11:
    return current + 64;
  case 12:
    return pick(rng, 100000);
  default:
    return random64(rng);
  }
}

void fixFileSize(std::string &b) {
  if (b.size() >= 56)
    putU64(b, 16, b.size());
}

//===----------------------------------------------------------------------===//
// Byte-level mutations
//===----------------------------------------------------------------------===//

std::string mutateBytes(const std::string &seed, std::mt19937 &rng) {
  std::string b = seed;
  uint32_t count = getU32(seed, 12);
  switch (pick(rng, 9)) {
  case 0: { // bit flips
    for (uint64_t n = 1 + pick(rng, 8); n--;)
      b[pick(rng, b.size())] ^= static_cast<char>(1u << pick(rng, 8));
    break;
  }
  case 1: { // random bytes
    for (uint64_t n = 1 + pick(rng, 16); n--;)
      b[pick(rng, b.size())] = static_cast<char>(rng());
    break;
  }
  case 2: // truncation (sometimes with the size field repaired)
    b.resize(pick(rng, b.size()));
    if (pick(rng, 2))
      fixFileSize(b);
    break;
  case 3: { // extension
    uint64_t n = 1 + pick(rng, 200);
    for (uint64_t i = 0; i < n; ++i)
      b += pick(rng, 2) ? '\0' : static_cast<char>(rng());
    if (pick(rng, 2))
      fixFileSize(b);
    break;
  }
  case 4: { // insert or delete a chunk, size and table repaired
    uint64_t at = pick(rng, b.size());
    uint64_t n = 1 + pick(rng, 128);
    if (pick(rng, 2))
      b.insert(at, std::string(n, static_cast<char>(pick(rng, 2) ? 0 : rng())));
    else
      b.erase(at, n);
    fixFileSize(b);
    resealTable(b);
    break;
  }
  case 5: { // header field edits
    switch (pick(rng, 3)) {
    case 0:
      putU32(b, 8, static_cast<uint32_t>(interesting(rng, 1)));
      break;
    case 1:
      putU32(b, 12, static_cast<uint32_t>(interesting(rng, count)));
      break;
    default:
      putU64(b, 16, interesting(rng, b.size()));
    }
    if (pick(rng, 2))
      resealTable(b);
    break;
  }
  case 6:
  case 7: { // section-table field edits, usually resealed
    size_t e = 56 + pick(rng, count) * 56;
    switch (pick(rng, 5)) {
    case 0:
      putU32(b, e,
             static_cast<uint32_t>(pick(rng, 2) ? pick(rng, 5)
                                                : interesting(rng, 2)));
      break;
    case 1:
      putU32(b, e + 4, static_cast<uint32_t>(interesting(rng, 0)));
      break;
    case 2:
      putU64(b, e + 8,
             pick(rng, 2) ? interesting(rng, getU64(b, e + 8))
                          : pick(rng, b.size() / 64 + 2) * 64);
      break;
    case 3:
      putU64(b, e + 16, interesting(rng, getU64(b, e + 16)));
      break;
    default: { // swap two entries
      size_t f = 56 + pick(rng, count) * 56;
      std::string tmp = b.substr(e, 56);
      b.replace(e, 56, b.substr(f, 56));
      b.replace(f, 56, tmp);
    }
    }
    if (pick(rng, 4))
      resealTable(b);
    break;
  }
  default: { // a payload edit with that section's checksum repaired
    size_t i = pick(rng, count);
    size_t e = 56 + i * 56;
    uint64_t offset = getU64(b, e + 8), size = getU64(b, e + 16);
    if (size == 0)
      break;
    for (uint64_t n = 1 + pick(rng, 4); n--;) {
      uint64_t at = offset + pick(rng, size);
      b[at] = pick(rng, 2) ? static_cast<char>(rng())
                           : "{}[]\",:0-9e\0"[pick(rng, 13)];
    }
    auto h = bundleSha256(std::string_view(b).substr(offset, size));
    std::memcpy(&b[e + 24], h.data(), 32);
    resealTable(b);
  }
  }
  return b;
}

//===----------------------------------------------------------------------===//
// Structure-aware mutations
//===----------------------------------------------------------------------===//

void collect(json &node, std::vector<json::json_pointer> &out,
             const json::json_pointer &at) {
  out.push_back(at);
  if (node.is_object())
    for (auto it = node.begin(); it != node.end(); ++it)
      collect(it.value(), out, at / it.key());
  else if (node.is_array())
    for (size_t i = 0; i < node.size(); ++i)
      collect(node[i], out, at / i);
}

const char *const kSpellings[] = {
    "f32",         "f16",       "bf16",    "f64",       "i32",
    "i64",         "i1",        "u8",      "arena",     "argument",
    "result",      "heap",      "pointer", "int64",     "launch",
    "gemm",        "attention", "copy",    "none",      "bias",
    "bias_grad_a", "dgelu_bgrad", "relu_aux",  "parameter", "input",   "workspace", "state",
    "sm_90",       "",          "step",    "scale_0",   "reduce_1",
    "1bad",        "sm_80"};

json randomValue(std::mt19937 &rng, const json &current) {
  switch (pick(rng, 12)) {
  case 0:
    return nullptr;
  case 1:
    return pick(rng, 2) == 1;
  case 2:
    return kSpellings[pick(rng, std::size(kSpellings))];
  case 3:
    return json::array();
  case 4:
    return json::object();
  case 5:
    return -static_cast<int64_t>(pick(rng, 1000)) - 1;
  case 6:
    return std::numeric_limits<int64_t>::min();
  case 7:
    return 0.5;
  case 8:
    return pick(rng, 2) ? 1e300 : -1e-300;
  case 9: // a number near the current one
    if (current.is_number_unsigned())
      return interesting(rng, current.get<uint64_t>());
    if (current.is_number_integer())
      return current.get<int64_t>() + static_cast<int64_t>(pick(rng, 5)) - 2;
    return pick(rng, 64);
  case 10:
    return json::array({current, current});
  default:
    return interesting(rng, pick(rng, 4096));
  }
}

/// `nodes` are the seed manifest's nodes (collected once: cheaper under
/// ASan); a second mutation may find its node gone.
void mutateJson(json &manifest, const std::vector<json::json_pointer> &nodes,
                std::mt19937 &rng) {
  const json::json_pointer &at = nodes[pick(rng, nodes.size())];
  if (!manifest.contains(at))
    return;
  json &node = manifest[at];
  bool hasParent = !at.empty();
  switch (pick(rng, 8)) {
  case 0:
  case 1: // a number to an extreme or random value
    if (node.is_number())
      node = randomValue(rng, node);
    else if (node.is_string())
      node = kSpellings[pick(rng, std::size(kSpellings))];
    else if (node.is_boolean())
      node = !node.get<bool>();
    else
      node = interesting(rng, 0);
    break;
  case 2: // delete a key or an element
    if (hasParent) {
      json &parent = manifest[at.parent_pointer()];
      if (parent.is_object())
        parent.erase(at.back());
      else
        parent.erase(static_cast<size_t>(std::stoul(at.back())));
    }
    break;
  case 3: // change the type
    node = randomValue(rng, node);
    break;
  case 4: // rename a key or add an unknown one
    if (hasParent && manifest[at.parent_pointer()].is_object()) {
      json &parent = manifest[at.parent_pointer()];
      json value = node;
      parent.erase(at.back());
      parent[at.back() + (pick(rng, 2) ? "X" : "")] = value;
    } else if (node.is_object()) {
      node["unexpected"] = 1;
    }
    break;
  case 5: // duplicate or swap array elements
    if (node.is_array() && !node.empty()) {
      size_t i = pick(rng, node.size()), j = pick(rng, node.size());
      if (pick(rng, 2))
        node.push_back(node[i]);
      else
        std::swap(node[i], node[j]);
    } else {
      node = randomValue(rng, node);
    }
    break;
  case 6: // a static dim made dynamic or the reverse
    if (node.is_number_integer()) {
      node = json{{"argument", pick(rng, 5)}, {"axis", pick(rng, 3)}};
      if (pick(rng, 2))
        node[pick(rng, 2) ? "multiplier" : "divisor"] =
            static_cast<int64_t>(pick(rng, 40)) - 2;
    } else if (node.is_object() && node.contains("argument"))
      node = pick(rng, 64);
    else
      node = randomValue(rng, node);
    break;
  default: // two mutations at once
    mutateJson(manifest, nodes, rng);
    mutateJson(manifest, nodes, rng);
  }
}

std::string mutateStructure(const std::vector<BundleSection> &seed,
                            const json &manifest,
                            const std::vector<json::json_pointer> &nodes,
                            std::mt19937 &rng) {
  std::vector<BundleSection> sections = seed;
  if (pick(rng, 8) == 0) { // the sections themselves, checksums recomputed
    size_t i = 1 + pick(rng, sections.size() - 1);
    switch (pick(rng, 6)) {
    case 0:
      sections.erase(sections.begin() + i);
      break;
    case 1:
      sections.push_back(sections[i]);
      break;
    case 2:
      std::swap(sections[i], sections[1 + pick(rng, sections.size() - 1)]);
      break;
    case 3:
      sections[i].payload.clear();
      break;
    case 4:
      sections[i].payload[pick(rng, sections[i].payload.size())] = '\0';
      break;
    default:
      sections[i].kind = static_cast<SectionKind>(1 + pick(rng, 3));
    }
    return assembleBundle(sections);
  }
  json m = manifest;
  mutateJson(m, nodes, rng);
  sections[0].payload = m.dump();
  return assembleBundle(sections);
}

//===----------------------------------------------------------------------===//
// The tests
//===----------------------------------------------------------------------===//

TEST(BundleFuzzTest, SeedLoads) {
  Program p = seedProgram();
  ASSERT_NO_THROW(validateProgram(p));
  EXPECT_TRUE(parseBundle(serializeBundle(p), "seed") == p);
}

TEST(BundleFuzzTest, ByteLevelMutations) {
  const std::string seed = serializeBundle(seedProgram());
  std::mt19937 rng(20240611);
  Counts counts;
  const size_t n = 3200;
  for (size_t i = 0; i < n; ++i)
    tryLoad(mutateBytes(seed, rng), counts,
            "byte mutation " + std::to_string(i));
  report("byte-level", counts, n);
  EXPECT_GT(counts.rejected, n * 9 / 10);
}

TEST(BundleFuzzTest, StructureAwareMutations) {
  const std::string seed = serializeBundle(seedProgram());
  const std::vector<BundleSection> sections = splitBundle(seed, "seed");
  json manifest = json::parse(sections[0].payload);
  std::vector<json::json_pointer> nodes;
  collect(manifest, nodes, json::json_pointer());
  std::mt19937 rng(7);
  Counts counts;
  const size_t n = 2200;
  for (size_t i = 0; i < n; ++i)
    tryLoad(mutateStructure(sections, manifest, nodes, rng), counts,
            "structure mutation " + std::to_string(i));
  report("structure-aware", counts, n);
  // Both outcomes occur: the mutations reach past the reader into the
  // validator, and harmless edits still load.
  EXPECT_GT(counts.loaded, 0u);
  EXPECT_GT(counts.rejected, n / 2);
  EXPECT_GT(counts.byPlace.size(), 40u);
}

} // namespace
