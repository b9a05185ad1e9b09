//===- LoopKernel.cpp - the skeleton of loop fusions ----------------------===//
//
// Grid-stride over the N output elements, VEC consecutive elements per
// thread: when every vector-accessed pointer is 16-byte aligned and the VEC
// elements are in range, operands read at the output's own index are loaded
// and the outputs stored as 16-byte vectors, as are row-broadcast operands
// (a bias) at the vector's column; otherwise (the tail, or unaligned views)
// element by element. On every path an element's outputs are all computed
// before the first is stored, so an output written over an argument
// (InPlaceResults.h) never feeds another output of the same element.
//
//===----------------------------------------------------------------------===//

#include "KernelContext.h"

#include "mlir/IR/BuiltinTypes.h"

#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

constexpr unsigned kBlock = 256;
constexpr uint32_t kMaxBlocks = 8192;

} // namespace

void emitLoopKernel(KernelContext &ctx) {
  ElementalEmitter &em = *ctx.emitter;
  unsigned numYields = ctx.numYields();
  ArrayRef<runtime::Dim> domain = ctx.dims.shape(ctx.yieldValue(0));
  // Every output has the domain's element count; each is written at its
  // own row-major offset i (a reshape of the domain).
  for (unsigned i = 1; i < numYields; ++i)
    if (!ctx.sameCount(ctx.dims.shape(ctx.yieldValue(i)), domain))
      throw EmitError{ctx.fusion, "yields values of different element counts "
                                  "from a loop"};
  std::string n = ctx.product(domain);

  // A single element: one thread.
  if (domain.empty() || ctx.bound(domain) == 1) {
    ctx.launch = {32, 0, {}, 1, 1};
    em.pushScope(kElementLevel, 2);
    std::vector<std::string> values; // all read before any store (below)
    for (unsigned i = 0; i < numYields; ++i) {
      Index at(ctx.dims.shape(ctx.yieldValue(i)).size(), IndexExpr{"0", kKernelLevel});
      values.push_back(em.emit(ctx.yieldValue(i), at));
    }
    for (unsigned i = 0; i < numYields; ++i)
      em.line(storeText(ctx, i, "0", values[i]));
    ctx.code = "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n" + em.popScope() + "  }\n";
    return;
  }

  // VEC: 16 bytes of the narrowest float tensor the kernel streams.
  int64_t narrowest = 4;
  for (unsigned i = 0; i < numYields; ++i) {
    Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
    if (isa<FloatType>(et))
      narrowest = std::min(narrowest, elementBytes(et));
  }
  int vec = static_cast<int>(16 / narrowest);
  // The index of flat offset i in a value's own shape.
  auto canonicalOf = [&](Value v) {
    return delinearizeIndex(ctx.dimTexts(ctx.dims.shape(v)), "i", kElementLevel);
  };
  auto isIdentity = [&](Value v, const Index &index) {
    return ctx.sameCount(ctx.dims.shape(v), domain) && sameIndex(index, canonicalOf(v));
  };

  // Vector path: operands read at the canonical index come from vectors
  // loaded before the element loop.
  std::map<unsigned, std::string> vectorLoads; // block arg -> vector name
  auto vectorType = [&](Type et) {
    return "ls2_vec<" + storageType(et) + ", " + std::to_string(vec) + ">";
  };
  auto vectorizable = [&](Type et) {
    return (vec * elementBytes(et)) % 16 == 0;
  };
  // A row-broadcast operand (a bias [C] read at i % C, C a static multiple
  // of VEC): the VEC elements share a row, so it is one vector load at the
  // column of the first, not a 64-bit modulo and a scalar load per element.
  std::map<unsigned, std::string> columnLoads; // block arg -> vector name
  std::string columns;                          // C of those loads
  auto isColumnRead = [&](BlockArgument arg, const Index &index) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (index.empty() || !type.hasStaticShape() || type.getNumElements() % vec != 0 ||
        type.getShape().back() != type.getNumElements())
      return false;
    std::string c = std::to_string(type.getNumElements());
    for (size_t d = 0; d + 1 < index.size(); ++d)
      if (index[d].text != "0")
        return false;
    if (index.back().text != "(i % " + c + ")" || (!columns.empty() && columns != c))
      return false;
    columns = c;
    return true;
  };
  em.leafHook = [&](BlockArgument arg, const Index &index,
                    const IndexExpr &) -> std::optional<std::string> {
    Type et = cast<RankedTensorType>(arg.getType()).getElementType();
    if (!isIdentity(arg, index)) {
      if (!vectorizable(et) || !isColumnRead(arg, index))
        return std::nullopt;
      auto [it, inserted] = columnLoads.try_emplace(arg.getArgNumber(), "");
      if (inserted)
        it->second = em.fresh("cv");
      return "ls2_cvt(" + it->second + ".v[u])";
    }
    if (!vectorizable(et))
      return "ls2_load(" + ctx.argNames[arg.getArgNumber()] + ", i)";
    auto [it, inserted] = vectorLoads.try_emplace(arg.getArgNumber(), "");
    if (inserted)
      it->second = em.fresh("lv");
    return "ls2_cvt(" + it->second + ".v[u])";
  };
  em.pushScope(kElementLevel, 4);
  std::vector<std::string> values;
  for (unsigned i = 0; i < numYields; ++i)
    values.push_back(em.emit(ctx.yieldValue(i), canonicalOf(ctx.yieldValue(i))));
  std::vector<std::string> vectorStores;
  for (unsigned i = 0; i < numYields; ++i) {
    Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
    if (vectorizable(et)) {
      Value stored = storedValue(ctx.yieldValue(i));
      std::string v = stored == ctx.yieldValue(i) ? values[i] : em.emit(stored, canonicalOf(stored));
      em.line("ls2_put(ov" + std::to_string(i) + ".v[u], " + v + ");");
      vectorStores.push_back(ctx.resultNames[i]);
    } else {
      em.line(storeText(ctx, i, "i", values[i]));
      vectorStores.push_back("");
    }
  }
  std::string vectorBody = em.popScope();

  // Scalar path: the same body with plain loads and stores.
  em.leafHook = [&](BlockArgument arg, const Index &index,
                    const IndexExpr &) -> std::optional<std::string> {
    if (!isIdentity(arg, index))
      return std::nullopt;
    return "ls2_load(" + ctx.argNames[arg.getArgNumber()] + ", i)";
  };
  // Every output's value before any store, as in the vector path: an output
  // may be written over an argument that another output reads at the same
  // index (InPlaceResults.h: an optimizer's moments).
  em.pushScope(kElementLevel, 4);
  std::vector<std::string> scalars;
  for (unsigned i = 0; i < numYields; ++i)
    scalars.push_back(em.emit(ctx.yieldValue(i), canonicalOf(ctx.yieldValue(i))));
  for (unsigned i = 0; i < numYields; ++i)
    em.line(storeText(ctx, i, "i", scalars[i]));
  std::string scalarBody = em.popScope();
  em.leafHook = nullptr;

  std::string c;
  std::string vs = std::to_string(vec);
  c += "  const long long N = " + n + ";\n";
  std::string aligned;
  for (const auto *loads : {&vectorLoads, &columnLoads})
    for (auto &[arg, name] : *loads)
      aligned += (aligned.empty() ? "" : " | ") + std::string("(unsigned long long)") +
                 ctx.argNames[arg];
  for (unsigned i = 0; i < numYields; ++i)
    if (!vectorStores[i].empty())
      aligned += (aligned.empty() ? "" : " | ") + std::string("(unsigned long long)") +
                 ctx.resultNames[i];
  c += "  const bool aligned = ((" + (aligned.empty() ? std::string("0ULL") : aligned) +
       ") & 15) == 0;\n";
  c += "  for (long long base = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * " + vs +
       "; base < N;\n       base += (long long)gridDim.x * blockDim.x * " + vs + ") {\n";
  c += "    if (aligned && base + " + vs + " <= N) {\n";
  if (!columnLoads.empty())
    c += "      const long long column = base % " + columns + ";\n";
  for (const auto *loads : {&vectorLoads, &columnLoads})
    for (auto &[arg, name] : *loads) {
      Type et = cast<RankedTensorType>(ctx.fusion.getBody().front().getArgument(arg).getType())
                    .getElementType();
      c += "      const " + vectorType(et) + " " + name + " = *reinterpret_cast<const " +
           vectorType(et) + " *>(" + ctx.argNames[arg] +
           (loads == &vectorLoads ? " + base);\n" : " + column);\n");
    }
  for (unsigned i = 0; i < numYields; ++i)
    if (!vectorStores[i].empty()) {
      Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
      c += "      " + vectorType(et) + " ov" + std::to_string(i) + ";\n";
    }
  c += "#pragma unroll\n      for (int u = 0; u < " + vs + "; ++u) {\n";
  c += "        const long long i = base + u;\n";
  c += vectorBody; // emitted at indent 4: inside the loop over u
  c += "      }\n";
  for (unsigned i = 0; i < numYields; ++i)
    if (!vectorStores[i].empty()) {
      Type et = cast<RankedTensorType>(ctx.yieldValue(i).getType()).getElementType();
      c += "      *reinterpret_cast<" + vectorType(et) + " *>(" + ctx.resultNames[i] +
           " + base) = ov" + std::to_string(i) + ";\n";
    }
  c += "    } else {\n";
  c += "      for (long long i = base; i < N && i < base + " + vs + "; ++i) {\n";
  c += scalarBody;
  c += "      }\n    }\n  }\n";
  ctx.code = c;
  ctx.launch.blockThreads = kBlock;
  ctx.launch.dynamicSharedBytes = 0;
  ctx.launch.work.assign(domain.begin(), domain.end());
  ctx.launch.workPerBlock = static_cast<uint64_t>(kBlock) * vec;
  ctx.launch.maxBlocks = kMaxBlocks;
}

} // namespace ls2c::codegen
