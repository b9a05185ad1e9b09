//===- RowReductionKernel.cpp - the skeleton of row-reduction fusions -----===//
//
// Rows [R, H]: the reduced (trailing) dims of the group's reductions. T
// threads take a row (T = 32 and four rows per block up to 256 elements,
// otherwise one block of up to 1024 threads), each thread the elements
// j = (c * T + lane) * VEC + u. Every reduction is a phase: a loop over the
// thread's elements, then a warp-shuffle or block reduction in f32; a
// softmax's max and normalizer share one phase, and a sum that one element
// alone makes nonzero (a label's logit) is one load (RowReductionPatterns.h).
// When a thread holds at most 32 elements, the operands it reads along the
// row and its random numbers are loaded once into registers (16-byte vectors
// when aligned; 16-bit floats kept 16-bit) and every phase reuses them;
// longer rows (vocabularies) re-read them (from L1/L2) in each phase. Outputs along the row are stored as
// 16-byte vectors when aligned. A padded [R, H] operand or output
// (PaddedRows.h: the logits and their gradient) is read and written at
// r * stride + j, its stride a kernel parameter.
//
//===----------------------------------------------------------------------===//

#include "KernelContext.h"
#include "RowReductionPatterns.h"
#include "ls2c/Transforms/PaddedRows.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <functional>
#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

constexpr uint32_t kMaxBlocks = 8192;

/// `text` with `spaces` more spaces before each line (not before pragmas).
std::string indentLines(const std::string &text, int spaces) {
  std::string out, pad(static_cast<size_t>(spaces), ' ');
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    out += (text[at] == '#' ? std::string() : pad) + text.substr(at, end - at);
    at = end;
  }
  return out;
}

/// A sum over the leading (row) dims of the rows, [R, H...] -> [H...]: a
/// column sum that ls2-fuse put into the row group (dgamma, dbeta).
bool isColumnSum(Operation &op) {
  auto sum = dyn_cast<ls2::ReduceSumOp>(op);
  return sum && sum.reducesLeadingDims();
}

/// For each value of the body that reads random numbers along the rows (a
/// dropout: its operands, its numbers and their test stay live in every
/// phase that recomputes it), how many phases read it: each reduction over
/// the rows (its operand's backward slice) and the output phase (the slices
/// of the yields of the rows' shape). Slices stop at reductions, whose
/// results are per row. (Other values are cheaper recomputed from their
/// 16-bit operands than held in f32: H200, BERT-base's LayerNorm backward
/// 2.24 -> 2.35 ms a step with them held.)
llvm::DenseMap<Value, unsigned> phaseUses(Block &body, KernelContext &ctx,
                                          ArrayRef<runtime::Dim> full) {
  llvm::DenseMap<Value, bool> memo;
  std::function<bool(Value)> drawsRandom = [&](Value v) -> bool {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    bool result = false;
    if (Operation *def = v.getDefiningOp()) {
      if (auto ru = dyn_cast<ls2::RandomUniformOp>(def))
        result = sameDims(ctx.dims.shape(ru.getResult()), full);
      else if (!isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(def))
        result = llvm::any_of(def->getOperands(), [&](Value o) {
          return isa<RankedTensorType>(o.getType()) && drawsRandom(o);
        });
    }
    memo[v] = result;
    return result;
  };
  llvm::DenseMap<Value, unsigned> count;
  auto slice = [&](ArrayRef<Value> roots) {
    llvm::DenseSet<Value> seen;
    SmallVector<Value> work(roots.begin(), roots.end());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      Operation *def = v.getDefiningOp();
      if (!def || isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(def))
        continue;
      for (Value operand : def->getOperands())
        if (isa<RankedTensorType>(operand.getType()))
          work.push_back(operand);
    }
    for (Value v : seen)
      if (drawsRandom(v))
        ++count[v];
  };
  // Column sums add up in the output phase: their operands are its too.
  SmallVector<Value> outputs;
  for (Operation &op : body)
    if (isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op)) {
      if (isColumnSum(op))
        outputs.push_back(op.getOperand(0));
      else
        slice({op.getOperand(0)});
    }
  for (unsigned i = 0; i < ctx.numYields(); ++i)
    if (sameDims(ctx.dims.shape(ctx.yieldValue(i)), full))
      outputs.push_back(ctx.yieldValue(i));
  slice(outputs);
  return count;
}

/// Blocks of a row reduction with column sums: a fixed grid (the partials,
/// and so the bits, depend on R alone) of eight blocks per multiprocessor of
/// an H200, each adding up many rows: every block's partials are written
/// and read back, so more blocks cost more than they hide (H200, GPT-2
/// medium's 47 LayerNorm backwards a step with their second kernels: 8,192
/// blocks 13.2 ms, 4,096 8.0 ms, 1,056 5.2 ms; before column sums, 7.5 ms).
/// Its registers are capped so that all eight fit at once: with 72 to 119
/// registers only six or seven did, and the last blocks ran as a second wave
/// (H200, ms a step: BERT-base's 23 LayerNorm-dropout backwards 2.52 ->
/// 1.75, GPT-2 medium's 47 4.65 -> 4.07, with up to 76 bytes spilled).
/// With more than 16 f32 column accumulators a thread, six: BERT-base's
/// LayerNorm-dropout backward with dgamma, dbeta and the next GEMM's bias
/// gradient (24 a thread) took 2.24 ms at eight a multiprocessor (304 bytes
/// spilled), 2.35 at seven, 2.13 at six, 2.32 at five (no spills), 2.60 at
/// four.
uint32_t columnSumBlocksPerMultiprocessor(int64_t accumulatorsPerThread) {
  return accumulatorsPerThread > 16 ? 6 : 8;
}

} // namespace

void emitRowReductionKernel(KernelContext &ctx) {
  ElementalEmitter &em = *ctx.emitter;
  Block &body = ctx.fusion.getBody().front();

  // The rows: every reduction reduces the same trailing dims of one shape
  // (column sums, over the leading dims, aside).
  std::optional<std::pair<SmallVector<runtime::Dim>, SmallVector<runtime::Dim>>> rows;
  SmallVector<Operation *> columnSums;
  for (Operation &op : body) {
    if (isColumnSum(op)) {
      columnSums.push_back(&op);
      continue;
    }
    if (!isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op))
      continue;
    ArrayRef<int64_t> axes = isa<ls2::ReduceSumOp>(op)
                                 ? cast<ls2::ReduceSumOp>(op).getAxes()
                                 : cast<ls2::ReduceMaxOp>(op).getAxes();
    ArrayRef<runtime::Dim> shape = ctx.dims.shape(op.getOperand(0));
    int64_t first = static_cast<int64_t>(shape.size() - axes.size());
    for (auto [k, a] : llvm::enumerate(axes))
      if (a != first + static_cast<int64_t>(k))
        throw EmitError{&op, "a row reduction must reduce trailing dims"};
    SmallVector<runtime::Dim> lead(shape.begin(), shape.begin() + first);
    SmallVector<runtime::Dim> trail(shape.begin() + first, shape.end());
    for (const runtime::Dim &d : trail)
      if (!d.isStatic())
        throw EmitError{&op, "reduces a dynamic dim along rows"};
    if (!rows)
      rows.emplace(lead, trail);
    else if (!sameDims(rows->first, lead) || !sameDims(rows->second, trail))
      throw EmitError{&op, "reduces rows of another shape than the group's "
                           "first reduction"};
  }
  if (!rows)
    throw EmitError{ctx.fusion, "is a row_reduction group without a reduction"};
  ArrayRef<runtime::Dim> lead = rows->first, trail = rows->second;
  SmallVector<runtime::Dim> full(lead.begin(), lead.end());
  full.append(trail.begin(), trail.end());
  int64_t h = ctx.bound(trail);

  std::vector<bool> perRow;
  std::vector<int> columnOf(ctx.numYields(), -1); ///< the yield's column sum
  for (unsigned i = 0; i < ctx.numYields(); ++i) {
    Value y = ctx.yieldValue(i);
    ArrayRef<runtime::Dim> s = ctx.dims.shape(y);
    if (auto it = llvm::find(columnSums, y.getDefiningOp()); it != columnSums.end()) {
      if (!sameDims(ctx.dims.shape((*it)->getOperand(0)), full))
        throw EmitError{*it, "sums columns of another shape than the group's rows"};
      columnOf[i] = static_cast<int>(it - columnSums.begin());
      perRow.push_back(false);
    } else if (ctx.sameCount(s, full)) {
      perRow.push_back(false);
    } else if (ctx.sameCount(s, lead)) {
      perRow.push_back(true);
    } else {
      throw EmitError{ctx.fusion, "yields a value that is neither the rows' "
                                  "shape nor one value per row"};
    }
  }
  for (Operation *op : columnSums) {
    Value sum = op->getResult(0);
    if (!sum.hasOneUse() || !isa<ls2::YieldOp>(*sum.getUsers().begin()))
      throw EmitError{op, "a column sum in a row reduction must only be yielded (its value is "
                          "complete when the kernels end)"};
  }

  // VEC: 16 bytes of the narrowest float streamed along the rows.
  int64_t narrowest = 4;
  for (BlockArgument arg : body.getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()))
      if (isa<FloatType>(t.getElementType()) && sameDims(ctx.dims.shape(arg), full))
        narrowest = std::min(narrowest, elementBytes(t.getElementType()));
  for (unsigned i = 0; i < ctx.numYields(); ++i)
    if (!perRow[i] && columnOf[i] < 0)
      narrowest = std::min(narrowest,
                           elementBytes(cast<RankedTensorType>(
                                              ctx.yieldValue(i).getType())
                                              .getElementType()));
  int64_t vec = 16 / narrowest;
  // Block argument i's row stride when it is read as rows of v-element
  // vectors of 16 bytes: contiguous rows of a multiple of v, or rows padded
  // to one (PaddedRows.h; the padding is read, never used); else 0.
  auto vectorRowStride = [&](unsigned i, int64_t v) -> int64_t {
    int64_t stride = paddedRowStride(ctx.fusion.getOperand(i));
    if (stride == 0)
      stride = h;
    BlockArgument arg = body.getArgument(i);
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (v < 2 || stride % v != 0 || !t || !isa<FloatType>(t.getElementType()) ||
        v * elementBytes(t.getElementType()) != 16 || !sameDims(ctx.dims.shape(arg), full))
      return 0;
    return stride;
  };
  bool paddedVectors = false;
  if (h % vec != 0)
    for (unsigned i = 0; i < body.getNumArguments(); ++i)
      paddedVectors = paddedVectors || vectorRowStride(i, vec) != 0;
  if (h % vec != 0 && !paddedVectors)
    vec = 1;
  int64_t threads = ((h + 8 * 32 - 1) / (8 * 32)) * 32;
  threads = std::max<int64_t>(32, std::min<int64_t>(1024, threads));
  int64_t chunks = (h + threads * vec - 1) / (threads * vec);
  // A softmax over rows of 1,024 threads streams past 16 elements a thread:
  // held in registers (64 of them, one block a multiprocessor) the cross
  // entropy of Transformer-base's 32,000 logits took 0.27 ms a step,
  // streamed as vectors (two blocks at 32) 0.22; BERT-base's 30,522, 0.31
  // and 0.22. (Column sums need the registers: wide LayerNorms keep them.)
  const bool online = llvm::any_of(body, [](Operation &op) {
    return isa<ls2::ReduceMaxOp>(op) && matchOnlineSoftmax(&op);
  });
  bool registers = chunks * vec <= (online && threads == 1024 ? 16 : 32);
  // Padded vectors only where rows stream (vocabularies): the register
  // caches read padded rows element by element.
  if (paddedVectors && registers) {
    paddedVectors = false;
    vec = 1;
    chunks = (h + threads - 1) / threads;
    registers = chunks <= 32;
  }
  // Whether the threads' elements tile the row exactly: then every element
  // index is in the row and the generated code tests none.
  const bool exact = chunks * threads * vec == h;
  int64_t block = threads == 32 ? 128 : threads;
  int64_t rowsPerBlock = block / threads;
  std::string T = std::to_string(threads), V = std::to_string(vec),
              CH = std::to_string(chunks), H = std::to_string(h);
  // Floats of ls2_red (block reductions): one a warp, two for the online
  // softmax's (max, sum) pairs, more where sums share a block reduction (set
  // as the phases are emitted).
  int64_t redFloats = online ? 64 : 32;

  std::vector<std::string> leadSizes = ctx.dimTexts(lead);
  std::vector<std::string> trailSizes = ctx.dimTexts(trail);
  Index rowIndex = delinearizeIndex(leadSizes, "r", kOuterLevel);
  Index elementIndex = rowIndex;
  for (IndexExpr &e : delinearizeIndex(trailSizes, "j", kElementLevel))
    elementIndex.push_back(e);
  // A yield's index: the rows' own index when it has their shape, else its
  // shape's index of the same row-major offset (a reshape of the rows).
  auto yieldIndex = [&](unsigned i) {
    Value v = ctx.yieldValue(i);
    ArrayRef<runtime::Dim> s = ctx.dims.shape(v);
    if (columnOf[i] >= 0)
      return delinearizeIndex(ctx.dimTexts(s), "j", kElementLevel);
    if (perRow[i])
      return sameDims(s, lead) ? rowIndex
                               : delinearizeIndex(ctx.dimTexts(s), "r", kOuterLevel);
    return sameDims(s, full) ? elementIndex
                             : delinearizeIndex(ctx.dimTexts(s), "(r * " + std::to_string(h) + " + j)",
                                               kElementLevel);
  };

  auto below = [&](const std::string &j) {
    return exact ? std::string("true") : j + " < " + H;
  };
  // Rows longer than the registers hold (vocabularies) unroll their chunk
  // loops 8 deep, so that two blocks of 1,024 fit a multiprocessor at 32
  // registers without spills (unrolled whole, GPT-2 medium's cross entropy
  // took 64 registers, or spilled 412 bytes at 32).
  const std::string chunkUnroll = registers ? "#pragma unroll\n" : "#pragma unroll 8\n";
  // The first element of a thread's chunk c, in the chunk loop's body.
  const std::string chunkFirst =
      "  const long long j0 = ((long long)c * " + T + " + lane) * " + V + ";\n";
  auto loopHead = [&](const std::string &jName, const std::string &chunkHead = "") {
    return chunkUnroll + "for (int c = 0; c < " + CH + "; ++c) {\n" + chunkHead +
           "#pragma unroll\n  for (int u = 0; u < " + V + "; ++u) {\n" +
           "    const long long " + jName + " = ((long long)c * " + T +
           " + lane) * " + V + " + u;\n";
  };

  // Register caches of what the row reads, filled where first needed: the
  // expression that reads each (operand and offset, or random stream).
  std::map<std::string, std::string> caches;
  auto cacheRef = [&](const std::string &name) {
    return name + "[c * " + V + " + u]";
  };
  if (registers) {
    em.leafHook = [&](BlockArgument arg, const Index &index,
                      const IndexExpr &flat) -> std::optional<std::string> {
      if (flat.level < kElementLevel)
        return std::nullopt;
      std::string p = ctx.argNames[arg.getArgNumber()];
      std::string key = p + "@" + flat.text;
      if (auto it = caches.find(key); it != caches.end())
        return it->second;
      std::string name = em.fresh("rc");
      Type et = cast<RankedTensorType>(arg.getType()).getElementType();
      bool vectors = vec > 1 && ctx.argStrides[arg.getArgNumber()].empty() &&
                     (vec * elementBytes(et)) % 16 == 0;
      bool contiguous = vectors && sameIndex(index, elementIndex) &&
                        (h * elementBytes(et)) % 16 == 0;
      // An operand the same for every row (a bias, gamma, beta: [H] read at
      // j) is read as vectors too (scalar loads with their 64-bit address
      // arithmetic were a tenth of a LayerNorm kernel's instructions).
      bool broadcast = vectors && flat.text == "j";
      std::string vt = "ls2_vec<" + storageType(et) + ", " + V + ">";
      // 16-bit floats stay 16-bit in the registers, two to a register, and
      // are widened where read (one instruction): in f32, a LayerNorm
      // backward's three bf16 rows and gamma took 32 of its 78 registers
      // (H200, ms a step: GPT-2 medium's LayerNorm-dropout backward 3.80 ->
      // 3.63, its forward 2.50 -> 2.34; BERT-base's forward 0.92 -> 0.95).
      const bool packed = isa<FloatType>(et) && elementBytes(et) == 2;
      std::string element = packed ? name + "[c].v[u]" : name + "[c * " + V + " + u]";
      std::string fill = packed ? vt + " " + name + "[" + CH + "];\n"
                                : computeType(et) + " " + name + "[" +
                                      std::to_string(chunks * vec) + "];\n";
      std::string scalarFill =
          packed ? "if (" + below("j") + ") " + element + " = " + p + "[" + flat.text +
                       "]; else ls2_put(" + element + ", 0.0f);"
                 : element + " = " + below("j") + " ? ls2_load(" + p + ", " + flat.text +
                       ") : " + computeType(et) + "(0);";
      std::string ref = packed ? "ls2_cvt(" + element + ")" : cacheRef(name);
      if (contiguous || broadcast) {
        std::string vectorAt = "*reinterpret_cast<const " + vt + " *>(" + p +
                               (contiguous ? " + r * " + H : std::string()) + " + j0)";
        fill += "#pragma unroll\nfor (int c = 0; c < " + CH + "; ++c) {\n";
        fill += chunkFirst;
        fill += "  if (" + below("j0") + " && ((unsigned long long)" + p + " & 15) == 0) {\n";
        if (packed) {
          fill += "    " + name + "[c] = " + vectorAt + ";\n";
        } else {
          fill += "    const " + vt + " w = " + vectorAt + ";\n";
          fill += "#pragma unroll\n    for (int u = 0; u < " + V + "; ++u)\n";
          fill += "      " + element + " = ls2_cvt(w.v[u]);\n";
        }
        fill += "  } else {\n";
        fill += "#pragma unroll\n    for (int u = 0; u < " + V + "; ++u) {\n";
        fill += "      const long long j = j0 + u;\n";
        fill += "      " + scalarFill + "\n";
        fill += "    }\n  }\n}\n";
      } else {
        fill += loopHead("j") + "    " + scalarFill + "\n  }\n}\n";
      }
      em.lineAt(kOuterLevel, fill);
      caches.emplace(key, ref);
      return ref;
    };
    em.randomHook = [&](ls2::RandomUniformOp op, const Index &index,
                        const IndexExpr &flat) -> std::optional<std::string> {
      if (flat.level < kElementLevel)
        return std::nullopt;
      std::string key = "random" + std::to_string(op.getStream()) + "@" + flat.text;
      if (auto it = caches.find(key); it != caches.end())
        return it->second;
      std::string seed = em.emit(op.getSeed(), {});
      std::string offset = em.emit(op.getOffset(), {});
      std::string name = em.fresh("rn");
      std::string fill = "float " + name + "[" + std::to_string(chunks * vec) + "];\n";
      // Numbers of the rows' own shape, eight (or four) consecutive
      // elements per thread from a multiple of 8 (4): one Philox call gives
      // eight (Philox was about 40% of a LayerNorm-dropout kernel's
      // instructions at a call per element, a third at four; H200, GPT-2
      // medium's LayerNorm-dropout forward 2.76 -> 2.42 ms a step at eight).
      const int64_t run = vec % 8 == 0 && h % 8 == 0 ? 8 : 4;
      if (vec % run == 0 && h % run == 0 && sameIndex(index, elementIndex) &&
          sameDims(ctx.dims.shape(op.getResult()), full)) {
        const std::string R = std::to_string(run);
        fill += "#pragma unroll\nfor (int c = 0; c < " + CH + "; ++c) {\n";
        fill += "#pragma unroll\n  for (int u = 0; u < " + V + "; u += " + R + ") {\n";
        fill += "    const long long j = ((long long)c * " + T + " + lane) * " + V + " + u;\n";
        fill += "    if (" + below("j") + ") ls2_uniform" + R + "(" + seed + ", " + offset +
                ", " + em.streamText(op) + ", " + flat.text + ", &" + name + "[c * " + V +
                " + u]);\n";
        fill += "    else {\n#pragma unroll\n      for (int k = 0; k < " + R + "; ++k) " + name +
                "[c * " + V + " + u + k] = 0.0f;\n    }\n  }\n}\n";
      } else {
        fill += loopHead("j") + "    " + name + "[c * " + V + " + u] = " + below("j") +
                " ? ls2_uniform(" + seed + ", " + offset + ", " +
                em.streamText(op) + ", " + flat.text + ") : 0.0f;\n  }\n}\n";
      }
      em.lineAt(kOuterLevel, fill);
      caches.emplace(key, cacheRef(name));
      return cacheRef(name);
    };
  }
  // Streamed rows (vocabularies) read their operands as one vector a chunk,
  // loaded at the chunk loop's head (chunkLoads.back(), one buffer a phase
  // being emitted): element by element, GPT-2 medium's cross entropy over
  // 50,257 logits issued 2-byte loads and their 64-bit addresses, and was
  // bound by its integer instructions (ncu, H200: 1.57 ms, 68% issue busy).
  struct ChunkLoads {
    std::string text;
    std::map<std::string, std::string> names; ///< operand@offset -> vector
  };
  std::vector<ChunkLoads> chunkLoads;
  const bool streamVectors = !registers && vec > 1;
  if (streamVectors) {
    em.leafHook = [&](BlockArgument arg, const Index &index,
                      const IndexExpr &flat) -> std::optional<std::string> {
      const int64_t stride = vectorRowStride(arg.getArgNumber(), vec);
      if (chunkLoads.empty() || flat.level < kElementLevel || stride == 0 ||
          !sameIndex(index, elementIndex))
        return std::nullopt;
      ChunkLoads &loads = chunkLoads.back();
      std::string p = ctx.argNames[arg.getArgNumber()];
      std::string key = p + "@" + flat.text;
      if (auto it = loads.names.find(key); it != loads.names.end())
        return "ls2_cvt(" + it->second + ".v[u])";
      std::string name = em.fresh("cv");
      Type et = cast<RankedTensorType>(arg.getType()).getElementType();
      std::string vt = "ls2_vec<" + storageType(et) + ", " + V + ">";
      const std::string &ld = ctx.argStrides[arg.getArgNumber()];
      std::string row = "r * " + (ld.empty() ? H : ld);
      loads.text += "  " + vt + " " + name + ";\n";
      // (A view's row stride need not be a multiple of VEC: then elements.)
      loads.text += "  if (j0 < " + H + " && ((unsigned long long)" + p + " & 15) == 0" +
                    (ld.empty() ? std::string() : " && " + ld + " % " + V + " == 0") + ") {\n";
      loads.text += "    " + name + " = *reinterpret_cast<const " + vt + " *>(" + p + " + " +
                    row + " + j0);\n";
      loads.text += "  } else {\n#pragma unroll\n    for (int u = 0; u < " + V + "; ++u)\n";
      loads.text += "      if (j0 + u < " + H + ") " + name + ".v[u] = " + p + "[" + row +
                    " + j0 + u]; else ls2_put(" + name + ".v[u], 0.0f);\n  }\n";
      loads.names.emplace(key, name);
      return "ls2_cvt(" + name + ".v[u])";
    };
  }
  // The chunk loop's head for a phase's vector loads: j0, then the loads;
  // empty without streamed vectors.
  auto takeChunkLoads = [&]() -> std::string {
    if (!streamVectors)
      return "";
    std::string text = chunkFirst + chunkLoads.back().text;
    chunkLoads.pop_back();
    return text;
  };
  auto beginPhase = [&]() {
    if (streamVectors)
      chunkLoads.emplace_back();
  };

  // Dropped-out values several phases read (a LayerNorm's input x = residual
  // + dropout(y): its mean's phase, its variance's and the output's) are
  // kept in registers by the phases that compute them at the rows' index,
  // and a later phase reads the cache instead of recomputing them from the
  // row's operands, which then die early (fewer registers, more rows in
  // flight: BERT-base's LayerNorm-dropout forward held 104 registers at 23%
  // occupancy, 80 with x held; H200, 1.92 -> 1.37 ms a step). Phases are
  // emitted nested (the output phase asks for the reductions it reads), and
  // a phase's loop is placed where its emission completes: a cache serves
  // only phases emitted after one that fills it has completed.
  struct ValueCache {
    std::string name;
    llvm::SmallVector<int> fillers; ///< phases that write it
  };
  llvm::DenseMap<Value, ValueCache> valueCaches;
  std::vector<int> phaseStack; ///< the phases being emitted, innermost last
  llvm::DenseSet<int> completed;
  int phases = 0;
  const int outputPhase = -1;
  llvm::DenseMap<Value, unsigned> phasesReading;
  if (registers)
    phasesReading = phaseUses(body, ctx, full);
  bool cachesValues = llvm::any_of(phasesReading, [](auto &use) { return use.second > 1; });
  if (cachesValues) {
    em.valueHook = [&](Value v, const Index &index) -> std::optional<std::string> {
      auto it = valueCaches.find(v);
      if (it == valueCaches.end() || !sameIndex(index, elementIndex) ||
          llvm::none_of(it->second.fillers, [&](int p) { return completed.contains(p); }))
        return std::nullopt;
      return cacheRef(it->second.name);
    };
    em.emittedHook = [&, phasesReading](Value v, const Index &index, const std::string &name,
                                        int level) {
      auto uses = phasesReading.find(v);
      if (level < kElementLevel || uses == phasesReading.end() || uses->second < 2 ||
          !sameIndex(index, elementIndex) || name.find('[') != std::string::npos)
        return; // (a name with a subscript reads a cache already)
      std::string ct = computeType(cast<RankedTensorType>(v.getType()).getElementType());
      if (ct.empty())
        return;
      auto [it, isNew] = valueCaches.try_emplace(v);
      if (isNew) {
        it->second.name = em.fresh("vc");
        em.lineAt(kOuterLevel,
                  ct + " " + it->second.name + "[" + std::to_string(chunks * vec) + "];");
      }
      it->second.fillers.push_back(phaseStack.empty() ? outputPhase : phaseStack.back());
      em.line(cacheRef(it->second.name) + " = " + name + ";");
    };
  }

  // Each reduction is a phase of the row, emitted into the row scope the
  // first time a value needs it.
  llvm::DenseMap<Operation *, std::string> reduced; // a row's value: one phase each
  // A plain row sum whose operand reads no reduction still to come: it can
  // join the block reduction of another.
  auto sumReady = [&](Operation *r) {
    if (!isa<ls2::ReduceSumOp>(r) || isColumnSum(*r) || reduced.contains(r) ||
        matchSelectedElement(r) || matchOnlineSoftmax(r))
      return false;
    llvm::DenseSet<Value> seen;
    SmallVector<Value> work{r->getOperand(0)};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      if (isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(def)) {
        if (!reduced.contains(def))
          return false;
        continue;
      }
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    return true;
  };
  em.reduceHook = [&](Operation *op, const Index &index) -> std::string {
    if (auto it = reduced.find(op); it != reduced.end())
      return it->second;
    if (isColumnSum(*op))
      throw EmitError{op, "a column sum's value is read inside its row reduction (it is "
                          "complete only when the kernels end)"};
    bool isMax = isa<ls2::ReduceMaxOp>(op);
    // The result's index without the reduced dims (kept as 1s with keep_dims).
    Index rowAt(index.begin(), index.begin() + lead.size());
    Index operandIndex = rowAt;
    for (IndexExpr &e : delinearizeIndex(trailSizes, "j", kElementLevel))
      operandIndex.push_back(e);
    auto blockReduce = [&](const std::string &call, const std::string &args) {
      return threads == 32 ? "ls2_warp_" + call + "(" + args + ")"
                           : "ls2_block_" + call + "<" + std::to_string(threads / 32) + ">(" +
                                 args + ", ls2_red)";
    };
    // The label's logit: one load at its column, none of the row's passes
    // (GPT-2 medium's cross entropy read its 50,257 logits four times).
    if (auto selected = matchSelectedElement(op)) {
      std::string id = em.emit(selected->id, rowAt);
      std::string col = em.fresh("col"), at = em.fresh("col");
      em.line("const long long " + col + " = (long long)" + id + ";");
      em.line("const long long " + at + " = " + col + " < 0 ? 0 : " + col + " < " + H + " ? " +
              col + " : " + H + " - 1;");
      Index xAt = rowAt;
      xAt.push_back({at, kOuterLevel});
      std::string x = em.emit(selected->x, xAt);
      std::string name = em.fresh("red");
      em.line("const float " + name + " = " + col + " == " + at + " ? (float)" + x +
              " : 0.0f;");
      reduced.try_emplace(op, name);
      return name;
    }
    // A softmax's max and normalizer in one pass (RowReductionPatterns.h),
    // over groups of N elements: the group's max, then N exponentials that
    // do not wait on each other (element by element, each update would wait
    // on the last one's exponential). All the thread's elements form one
    // group when registers hold them, else 8.
    if (auto os = matchOnlineSoftmax(op)) {
      const int64_t group = registers ? chunks : std::max<int64_t>(1, 8 / vec);
      const std::string G = std::to_string(group), N = std::to_string(group * vec);
      std::string m = em.fresh("mx"), s = em.fresh("se"), xs = em.fresh("xs");
      em.line("float " + m + " = __int_as_float(0xff800000), " + s + " = 0.0f;");
      int outer = em.indent();
      beginPhase();
      em.pushScope(kElementLevel, outer + 4);
      phaseStack.push_back(phases++);
      std::string v = em.emit(os->y, operandIndex);
      em.line(xs + "[g * " + V + " + u] = (float)" + v + ";");
      std::string phase = em.popScope();
      completed.insert(phaseStack.back());
      phaseStack.pop_back();
      std::string loads = takeChunkLoads();
      // Elements past the row are -inf: exp(-inf - max) adds nothing.
      std::string head = (registers ? "#pragma unroll\n" : "#pragma unroll 1\n") +
                         std::string("for (int c0 = 0; c0 < ") + CH + "; c0 += " + G + ") {\n" +
                         "  float " + xs + "[" + N + "];\n" +
                         "#pragma unroll\n  for (int g = 0; g < " + G + "; ++g) {\n" +
                         "    const int c = c0 + g;\n" + indentLines(loads, 2) +
                         "#pragma unroll\n    for (int u = 0; u < " + V + "; ++u) {\n" +
                         "      const long long j = ((long long)c * " + T + " + lane) * " + V +
                         " + u;\n" + "      " + xs + "[g * " + V +
                         " + u] = __int_as_float(0xff800000);\n" +
                         "      if (c < " + CH + " && " + below("j") + ") {";
      em.lines(head);
      em.raw(phase);
      em.lines("      }\n    }\n  }\n  ls2_online_add<" + N + ">(" + m + ", " + s + ", " + xs +
               ");\n}");
      em.line(blockReduce("online", m + ", " + s) + ";");
      std::string maxName = em.fresh("red"), sumName = em.fresh("red");
      em.line("const float " + maxName + " = " + m + ";");
      // A max of NaN or +-inf makes x - max of the two-pass form NaN at
      // some element, and so the sum (the online pass leaves it 0 there).
      em.line("const float " + sumName + " = isfinite(" + m + ") ? " + s +
              " : __int_as_float(0x7fffffff);");
      reduced.try_emplace(os->max, maxName);
      reduced.try_emplace(os->sum, sumName);
      return op == os->max ? maxName : sumName;
    }
    // A phase: the thread's part of reduction `r` in a register.
    auto emitPhase = [&](Operation *r, bool max) {
      std::string acc = em.fresh("acc");
      em.line("float " + acc + " = " +
              (max ? std::string("__int_as_float(0xff800000)") : "0.0f") + ";");
      int outer = em.indent();
      beginPhase();
      em.pushScope(kElementLevel, outer + 3);
      phaseStack.push_back(phases++);
      std::string v = em.emit(r->getOperand(0), operandIndex);
      em.line(max ? acc + " = ls2_max(" + acc + ", (float)" + v + ");"
                  : acc + " += (float)" + v + ";");
      std::string phase = em.popScope();
      completed.insert(phaseStack.back());
      phaseStack.pop_back();
      em.lines(loopHead("j", takeChunkLoads()) + "    if (" + below("j") + ") {");
      em.raw(phase);
      em.lines("    }\n  }\n}");
      return acc;
    };
    std::string acc = emitPhase(op, isMax);
    // The other row sums that need no reduction still to come (a
    // LayerNorm backward's sum of dy * gamma and of dy * gamma * x-hat)
    // join this one's barriers (ls2_block_sums).
    if (threads > 32 && !isMax) {
      SmallVector<Operation *> group{op};
      SmallVector<std::string> accs{acc};
      for (Operation &other : body)
        if (&other != op && sumReady(&other)) {
          group.push_back(&other);
          accs.push_back(emitPhase(&other, false));
        }
      if (group.size() > 1) {
        std::string sums = em.fresh("sums");
        em.line("float " + sums + "[" + std::to_string(group.size()) + "] = {" +
                llvm::join(accs, ", ") + "};");
        em.line("ls2_block_sums<" + std::to_string(threads / 32) + ">(" + sums + ", ls2_red);");
        redFloats = std::max<int64_t>(redFloats, static_cast<int64_t>(group.size()) * (threads / 32));
        for (auto [k, r] : llvm::enumerate(group)) {
          std::string name = em.fresh("red");
          em.line("const float " + name + " = " + sums + "[" + std::to_string(k) + "];");
          reduced.try_emplace(r, name);
        }
        return reduced.lookup(op);
      }
    }
    std::string reduce = blockReduce(isMax ? "max" : "sum", acc);
    std::string name = em.fresh("red");
    em.line("const float " + name + " = " + reduce + ";");
    reduced.try_emplace(op, name);
    return name;
  };

  // The row loop: the outer scope, then the output phase. With value caches
  // the phases come first, in body order, so that the output phase finds
  // the caches they fill; otherwise the output phase asks for them, after
  // its own operands, so every operand load of the row is in flight before
  // the first reduction (loads left to the phase that first reads them
  // exposed their latency: H200, BERT-base's LayerNorm backward 2.24 ->
  // 2.35 ms a step).
  em.pushScope(kOuterLevel, 2);
  if (cachesValues)
    for (Operation &op : body)
      if (isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op) && !isColumnSum(op)) {
        Index at = rowIndex;
        for (size_t d = lead.size(); d < ctx.dims.shape(op.getResult(0)).size(); ++d)
          at.push_back({"0", kKernelLevel}); // keep_dims
        em.emit(op.getResult(0), at);
      }
  std::vector<std::string> rowValues(ctx.numYields());
  for (unsigned i = 0; i < ctx.numYields(); ++i)
    if (perRow[i])
      rowValues[i] = em.emit(ctx.yieldValue(i), yieldIndex(i));

  // Column sums: each thread adds its columns of every row it takes into
  // registers (ls2_cs<q>, declared before the row loop).
  if (!columnSums.empty() && !registers)
    throw EmitError{ctx.fusion, "sums the columns of rows of " + H +
                                    " elements, more than a thread's registers hold"};
  bool anyElement = llvm::is_contained(perRow, false);
  if (anyElement) {
    std::map<unsigned, std::string> vectors; // result -> vector name
    beginPhase();
    em.pushScope(kElementLevel, 2 + 3);
    for (unsigned i = 0; i < ctx.numYields(); ++i) {
      if (perRow[i])
        continue;
      if (columnOf[i] >= 0) {
        std::string v = em.emit(columnSums[columnOf[i]]->getOperand(0), elementIndex);
        em.line("ls2_cs" + std::to_string(columnOf[i]) + "[c * " + V + " + u] += (float)" + v +
                ";");
        continue;
      }
      std::string v = em.emit(ctx.yieldValue(i), yieldIndex(i));
      Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
      const std::string &stride = ctx.resultStrides[i];
      if (!stride.empty() && !sameIndex(yieldIndex(i), elementIndex))
        throw EmitError{ctx.fusion, "writes padded rows of another shape than the rows"};
      // (Streamed, a contiguous output's rows must be whole vectors too: a
      // padded input's rows alone may be.)
      if (vec > 1 && (vec * elementBytes(et)) % 16 == 0 &&
          (registers ? stride.empty() : !stride.empty() || h % vec == 0)) {
        std::string name = "ov" + std::to_string(i);
        vectors[i] = name;
        if (Value stored = storedValue(ctx.yieldValue(i)); stored != ctx.yieldValue(i))
          v = em.emit(stored, yieldIndex(i));
        em.line("ls2_put(" + name + ".v[u], " + v + ");");
      } else {
        em.line(storeText(ctx, i, "r * " + (stride.empty() ? H : stride) + " + j", v));
      }
    }
    std::string phase = em.popScope();
    std::string loads = takeChunkLoads();
    if (vectors.empty()) {
      em.lines(loopHead("j", loads) + "    if (" + below("j") + ") {");
      em.raw(phase);
      em.lines("    }\n  }\n}");
    } else {
      // Each chunk stored as one vector (lanes writing single elements V
      // apart sent GPT-2 medium's cross-entropy gradient through 8 sector
      // writes for each sector's bytes).
      std::string head = (registers ? std::string("#pragma unroll\n") : chunkUnroll) +
                         "for (int c = 0; c < " + CH + "; ++c) {\n" +
                         (loads.empty() ? chunkFirst : loads);
      for (auto &[i, name] : vectors) {
        Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
        head += "  ls2_vec<" + storageType(et) + ", " + V + "> " + name + ";\n";
      }
      head += "#pragma unroll\n  for (int u = 0; u < " + V + "; ++u) {\n";
      head += "    const long long j = ((long long)c * " + T + " + lane) * " + V + " + u;\n";
      head += "    if (" + below("j") + ") {";
      em.lines(head);
      em.raw(phase);
      std::string tail = "    }\n  }\n";
      // Whole vectors: aligned pointers, row strides of whole vectors, and
      // (rows not a multiple of V: padded rows) the chunk inside the row.
      std::string aligned, rowOf;
      std::map<unsigned, std::string> rowAt;
      for (auto &[i, name] : vectors) {
        aligned += (aligned.empty() ? "" : " | ") + std::string("(unsigned long long)") +
                   ctx.resultNames[i];
        const std::string &ld = ctx.resultStrides[i];
        rowAt[i] = "r * " + (ld.empty() ? H : ld);
        if (!ld.empty())
          rowOf += " && " + ld + " % " + V + " == 0";
      }
      if (h % vec != 0)
        rowOf += " && j0 + " + V + " <= " + H;
      tail += "  if (" + below("j0") + ") {\n";
      tail += "    if (((" + aligned + ") & 15) == 0" + rowOf + ") {\n";
      for (auto &[i, name] : vectors) {
        Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
        std::string vt = "ls2_vec<" + storageType(et) + ", " + V + ">";
        tail += "      *reinterpret_cast<" + vt + " *>(" + ctx.resultNames[i] + " + " +
                rowAt[i] + " + j0) = " + name + ";\n";
      }
      tail += "    } else {\n";
      tail += "#pragma unroll\n      for (int u = 0; u < " + V + "; ++u) {\n";
      tail += "        if (" + below("j0 + u") + ") {\n";
      for (auto &[i, name] : vectors)
        tail += "          " + ctx.resultNames[i] + "[" + rowAt[i] + " + j0 + u] = " + name +
                ".v[u];\n";
      tail += "        }\n      }\n    }\n  }\n}";
      em.lines(tail);
    }
  }
  if (!rowValues.empty()) {
    for (unsigned i = 0; i < ctx.numYields(); ++i)
      if (perRow[i] && !ctx.resultStrides[i].empty())
        throw EmitError{ctx.fusion, "writes padded rows of a per-row output"};
    std::string stores;
    for (unsigned i = 0; i < ctx.numYields(); ++i)
      if (perRow[i])
        stores += "  " + storeText(ctx, i, "r", rowValues[i]) + "\n";
    if (!stores.empty())
      em.lines("if (lane == 0) {\n" + stores + "}");
  }
  std::string rowCode = em.popScope();
  em.leafHook = nullptr;
  em.randomHook = nullptr;
  em.reduceHook = nullptr;
  em.valueHook = nullptr;
  em.emittedHook = nullptr;

  if (threads > 32)
    ctx.sharedDecls = "  __shared__ float ls2_red[" + std::to_string(redFloats) + "];\n";

  std::string c;
  c += "  const long long R = " + ctx.product(lead) + ";\n";
  c += "  const int lane = threadIdx.x % " + T + ";\n";
  const std::string CS = std::to_string(chunks * vec);
  for (size_t q = 0; q < columnSums.size(); ++q)
    c += "  float ls2_cs" + std::to_string(q) + "[" + CS + "] = {};\n";
  c += "  for (long long r = (long long)blockIdx.x * " + std::to_string(rowsPerBlock) +
       " + threadIdx.x / " + T + "; r < R;\n       r += (long long)gridDim.x * " +
       std::to_string(rowsPerBlock) + ") {\n";
  c += rowCode;
  c += "  }\n";
  ctx.launch.blockThreads = static_cast<uint32_t>(block);
  ctx.launch.dynamicSharedBytes = 0;
  ctx.launch.work.assign(lead.begin(), lead.end());
  ctx.launch.workPerBlock = static_cast<uint64_t>(rowsPerBlock);
  ctx.launch.maxBlocks = kMaxBlocks;
  if (!registers && block == 1024)
    ctx.minBlocksPerMultiprocessor = 2;
  if (!columnSums.empty()) {
    const uint32_t perSM = columnSumBlocksPerMultiprocessor(
        static_cast<int64_t>(columnSums.size()) * chunks * vec);
    const uint32_t columnBlocks = kH200Multiprocessors * perSM;
    ctx.launch.maxBlocks = columnBlocks;
    ctx.minBlocksPerMultiprocessor = perSM;
    // Two stages with a fixed order, so every run gives the same bits: each
    // block leaves its column sums (its row lanes' added in lane order) as
    // f32 partials [sum][block][H] in scratch past the counters; a second
    // kernel adds the blocks' partials in block order. The grid depends on
    // R alone (min(its blocks, ceil(R / rows per block))).
    const std::string NQ = std::to_string(columnSums.size()),
                      RPB = std::to_string(rowsPerBlock);
    c += "  float *ls2_partials = reinterpret_cast<float *>(scratch + " +
         std::to_string(kScratchCounterBytes) + ");\n";
    auto eachColumn = [&](const std::string &body) {
      return "#pragma unroll\n  for (int c = 0; c < " + CH + "; ++c)\n#pragma unroll\n" +
             "    for (int u = 0; u < " + V + "; ++u) {\n" +
             "      const long long j = ((long long)c * " + T + " + lane) * " + V + " + u;\n" +
             "      if (" + below("j") + ") {\n" + body + "      }\n    }\n";
    };
    // A thread's V columns are adjacent: written as vectors of 16 bytes, a
    // warp's partials fill whole sectors. Stored one float a lane (lanes V
    // floats apart), they took 8 sector writes for each one's bytes:
    // Transformer-base's LayerNorm backward sent 1.06 M of its 2.02 M L2
    // sectors there (ncu, H200).
    const bool vectorPartials = vec % 4 == 0;
    auto eachVector = [&](const std::string &values, const std::string &stores) {
      return "#pragma unroll\n  for (int c = 0; c < " + CH + "; ++c) {\n  " + chunkFirst +
             "    if (" + below("j0") + ") {\n" + values + stores + "    }\n  }\n";
    };
    std::string writes, lanes, values, stores;
    const std::string VT = "ls2_vec<float, " + V + ">";
    for (size_t q = 0; q < columnSums.size(); ++q) {
      std::string Q = std::to_string(q);
      std::string at = "(" + Q + " * (long long)gridDim.x + blockIdx.x) * " + H + " + j";
      std::string sum = "s" + Q;
      if (rowsPerBlock == 1) {
        writes += "        ls2_partials[" + at + "] = ls2_cs" + Q + "[c * " + V + " + u];\n";
        sum = "ls2_cs" + Q + "[c * " + V + " + u]";
      } else {
        lanes += "        ls2_colsum[threadIdx.x / " + T + "][" + Q + " * " + H +
                 " + j] = ls2_cs" + Q + "[c * " + V + " + u];\n";
        std::string total = "        float s" + Q + " = ls2_colsum[0][" + Q + " * " + H + " + j];\n" +
                            "        for (int k = 1; k < " + RPB + "; ++k) s" + Q +
                            " += ls2_colsum[k][" + Q + " * " + H + " + j];\n";
        writes += total + "        ls2_partials[" + at + "] = s" + Q + ";\n";
        values += total;
      }
      values += "        p" + Q + ".v[u] = " + sum + ";\n";
      stores += "      *reinterpret_cast<" + VT + " *>(ls2_partials + (" + Q +
                " * (long long)gridDim.x + blockIdx.x) * " + H + " + j0) = p" + Q + ";\n";
    }
    std::string vectorWrites;
    if (vectorPartials) {
      std::string decls;
      for (size_t q = 0; q < columnSums.size(); ++q)
        decls += "      " + VT + " p" + std::to_string(q) + ";\n";
      vectorWrites = eachVector(decls + "#pragma unroll\n      for (int u = 0; u < " + V +
                                    "; ++u) {\n" +
                                    (rowsPerBlock == 1 ? "" : "        const long long j = j0 + u;\n") +
                                    values + "      }\n",
                                stores);
    }
    if (rowsPerBlock == 1) {
      c += vectorPartials ? vectorWrites : eachColumn(writes);
    } else {
      ctx.sharedDecls += "  __shared__ float ls2_colsum[" + RPB + "][" + NQ + " * " + H + "];\n";
      c += eachColumn(lanes);
      c += "  __syncthreads();\n";
      c += "  if (threadIdx.x < " + T + ") {\n" +
           (vectorPartials ? vectorWrites : eachColumn(writes)) + "  }\n";
    }
    int64_t maxBlocks = std::min<int64_t>(
        columnBlocks, (ctx.bound(lead) + rowsPerBlock - 1) / rowsPerBlock);
    ctx.usesScratch = true;
    ctx.scratchBytes = kScratchCounterBytes + static_cast<uint64_t>(columnSums.size()) *
                                                  static_cast<uint64_t>(maxBlocks) *
                                                  static_cast<uint64_t>(h) * 4;

    // The second kernel: 8 columns x 32 block lanes a block, each lane every
    // 32nd block's partial, then the lanes in order.
    const int64_t tiles = (h + 7) / 8;
    std::string d;
    d += "  __shared__ float ls2_lanes[32][8];\n";
    d += "  const long long R = " + ctx.product(lead) + ";\n";
    d += "  const long long rowBlocks = (R + " + RPB + " - 1) / " + RPB + ";\n";
    d += "  const long long G = rowBlocks < " + std::to_string(columnBlocks) +
         " ? rowBlocks : " + std::to_string(columnBlocks) + ";\n";
    d += "  const float *ls2_partials = reinterpret_cast<const float *>(scratch + " +
         std::to_string(kScratchCounterBytes) + ");\n";
    d += "  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;\n";
    d += "  const int q = blockIdx.x / " + std::to_string(tiles) + ";\n";
    d += "  const long long j = (long long)(blockIdx.x % " + std::to_string(tiles) +
         ") * 8 + tx;\n";
    d += "  float s = 0.0f;\n";
    d += "  if (j < " + H + ")\n";
    d += "    for (long long g = ty; g < G; g += 32) s += ls2_partials[(q * G + g) * " + H +
         " + j];\n";
    d += "  ls2_lanes[ty][tx] = s;\n  __syncthreads();\n";
    d += "  if (ty != 0 || j >= " + H + ")\n    return;\n";
    d += "  float t = ls2_lanes[0][tx];\n";
    d += "  for (int k = 1; k < 32; ++k) t += ls2_lanes[k][tx];\n";
    d += "  switch (q) {\n";
    for (unsigned i = 0; i < ctx.numYields(); ++i)
      if (columnOf[i] >= 0)
        d += "  case " + std::to_string(columnOf[i]) + ": " + storeText(ctx, i, "j", "t") +
             " break;\n";
    d += "  }\n";
    ctx.secondCode = d;
    ctx.secondLaunch.blockThreads = 256;
    ctx.secondLaunch.dynamicSharedBytes = 0;
    ctx.secondLaunch.work = {runtime::Dim{static_cast<int64_t>(columnSums.size()) * tiles, -1, 0}};
    ctx.secondLaunch.workPerBlock = 1;
    ctx.secondLaunch.maxBlocks = static_cast<uint32_t>(columnSums.size() * tiles);
  }
  ctx.code = c;
}

} // namespace ls2c::codegen
