//===- ColumnReductionKernel.cpp - the skeleton of column reductions ------===//
//
// [R, C] reduced over R into [C] (C = 1: a whole tensor into a scalar), in
// two stages with a fixed order inside one launch. The grid is a fixed
// tiles x chunks: a block of TW columns x TY row lanes sums its chunk of
// rows (each lane every TY-th row, then the lanes in order through shared
// memory) into partials in kernel scratch; the last block of each tile to
// finish (a counter in scratch, reset by that block) adds the chunks'
// partials in chunk order. The partition depends only on R, so every run
// gives the same bits. The counters live in the scratch region shared by all
// kernels (kScratchCounterBytes in KernelContext.h). Elementwise outputs over [R, C] are stored on the
// way. When C holds whole tiles of 16-byte vectors, each thread takes VEC
// consecutive columns (vector loads and stores, VEC accumulators;
// emitVectorColumns).
//
//===----------------------------------------------------------------------===//

#include "KernelContext.h"

#include "mlir/IR/BuiltinTypes.h"

#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

constexpr int64_t kBlock = 256;
// Six 256-thread blocks per multiprocessor of an H200, all resident (the
// kernel asks for them: at most 40 registers), so the grid is one wave. At
// two per multiprocessor the bias gradient of a [16384, 3072] FFN (96 tiles
// x 2 chunks) took 0.51 ms on an H200, 7x its memory time; sized for eight,
// kernels of more than 32 registers ran 1.33 waves (GPT-2 medium's column
// reductions 4.65 -> 3.83 ms a step at six; ViT-B/16's, at 32 registers,
// 1.13 either way).
constexpr int64_t kBlocksPerMultiprocessor = 6;
constexpr int64_t kTargetBlocks = kBlocksPerMultiprocessor * kH200Multiprocessors;

/// A yielded reduction of the group.
struct Reduction {
  unsigned yield;
  Operation *op;
  bool isMax;
};

/// The kernel's indices: R rows, the thread's column lane tx and row lane
/// ty, its tile and chunk, `column` (the line naming its first column) and
/// the chunk's rows [rBegin, rEnd).
std::string tileHead(KernelContext &ctx, ArrayRef<runtime::Dim> lead, const std::string &TW,
                     const std::string &TILES, const std::string &CHUNKS,
                     const std::string &column) {
  std::string c;
  c += "  const long long R = " + ctx.product(lead) + ";\n";
  c += "  const int tx = threadIdx.x % " + TW + ", ty = threadIdx.x / " + TW + ";\n";
  c += "  const int tile = blockIdx.x % " + TILES + ", chunk = blockIdx.x / " + TILES + ";\n";
  c += column;
  c += "  const long long rowsPerChunk = (R + " + CHUNKS + " - 1) / " + CHUNKS + ";\n";
  c += "  const long long rBegin = chunk * rowsPerChunk;\n";
  c += "  const long long rEnd = R < rBegin + rowsPerChunk ? R : rBegin + rowsPerChunk;\n";
  return c;
}

/// The scratch's counters (its first kScratchCounterBytes) and the f32
/// partials past them.
std::string scratchPointers() {
  return "  unsigned *counters = reinterpret_cast<unsigned *>(scratch);\n"
         "  float *partials = reinterpret_cast<float *>(scratch + " +
         std::to_string(kScratchCounterBytes) + ");\n";
}

/// The kernel's second half: the threads `guard` selects sum their column's
/// lanes (ls2_col[q][y][slot] over y) into the chunk's partial of column
/// `col`; the last block of the tile to finish (its counter) adds the
/// chunks' partials in chunk order, stores the reductions and resets the
/// counter.
std::string secondStage(KernelContext &ctx, const std::vector<Reduction> &reductions,
                        const std::string &TY, const std::string &CHUNKS, const std::string &C,
                        const std::string &guard, const std::string &slot,
                        const std::string &col) {
  std::string c;
  c += "  if (" + guard + ") {\n";
  for (size_t q = 0; q < reductions.size(); ++q) {
    std::string Q = std::to_string(q);
    c += "    float s" + Q + " = ls2_col[" + Q + "][0][" + slot + "];\n";
    c += "    for (int y = 1; y < " + TY + "; ++y) s" + Q + " = " +
         (reductions[q].isMax ? "ls2_max(s" + Q + ", ls2_col[" + Q + "][y][" + slot + "])"
                              : "s" + Q + " + ls2_col[" + Q + "][y][" + slot + "]") + ";\n";
    c += "    partials[(" + Q + " * " + CHUNKS + " + chunk) * " + C + " + " + col + "] = s" + Q +
         ";\n";
  }
  c += "  }\n";
  c += "  __threadfence();\n  __syncthreads();\n";
  c += "  if (threadIdx.x == 0)\n    ls2_last = atomicAdd(&counters[tile], 1u) == " + CHUNKS +
       " - 1;\n";
  c += "  __syncthreads();\n";
  c += "  if (!ls2_last)\n    return;\n";
  c += "  __threadfence();\n";
  c += "  if (" + guard + ") {\n";
  for (size_t q = 0; q < reductions.size(); ++q) {
    std::string Q = std::to_string(q);
    c += "    float t" + Q + " = __ldcg(&partials[(" + Q + " * " + CHUNKS + ") * " + C + " + " +
         col + "]);\n";
    c += "    for (int k = 1; k < " + CHUNKS + "; ++k) {\n";
    c += "      const float p = __ldcg(&partials[(" + Q + " * " + CHUNKS + " + k) * " + C +
         " + " + col + "]);\n";
    c += "      t" + Q + " = " + (reductions[q].isMax ? "ls2_max(t" + Q + ", p)" : "t" + Q + " + p") +
         ";\n    }\n";
    c += "    " + storeText(ctx, reductions[q].yield, col, "t" + Q) + "\n";
  }
  c += "  }\n";
  c += "  if (threadIdx.x == 0)\n    counters[tile] = 0u;\n";
  return c;
}

/// The group's rows [R, C] as the skeleton found them, with VEC columns per
/// thread.
struct VectorColumns {
  const std::vector<Reduction> &reductions;
  const std::vector<unsigned> &elementYields;
  ArrayRef<runtime::Dim> lead, trail, full;
  int64_t columns, tileWidth, laneRows, tiles, chunks, vec;
};

/// The column reduction with VEC consecutive columns per thread: per row,
/// the operands read at the element's own index come in as 16-byte vectors
/// and the elementwise outputs go out as vectors (a scalar body where a
/// pointer is not 16-byte aligned); VEC accumulators per reduction.
/// Per-column values are recomputed per row (the column is an element-level
/// index here), which costs L1 hits, not DRAM traffic.
void emitVectorColumns(KernelContext &ctx, const VectorColumns &g) {
  ElementalEmitter &em = *ctx.emitter;
  const size_t nred = g.reductions.size();
  const std::string TW = std::to_string(g.tileWidth), TY = std::to_string(g.laneRows),
                    C = std::to_string(g.columns), CHUNKS = std::to_string(g.chunks),
                    TILES = std::to_string(g.tiles), V = std::to_string(g.vec);

  std::vector<std::string> leadSizes = ctx.dimTexts(g.lead);
  std::vector<std::string> trailSizes = ctx.dimTexts(g.trail);
  Index elementIndex = delinearizeIndex(leadSizes, "r", kElementLevel);
  for (IndexExpr &e : delinearizeIndex(trailSizes, "col", kElementLevel))
    elementIndex.push_back(e);
  const std::string flat = "r * " + C + " + col";
  auto elementType = [](Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); };
  auto vectorType = [&](Type et) { return "ls2_vec<" + storageType(et) + ", " + V + ">"; };
  auto yieldIndex = [&](unsigned i) {
    ArrayRef<runtime::Dim> s = ctx.dims.shape(ctx.yieldValue(i));
    return sameDims(s, g.full)
               ? elementIndex
               : delinearizeIndex(ctx.dimTexts(s), "(" + flat + ")", kElementLevel);
  };

  // One body per path: the vector one reads identity-indexed operands from
  // vectors loaded before the loop over u and writes outputs into vectors.
  std::map<unsigned, std::string> vectorLoads; // block arg -> vector name
  // A vector of VEC elements must be a whole number of 16-byte words (not
  // VEC booleans or bytes).
  auto whole = [&](Type et) { return (g.vec * elementBytes(et)) % 16 == 0; };
  auto body = [&](bool vectors) {
    em.leafHook = [&, vectors](BlockArgument arg, const Index &index,
                               const IndexExpr &) -> std::optional<std::string> {
      if (!vectors || !sameIndex(index, elementIndex) ||
          !sameDims(ctx.dims.shape(arg), g.full) || !whole(elementType(arg)))
        return std::nullopt;
      auto [it, inserted] = vectorLoads.try_emplace(arg.getArgNumber(), "");
      if (inserted)
        it->second = em.fresh("lv");
      return "ls2_cvt(" + it->second + ".v[u])";
    };
    em.pushScope(kElementLevel, 5);
    for (size_t q = 0; q < nred; ++q) {
      std::string v = em.emit(g.reductions[q].op->getOperand(0), elementIndex);
      std::string acc = "acc" + std::to_string(q) + "[u]";
      em.line(g.reductions[q].isMax ? acc + " = ls2_max(" + acc + ", (float)" + v + ");"
                                    : acc + " += (float)" + v + ";");
    }
    for (unsigned i : g.elementYields) {
      std::string v = em.emit(ctx.yieldValue(i), yieldIndex(i));
      em.line(vectors && whole(elementType(ctx.yieldValue(i)))
                  ? "ls2_put(ov" + std::to_string(i) + ".v[u], " + v + ");"
                  : storeText(ctx, i, flat, v));
    }
    std::string code = em.popScope();
    em.leafHook = nullptr;
    return code;
  };
  std::string vectorBody = body(true);
  std::string scalarBody = body(false);

  std::string aligned;
  for (auto &[arg, name] : vectorLoads)
    aligned += (aligned.empty() ? "" : " | ") + std::string("(unsigned long long)") +
               ctx.argNames[arg];
  std::vector<unsigned> vectorStores;
  for (unsigned i : g.elementYields)
    if (whole(elementType(ctx.yieldValue(i))))
      vectorStores.push_back(i);
  for (unsigned i : vectorStores)
    aligned += (aligned.empty() ? "" : " | ") + std::string("(unsigned long long)") +
               ctx.resultNames[i];
  std::string loop = "#pragma unroll\n      for (int u = 0; u < " + V +
                     "; ++u) {\n        const long long col = col0 + u;\n";

  std::string c;
  c += tileHead(ctx, g.lead, TW, TILES, CHUNKS,
                "  const long long col0 = ((long long)tile * " + TW + " + tx) * " + V + ";\n");
  c += "  const bool aligned = ((" + (aligned.empty() ? std::string("0ULL") : aligned) +
       ") & 15) == 0;\n";
  for (size_t q = 0; q < nred; ++q)
    c += "  float acc" + std::to_string(q) + "[" + V + "];\n#pragma unroll\n  for (int u = 0; u < " +
         V + "; ++u) acc" + std::to_string(q) + "[u] = " +
         (g.reductions[q].isMax ? "__int_as_float(0xff800000)" : "0.0f") + ";\n";
  c += "  if (col0 < " + C + ") {\n";
  c += "    for (long long r = rBegin + ty; r < rEnd; r += " + TY + ") {\n";
  c += "      if (aligned) {\n";
  for (auto &[arg, name] : vectorLoads) {
    Type et = elementType(ctx.fusion.getBody().front().getArgument(arg));
    c += "      const " + vectorType(et) + " " + name + " = *reinterpret_cast<const " +
         vectorType(et) + " *>(" + ctx.argNames[arg] + " + r * " + C + " + col0);\n";
  }
  for (unsigned i : vectorStores)
    c += "      " + vectorType(elementType(ctx.yieldValue(i))) + " ov" + std::to_string(i) +
         ";\n";
  c += loop + vectorBody + "      }\n";
  for (unsigned i : vectorStores)
    c += "      *reinterpret_cast<" + vectorType(elementType(ctx.yieldValue(i))) + " *>(" +
         ctx.resultNames[i] + " + r * " + C + " + col0) = ov" + std::to_string(i) + ";\n";
  c += "      } else {\n";
  c += loop + scalarBody + "      }\n";
  c += "      }\n    }\n  }\n";
  c += scratchPointers();
  c += "#pragma unroll\n  for (int u = 0; u < " + V + "; ++u) {\n";
  for (size_t q = 0; q < nred; ++q)
    c += "    ls2_col[" + std::to_string(q) + "][ty][tx * " + V + " + u] = acc" +
         std::to_string(q) + "[u];\n";
  c += "  }\n  __syncthreads();\n";
  // The lanes' sums, then the chunks' partials: thread t of the first
  // TW * VEC sums column tile * TW * VEC + t.
  const std::string W = std::to_string(g.tileWidth * g.vec);
  c += "  const long long ct = (long long)tile * " + W + " + threadIdx.x;\n";
  c += secondStage(ctx, g.reductions, TY, CHUNKS, C,
                   "threadIdx.x < " + W + " && ct < " + C, "threadIdx.x", "ct");
  ctx.code = c;
}

} // namespace

void emitColumnReductionKernel(KernelContext &ctx) {
  ElementalEmitter &em = *ctx.emitter;

  // The reductions are yielded: find them and the shape they reduce.
  std::vector<Reduction> reductions;
  std::vector<unsigned> elementYields;
  std::optional<std::pair<SmallVector<runtime::Dim>, SmallVector<runtime::Dim>>> shape;
  for (unsigned i = 0; i < ctx.numYields(); ++i) {
    Operation *op = ctx.yieldValue(i).getDefiningOp();
    if (op && isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op)) {
      ArrayRef<int64_t> axes = isa<ls2::ReduceSumOp>(op)
                                   ? cast<ls2::ReduceSumOp>(op).getAxes()
                                   : cast<ls2::ReduceMaxOp>(op).getAxes();
      for (auto [k, a] : llvm::enumerate(axes))
        if (a != static_cast<int64_t>(k))
          throw EmitError{op, "a column reduction must reduce leading dims"};
      ArrayRef<runtime::Dim> in = ctx.dims.shape(op->getOperand(0));
      SmallVector<runtime::Dim> lead(in.begin(), in.begin() + axes.size());
      SmallVector<runtime::Dim> trail(in.begin() + axes.size(), in.end());
      for (const runtime::Dim &d : trail)
        if (!d.isStatic())
          throw EmitError{op, "keeps a dynamic dim in a column reduction"};
      if (!shape)
        shape.emplace(lead, trail);
      else if (!sameDims(shape->first, lead) || !sameDims(shape->second, trail))
        throw EmitError{op, "reduces another shape than the group's first reduction"};
      reductions.push_back({i, op, isa<ls2::ReduceMaxOp>(op)});
    } else {
      elementYields.push_back(i);
    }
  }
  if (!shape)
    throw EmitError{ctx.fusion, "is a column_reduction group that yields no reduction"};
  for (Reduction &r : reductions)
    for (Operation *user : r.op->getUsers())
      if (!isa<ls2::YieldOp>(user))
        throw EmitError{user, "reads a column reduction inside its own group"};
  ArrayRef<runtime::Dim> lead = shape->first, trail = shape->second;
  SmallVector<runtime::Dim> full(lead.begin(), lead.end());
  full.append(trail.begin(), trail.end());
  for (unsigned i : elementYields)
    if (!ctx.sameCount(ctx.dims.shape(ctx.yieldValue(i)), full))
      throw EmitError{ctx.fusion, "yields an elementwise value of another shape "
                                  "than the reduced rows"};

  int64_t columns = ctx.bound(trail);
  int64_t tileWidth = 1;
  while (tileWidth < 32 && tileWidth < columns)
    tileWidth *= 2;
  int64_t laneRows = kBlock / tileWidth;
  // VEC consecutive columns per thread, 16 bytes of the narrowest float the
  // rows stream: scalar 2-byte loads held the GELU gradient's column sums of
  // a [16384, 3072] fp16 FFN to 1.4 TB/s on an H200. Only for whole tiles of
  // full vectors (then every row's VEC columns start 16-byte aligned).
  size_t nred = reductions.size();
  int64_t narrowest = 4;
  for (BlockArgument arg : ctx.fusion.getBody().front().getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()))
      if (isa<FloatType>(t.getElementType()) && ctx.sameCount(ctx.dims.shape(arg), full))
        narrowest = std::min(narrowest, elementBytes(t.getElementType()));
  for (unsigned i : elementYields)
    narrowest = std::min(
        narrowest,
        elementBytes(cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType()));
  // At most 8: the block's threads sum the tile's TW x VEC columns, one
  // each (a 1-byte yield, a boolean mask, would make VEC 16).
  int64_t vec = std::min<int64_t>(16 / narrowest, kBlock / 32);
  if (tileWidth < 32 || columns % vec != 0 || columns < tileWidth * vec ||
      static_cast<int64_t>(nred) * laneRows * tileWidth * vec * 4 > 32 * 1024)
    vec = 1;
  int64_t tiles = (columns + tileWidth * vec - 1) / (tileWidth * vec);
  // Columns one a thread too many for the scratch counters (a ViT's position
  // embedding gradient at 197 tokens x hidden 2,700 made 16,622 tiles of
  // 32): wider tiles with fewer row lanes, up to a block's threads a row.
  while (vec == 1 && static_cast<uint64_t>(tiles) * 4 > kScratchCounterBytes &&
         tileWidth < kBlock) {
    tileWidth *= 2;
    laneRows = kBlock / tileWidth;
    tiles = (columns + tileWidth - 1) / tileWidth;
  }
  int64_t maxRows = ctx.bound(lead);
  int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>((maxRows + laneRows * 4 - 1) / (laneRows * 4),
                           std::max<int64_t>(1, kTargetBlocks / tiles)));
  // Scratch: one u32 counter per tile in the shared counter region, then
  // the f32 partials [reduction][chunk][column]. The partials start past the
  // whole region (not past this kernel's counters): another column
  // reduction with more tiles finds its counters at zero only if no kernel
  // left partials over them.
  if (static_cast<uint64_t>(tiles) * 4 > kScratchCounterBytes)
    throw EmitError{ctx.fusion, "has " + std::to_string(tiles) +
                                    " column tiles, more than the " +
                                    std::to_string(kScratchCounterBytes / 4) +
                                    " scratch counters"};
  const uint64_t counterBytes = kScratchCounterBytes;
  ctx.usesScratch = true;
  ctx.scratchBytes = counterBytes + nred * chunks * columns * 4;

  std::string TW = std::to_string(tileWidth), TY = std::to_string(laneRows),
              C = std::to_string(columns), CHUNKS = std::to_string(chunks),
              TILES = std::to_string(tiles);
  ctx.sharedDecls = "  __shared__ float ls2_col[" + std::to_string(nred) + "][" + TY + "][" +
                    std::to_string(tileWidth * vec) + "];\n  __shared__ bool ls2_last;\n";
  ctx.launch.blockThreads = static_cast<uint32_t>(kBlock);
  ctx.launch.dynamicSharedBytes = 0;
  ctx.launch.work = {runtime::Dim{tiles * chunks, -1, 0}};
  ctx.launch.workPerBlock = 1;
  ctx.launch.maxBlocks = static_cast<uint32_t>(tiles * chunks);
  ctx.minBlocksPerMultiprocessor = static_cast<unsigned>(kBlocksPerMultiprocessor);

  if (vec > 1) {
    emitVectorColumns(ctx, VectorColumns{reductions, elementYields, lead, trail, full, columns,
                                         tileWidth, laneRows, tiles, chunks, vec});
    return;
  }

  std::vector<std::string> leadSizes = ctx.dimTexts(lead);
  std::vector<std::string> trailSizes = ctx.dimTexts(trail);
  Index columnIndex = delinearizeIndex(trailSizes, "col", kOuterLevel);
  Index elementIndex = delinearizeIndex(leadSizes, "r", kElementLevel);
  elementIndex.append(columnIndex.begin(), columnIndex.end());

  em.pushScope(kOuterLevel, 2);
  em.pushScope(kElementLevel, 3);
  for (size_t q = 0; q < nred; ++q) {
    std::string v = em.emit(reductions[q].op->getOperand(0), elementIndex);
    std::string acc = "acc" + std::to_string(q);
    em.line(reductions[q].isMax ? acc + " = ls2_max(" + acc + ", (float)" + v + ");"
                                : acc + " += (float)" + v + ";");
  }
  for (unsigned i : elementYields) {
    // Written at its row-major offset r * C + col (a reshape of the rows
    // when its shape differs).
    ArrayRef<runtime::Dim> s = ctx.dims.shape(ctx.yieldValue(i));
    std::string flat = "r * " + std::to_string(columns) + " + col";
    Index at = sameDims(s, full) ? elementIndex
                                 : delinearizeIndex(ctx.dimTexts(s), "(" + flat + ")",
                                                   kElementLevel);
    std::string v = em.emit(ctx.yieldValue(i), at);
    em.line(storeText(ctx, i, flat, v));
  }
  std::string element = em.popScope();
  em.lines("for (long long r = rBegin + ty; r < rEnd; r += " + TY + ") {");
  em.raw(element);
  em.line("}");
  std::string column = em.popScope();

  std::string c;
  c += tileHead(ctx, lead, TW, TILES, CHUNKS,
                "  const long long col = (long long)tile * " + TW + " + tx;\n");
  for (size_t q = 0; q < nred; ++q)
    c += "  float acc" + std::to_string(q) + " = " +
         (reductions[q].isMax ? "__int_as_float(0xff800000)" : "0.0f") + ";\n";
  c += "  if (col < " + C + ") {\n" + column + "  }\n";
  c += scratchPointers();
  for (size_t q = 0; q < nred; ++q)
    c += "  ls2_col[" + std::to_string(q) + "][ty][tx] = acc" + std::to_string(q) + ";\n";
  c += "  __syncthreads();\n";
  c += secondStage(ctx, reductions, TY, CHUNKS, C, "ty == 0 && col < " + C, "tx", "col");
  ctx.code = c;
}

} // namespace ls2c::codegen
