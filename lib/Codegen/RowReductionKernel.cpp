//===- RowReductionKernel.cpp - the skeleton of row-reduction fusions -----===//
//
// Rows [R, H]: the reduced (trailing) dims of the group's reductions. T
// threads take a row (T = 32 and four rows per block up to 256 elements,
// otherwise one block of up to 1024 threads), each thread the elements
// j = (c * T + lane) * VEC + u. Every reduction is a phase: a loop over the
// thread's elements, then a warp-shuffle or block reduction in f32. When a
// thread holds at most 32 elements, the operands it reads along the row and
// its random numbers are loaded once into registers (16-byte vectors when
// aligned) and every phase reuses them; longer rows (vocabularies) re-read
// them (from L1/L2) in each phase. Outputs along the row are stored as
// 16-byte vectors when aligned. A padded [R, H] operand or output
// (PaddedRows.h: the logits and their gradient) is read and written at
// r * stride + j, its stride a kernel parameter.
//
//===----------------------------------------------------------------------===//

#include "KernelContext.h"

#include "mlir/IR/BuiltinTypes.h"

#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

constexpr uint32_t kMaxBlocks = 8192;

} // namespace

void emitRowReductionKernel(KernelContext &ctx) {
  ElementalEmitter &em = *ctx.emitter;
  Block &body = ctx.fusion.getBody().front();

  // The rows: every reduction reduces the same trailing dims of one shape.
  std::optional<std::pair<SmallVector<runtime::Dim>, SmallVector<runtime::Dim>>> rows;
  for (Operation &op : body) {
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
  for (unsigned i = 0; i < ctx.numYields(); ++i) {
    ArrayRef<runtime::Dim> s = ctx.dims.shape(ctx.yieldValue(i));
    if (ctx.sameCount(s, full))
      perRow.push_back(false);
    else if (ctx.sameCount(s, lead))
      perRow.push_back(true);
    else
      throw EmitError{ctx.fusion, "yields a value that is neither the rows' "
                                  "shape nor one value per row"};
  }

  // VEC: 16 bytes of the narrowest float streamed along the rows.
  int64_t narrowest = 4;
  for (BlockArgument arg : body.getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()))
      if (isa<FloatType>(t.getElementType()) && sameDims(ctx.dims.shape(arg), full))
        narrowest = std::min(narrowest, elementBytes(t.getElementType()));
  for (unsigned i = 0; i < ctx.numYields(); ++i)
    if (!perRow[i])
      narrowest = std::min(narrowest,
                           elementBytes(cast<RankedTensorType>(
                                              ctx.yieldValue(i).getType())
                                              .getElementType()));
  int64_t vec = 16 / narrowest;
  if (h % vec != 0)
    vec = 1;
  int64_t threads = ((h + 8 * 32 - 1) / (8 * 32)) * 32;
  threads = std::max<int64_t>(32, std::min<int64_t>(1024, threads));
  int64_t chunks = (h + threads * vec - 1) / (threads * vec);
  bool registers = chunks * vec <= 32;
  int64_t block = threads == 32 ? 128 : threads;
  int64_t rowsPerBlock = block / threads;
  std::string T = std::to_string(threads), V = std::to_string(vec),
              CH = std::to_string(chunks), H = std::to_string(h);
  if (threads > 32)
    ctx.sharedDecls = "  __shared__ float ls2_red[32];\n";

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
    if (perRow[i])
      return sameDims(s, lead) ? rowIndex
                               : delinearizeIndex(ctx.dimTexts(s), "r", kOuterLevel);
    return sameDims(s, full) ? elementIndex
                             : delinearizeIndex(ctx.dimTexts(s), "(r * " + std::to_string(h) + " + j)",
                                               kElementLevel);
  };

  auto loopHead = [&](const std::string &jName) {
    return "#pragma unroll\nfor (int c = 0; c < " + CH + "; ++c) {\n" +
           "#pragma unroll\n  for (int u = 0; u < " + V + "; ++u) {\n" +
           "    const long long " + jName + " = ((long long)c * " + T +
           " + lane) * " + V + " + u;\n";
  };

  // Register caches of what the row reads, filled where first needed.
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
        return cacheRef(it->second);
      std::string name = em.fresh("rc");
      Type et = cast<RankedTensorType>(arg.getType()).getElementType();
      std::string ct = computeType(et);
      std::string fill = ct + " " + name + "[" + std::to_string(chunks * vec) + "];\n";
      bool contiguous = sameIndex(index, elementIndex) && vec > 1 &&
                        ctx.argStrides[arg.getArgNumber()].empty() &&
                        (vec * elementBytes(et)) % 16 == 0 &&
                        (h * elementBytes(et)) % 16 == 0;
      std::string scalarFill = name + "[c * " + V + " + u] = j < " + H +
                               " ? ls2_load(" + p + ", " + flat.text + ") : " +
                               ct + "(0);";
      if (contiguous) {
        std::string vt = "ls2_vec<" + storageType(et) + ", " + V + ">";
        fill += "#pragma unroll\nfor (int c = 0; c < " + CH + "; ++c) {\n";
        fill += "  const long long j0 = ((long long)c * " + T + " + lane) * " + V + ";\n";
        fill += "  if (j0 < " + H + " && ((unsigned long long)" + p + " & 15) == 0) {\n";
        fill += "    const " + vt + " w = *reinterpret_cast<const " + vt + " *>(" + p +
                " + r * " + H + " + j0);\n";
        fill += "#pragma unroll\n    for (int u = 0; u < " + V + "; ++u)\n";
        fill += "      " + name + "[c * " + V + " + u] = ls2_cvt(w.v[u]);\n";
        fill += "  } else {\n";
        fill += "#pragma unroll\n    for (int u = 0; u < " + V + "; ++u) {\n";
        fill += "      const long long j = j0 + u;\n";
        fill += "      " + scalarFill + "\n";
        fill += "    }\n  }\n}\n";
      } else {
        fill += loopHead("j") + "    " + scalarFill + "\n  }\n}\n";
      }
      em.lineAt(kOuterLevel, fill);
      caches.emplace(key, name);
      return cacheRef(name);
    };
    em.randomHook = [&](ls2::RandomUniformOp op, const Index &index,
                        const IndexExpr &flat) -> std::optional<std::string> {
      if (flat.level < kElementLevel)
        return std::nullopt;
      std::string key = "random" + std::to_string(op.getStream()) + "@" + flat.text;
      if (auto it = caches.find(key); it != caches.end())
        return cacheRef(it->second);
      std::string seed = em.emit(op.getSeed(), {});
      std::string offset = em.emit(op.getOffset(), {});
      std::string name = em.fresh("rn");
      std::string fill = "float " + name + "[" + std::to_string(chunks * vec) + "];\n";
      // Numbers of the rows' own shape, four consecutive elements per
      // thread from a multiple of 4: one Philox block gives four (Philox
      // was about 40% of a LayerNorm-dropout kernel's instructions).
      if (vec % 4 == 0 && h % 4 == 0 && sameIndex(index, elementIndex) &&
          sameDims(ctx.dims.shape(op.getResult()), full)) {
        fill += "#pragma unroll\nfor (int c = 0; c < " + CH + "; ++c) {\n";
        fill += "#pragma unroll\n  for (int u = 0; u < " + V + "; u += 4) {\n";
        fill += "    const long long j = ((long long)c * " + T + " + lane) * " + V + " + u;\n";
        fill += "    if (j < " + H + ") ls2_uniform4(" + seed + ", " + offset + ", " +
                em.streamText(op) + ", " + flat.text + ", &" + name + "[c * " + V +
                " + u]);\n";
        fill += "    else " + name + "[c * " + V + " + u] = " + name + "[c * " + V +
                " + u + 1] = " + name + "[c * " + V + " + u + 2] = " + name + "[c * " + V +
                " + u + 3] = 0.0f;\n  }\n}\n";
      } else {
        fill += loopHead("j") + "    " + name + "[c * " + V + " + u] = j < " + H +
                " ? ls2_uniform(" + seed + ", " + offset + ", " +
                em.streamText(op) + ", " + flat.text + ") : 0.0f;\n  }\n}\n";
      }
      em.lineAt(kOuterLevel, fill);
      caches.emplace(key, name);
      return cacheRef(name);
    };
  }

  // Each reduction is a phase of the row, emitted into the row scope the
  // first time a value needs it.
  em.reduceHook = [&](Operation *op, const Index &index) -> std::string {
    bool isMax = isa<ls2::ReduceMaxOp>(op);
    // The result's index without the reduced dims (kept as 1s with keep_dims).
    Index operandIndex(index.begin(), index.begin() + lead.size());
    for (IndexExpr &e : delinearizeIndex(trailSizes, "j", kElementLevel))
      operandIndex.push_back(e);
    std::string acc = em.fresh("acc");
    em.line("float " + acc + " = " +
            (isMax ? std::string("__int_as_float(0xff800000)") : "0.0f") + ";");
    int outer = em.indent();
    em.pushScope(kElementLevel, outer + 3);
    std::string v = em.emit(op->getOperand(0), operandIndex);
    em.line(isMax ? acc + " = ls2_max(" + acc + ", (float)" + v + ");"
                  : acc + " += (float)" + v + ";");
    std::string phase = em.popScope();
    em.lines(loopHead("j") + "    if (j < " + H + ") {");
    em.raw(phase);
    em.lines("    }\n  }\n}");
    std::string reduce =
        threads == 32
            ? std::string(isMax ? "ls2_warp_max(" : "ls2_warp_sum(") + acc + ")"
            : std::string(isMax ? "ls2_block_max<" : "ls2_block_sum<") +
                  std::to_string(threads / 32) + ">(" + acc + ", ls2_red)";
    std::string name = em.fresh("red");
    em.line("const float " + name + " = " + reduce + ";");
    return name;
  };

  // The row loop: the outer scope, then the output phase.
  em.pushScope(kOuterLevel, 2);
  std::vector<std::string> rowValues(ctx.numYields());
  for (unsigned i = 0; i < ctx.numYields(); ++i)
    if (perRow[i])
      rowValues[i] = em.emit(ctx.yieldValue(i), yieldIndex(i));

  bool anyElement = llvm::is_contained(perRow, false);
  if (anyElement) {
    std::map<unsigned, std::string> vectors; // result -> vector name
    em.pushScope(kElementLevel, 2 + 3);
    for (unsigned i = 0; i < ctx.numYields(); ++i) {
      if (perRow[i])
        continue;
      std::string v = em.emit(ctx.yieldValue(i), yieldIndex(i));
      Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
      const std::string &stride = ctx.resultStrides[i];
      if (!stride.empty() && !sameIndex(yieldIndex(i), elementIndex))
        throw EmitError{ctx.fusion, "writes padded rows of another shape than the rows"};
      if (registers && vec > 1 && stride.empty() && (vec * elementBytes(et)) % 16 == 0) {
        std::string name = "ov" + std::to_string(i);
        vectors[i] = name;
        em.line("ls2_put(" + name + ".v[u], " + v + ");");
      } else {
        em.line(storeText(ctx, i, "r * " + (stride.empty() ? H : stride) + " + j", v));
      }
    }
    std::string phase = em.popScope();
    if (vectors.empty()) {
      em.lines(loopHead("j") + "    if (j < " + H + ") {");
      em.raw(phase);
      em.lines("    }\n  }\n}");
    } else {
      // Registers hold the row: store each chunk as one vector.
      std::string head = "#pragma unroll\nfor (int c = 0; c < " + CH + "; ++c) {\n";
      for (auto &[i, name] : vectors) {
        Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
        head += "  ls2_vec<" + storageType(et) + ", " + V + "> " + name + ";\n";
      }
      head += "#pragma unroll\n  for (int u = 0; u < " + V + "; ++u) {\n";
      head += "    const long long j = ((long long)c * " + T + " + lane) * " + V + " + u;\n";
      head += "    if (j < " + H + ") {";
      em.lines(head);
      em.raw(phase);
      std::string tail = "    }\n  }\n";
      tail += "  const long long j0 = ((long long)c * " + T + " + lane) * " + V + ";\n";
      std::string aligned;
      for (auto &[i, name] : vectors)
        aligned += (aligned.empty() ? "" : " | ") + std::string("(unsigned long long)") +
                   ctx.resultNames[i];
      tail += "  if (j0 < " + H + ") {\n";
      tail += "    if (((" + aligned + ") & 15) == 0) {\n";
      for (auto &[i, name] : vectors) {
        Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
        std::string vt = "ls2_vec<" + storageType(et) + ", " + V + ">";
        tail += "      *reinterpret_cast<" + vt + " *>(" + ctx.resultNames[i] + " + r * " +
                H + " + j0) = " + name + ";\n";
      }
      tail += "    } else {\n";
      tail += "#pragma unroll\n      for (int u = 0; u < " + V + "; ++u) {\n";
      for (auto &[i, name] : vectors)
        tail += "        " + ctx.resultNames[i] + "[r * " + H + " + j0 + u] = " + name +
                ".v[u];\n";
      tail += "      }\n    }\n  }\n}";
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

  std::string c;
  c += "  const long long R = " + ctx.product(lead) + ";\n";
  c += "  const int lane = threadIdx.x % " + T + ";\n";
  c += "  for (long long r = (long long)blockIdx.x * " + std::to_string(rowsPerBlock) +
       " + threadIdx.x / " + T + "; r < R;\n       r += (long long)gridDim.x * " +
       std::to_string(rowsPerBlock) + ") {\n";
  c += rowCode;
  c += "  }\n";
  ctx.code = c;
  ctx.launch.blockThreads = static_cast<uint32_t>(block);
  ctx.launch.dynamicSharedBytes = 0;
  ctx.launch.work.assign(lead.begin(), lead.end());
  ctx.launch.workPerBlock = static_cast<uint64_t>(rowsPerBlock);
  ctx.launch.maxBlocks = kMaxBlocks;
}

} // namespace ls2c::codegen
