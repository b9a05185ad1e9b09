//===- ScatterAddKernel.cpp - the embedding gradient, deterministic -------===//
//
// ls2.scatter_add sums update rows [T, H] into a [V, H] table at the rows
// their ids name, in an order fixed by the sizes alone (the same bits run to
// run), without atomics. A block owns a tile: K table rows (and, for tables
// too small to fill the GPU, a slice of their columns) accumulated in f32
// in shared memory. It scans its ids 1024 at a time: warp ballots mark the
// ids that fall in its rows, one warp lists them in token order, and the
// threads add their updates (16 loads in flight, coalesced along columns).
//
// Small tables (token types: V = 2; positions) would leave the GPU idle,
// since only tiles x columns threads have work: BERT-base's token-type
// table at T = 16384 took 2.2 ms on an H200 with 24 blocks of 32 working
// threads. So:
//  - a slice narrower than the block is added by several token lanes
//    (thread t: column t % SLICE, lane t / SLICE); lane l takes the
//    matches l, l + LANES, ... of each 1024 ids, into its own copy of the
//    accumulator (fewer lanes where shared memory is short), and the lanes
//    are summed in lane order;
//  - when the tiles are far fewer than the ~264 blocks that fill an H200,
//    the tokens are split too: CHUNKS fixed contiguous id ranges (their
//    bounds depend only on T), each block writes its tile's partial sums to
//    kernel scratch, and the last block of the tile to finish (a u32
//    counter per tile in the shared counter region, kScratchCounterBytes,
//    reset by that block) adds the partials in chunk order and stores the
//    table. Large tables (enough tiles) keep one chunk: no scratch traffic.
// The summation order (chunk, then lane, then token) differs from the
// reference interpreter's token order but depends only on the sizes and
// ids, never on timing. Each block reads the ids of its range (from L2) and
// only its own update rows; the table is written once.
//
// A dynamic row count (the gradient of rows gathered from an activation,
// such as the masked-LM head's labelled tokens) is a kernel parameter: the
// tiles are sized for the bound, counted per call, and never split by
// tokens (the table is the activation, large at the bound).
//
// Tables with enough rows to give every multiprocessor a tile take the
// sorted-ids kernels instead (ScatterAddSorted.cpp): there each block reads
// only its own ids rather than all of them.
//
//===----------------------------------------------------------------------===//

#include "ScatterAdd.h"

#include "ElementalEmitter.h"
#include "Prelude.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

/// The scan kernel: every block tests all ids against its K rows.
FailureOr<GeneratedKernel> scanKernel(ls2::ScatterAddOp op, const std::string &kernelName,
                                      const ScatterAddShape &shape) {
  auto result = cast<RankedTensorType>(op.getType());
  auto updates = cast<RankedTensorType>(op.getUpdates().getType());
  auto ids = cast<RankedTensorType>(op.getIds().getType());
  const bool dynamicRows = shape.dynamicRows;
  const int64_t rows = shape.rowsBound, h = shape.width;
  constexpr int64_t kBlock = 256;
  constexpr int64_t kChunk = 1024; // ids a block scans between two barriers
  constexpr int64_t kSharedBudget = 96 * 1024;
  constexpr int64_t kBusyBlocks = 264; // two per multiprocessor of an H100/H200
  int64_t k = std::max<int64_t>(
      1, std::min<int64_t>({256, kSharedBudget / (h * 4), rows}));
  int64_t rowBlocks = (rows + k - 1) / k;
  // Small tables (token types, positions) would leave most multiprocessors
  // idle: their columns are split between blocks, in multiples of 32.
  int64_t splits = std::clamp<int64_t>(kBusyBlocks / rowBlocks, 1, std::max<int64_t>(1, h / 32));
  int64_t slice = (h + splits - 1) / splits;
  slice = std::min<int64_t>(h, (slice + 31) / 32 * 32);
  splits = (h + slice - 1) / slice;
  int64_t tiles = rowBlocks * splits;
  // Token lanes: every thread works when the slice is narrower than the
  // block, each lane with its own accumulator while shared memory allows.
  int64_t lanes = std::max<int64_t>(1, kBlock / slice);
  while (lanes > 1 && lanes * k * slice * 4 > kSharedBudget)
    --lanes;
  // Token chunks: only when the tiles alone fill under half the GPU (a
  // large table's single pass has no scratch traffic). One u32 counter per
  // tile in the shared counter region, then the f32 partials
  // [tile][chunk][K][SLICE] past the whole region (as the column
  // reductions: another kernel's counters stay zero).
  int64_t chunks = 1;
  if (tiles * 2 <= kBusyBlocks && !dynamicRows)
    chunks = kBusyBlocks / tiles;
  if (chunks > 1 && static_cast<uint64_t>(tiles) * 4 > kScratchCounterBytes)
    return op.emitError("scatter_add has ")
           << tiles << " tiles, more than the " << kScratchCounterBytes / 4
           << " scratch counters (generating kernel " << kernelName << ")";
  int64_t blocks = tiles * chunks;

  GeneratedKernel out;
  runtime::Kernel &kernel = out.kernel;
  kernel.name = kernelName;
  kernel.launch.blockThreads = kBlock;
  kernel.launch.dynamicSharedBytes = static_cast<uint32_t>(lanes * k * slice * 4);
  kernel.launch.work = {runtime::Dim{blocks, -1, 0}};
  kernel.launch.workPerBlock = 1;
  kernel.launch.maxBlocks = static_cast<uint32_t>(blocks);
  kernel.params = {runtime::ParamKind::Pointer, runtime::ParamKind::Pointer,
                   runtime::ParamKind::Pointer, runtime::ParamKind::Int64};
  out.bindings = {{ParamBinding::Kind::Operand, 0, {}},
                  {ParamBinding::Kind::Operand, 1, {}},
                  {ParamBinding::Kind::Result, 0, {}},
                  {ParamBinding::Kind::Size, 0, {}}};
  const uint64_t counterBytes = kScratchCounterBytes;
  if (chunks > 1) {
    kernel.params.push_back(runtime::ParamKind::Pointer);
    out.bindings.push_back({ParamBinding::Kind::Scratch, 0, {}});
    kernel.scratchBytes =
        counterBytes + static_cast<uint64_t>(blocks) * static_cast<uint64_t>(k * slice) * 4;
  }
  out.bindings[3].size = shape.count;
  const int64_t staticIds = shape.staticIds;
  if (dynamicRows) {
    kernel.params.push_back(runtime::ParamKind::Int64);
    out.bindings.push_back({ParamBinding::Kind::Size, 0, shape.rowsDim});
    // A block per K rows of this call (x SPLITS column slices), at most the
    // bound's tiles; the work dim names the kernel's rows parameter.
    runtime::Dim rowsParam{0, static_cast<int32_t>(kernel.params.size() - 1), 0};
    kernel.launch.work = {rowsParam, runtime::Dim{splits, -1, 0}};
    kernel.launch.workPerBlock = static_cast<uint64_t>(k);
  }

  std::map<std::string, std::string> values{
      {"H", std::to_string(h)},
      {"K", std::to_string(k)},
      {"V", std::to_string(rows)},
      {"SLICE", std::to_string(slice)},
      {"SPLITS", std::to_string(splits)},
      {"LANES", std::to_string(lanes)},
      {"CHUNKS", std::to_string(chunks)},
      {"STEP", std::to_string(std::min(slice, kBlock))},
      {"COUNTER_BYTES", std::to_string(counterBytes)},
      {"CHUNK", std::to_string(kChunk)},
      {"STATIC_IDS", std::to_string(staticIds)},
      {"NOT_PADDING", op.getPaddingIdx()
                          ? " && id != " + std::to_string(*op.getPaddingIdx()) + "LL"
                          : ""}};
  std::string src = std::string("// Generated by ls2c: embedding gradient (ls2.scatter_add) into [") +
                    (dynamicRows ? "? <= " : "") + values["V"] + ", " + values["H"] + "].\n";
  src += kernelPrelude();
  src += "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) + ")\n" +
         kernelName + "(const " + storageType(updates.getElementType()) + " *updates,\n" +
         "    const " + storageType(ids.getElementType()) + " *ids,\n    " +
         storageType(result.getElementType()) + " *out,\n    const long long count" +
         (chunks > 1 ? ",\n    unsigned char *scratch" : "") +
         (dynamicRows ? ",\n    const long long rows" : "") + ") {\n";
  if (dynamicRows)
    src += R"cuda(  const long long V = rows; // this call's row count, at most ${V}
  constexpr int H = ${H}, K = ${K}, SLICE = ${SLICE}, SPLITS = ${SPLITS}, CHUNK = ${CHUNK};
  constexpr int LANES = ${LANES}, CHUNKS = ${CHUNKS};
  const long long TILES = (V + K - 1) / K * SPLITS;
)cuda";
  else
    src += R"cuda(  constexpr long long V = ${V};
  constexpr int H = ${H}, K = ${K}, SLICE = ${SLICE}, SPLITS = ${SPLITS}, CHUNK = ${CHUNK};
  constexpr int LANES = ${LANES}, CHUNKS = ${CHUNKS}, TILES = (V + K - 1) / K * SPLITS;
)cuda";
  src += R"cuda(  extern __shared__ float acc[]; // [LANES][K][SLICE]
  __shared__ int row[CHUNK];             // each id's row in the block's K, if it is one
  __shared__ unsigned found[CHUNK / 32]; // per warp of ids: which are this block's
  __shared__ int match[CHUNK];            // the chunk's slots that are, in token order
  __shared__ int matches;
)cuda";
  if (chunks > 1)
    src += R"cuda(  __shared__ bool last;
  unsigned *counters = reinterpret_cast<unsigned *>(scratch);
  float *partials = reinterpret_cast<float *>(scratch + ${COUNTER_BYTES});
)cuda";
  src += R"cuda(  const long long n = count * ${STATIC_IDS};
  // Token chunk c scans ids [c * per, (c + 1) * per): bounds fixed by n.
  const long long per = ((n + CHUNKS - 1) / CHUNKS + 31) / 32 * 32;
  // Thread t adds column t % SLICE (and every STEP-th after it) for lane
  // t / SLICE.
  const int lane = threadIdx.x / SLICE, col = threadIdx.x % SLICE;
  for (long long b = blockIdx.x; b < (long long)TILES * CHUNKS; b += gridDim.x) {
    const int tile = (int)(b % TILES), chunk = (int)(b / TILES);
    const long long lo = (long long)(tile / SPLITS) * K;
    const int c0 = (tile % SPLITS) * SLICE, width = min(SLICE, H - c0);
    const long long tBegin = chunk * per, tEnd = min(n, tBegin + per);
    for (int e = threadIdx.x; e < LANES * K * SLICE; e += blockDim.x) acc[e] = 0.0f;
    for (long long base = tBegin; base < tEnd; base += CHUNK) {
      __syncthreads(); // the previous chunk's matches are consumed
      for (int slot = threadIdx.x; slot < CHUNK; slot += blockDim.x) {
        const long long t = base + slot;
        const long long id = t < tEnd ? (long long)ids[t] : -1;
        const bool mine = id >= lo && id < lo + K && id < V${NOT_PADDING};
        row[slot] = (int)(id - lo);
        const unsigned bits = __ballot_sync(0xffffffffu, mine);
        if (threadIdx.x % 32 == 0) found[slot / 32] = bits;
      }
      __syncthreads();
      if (threadIdx.x < 32) { // one warp lists the matches: lane w those of ids warp w
        const unsigned bits = found[threadIdx.x];
        int at = __popc(bits);
#pragma unroll
        for (int m = 1; m < 32; m <<= 1) {
          const int before = __shfl_up_sync(0xffffffffu, at, m);
          if ((int)threadIdx.x >= m) at += before;
        }
        if (threadIdx.x == 31) matches = at;
        at -= __popc(bits);
        for (unsigned rest = bits; rest != 0; rest &= rest - 1)
          match[at++] = (int)threadIdx.x * 32 + __ffs(rest) - 1;
      }
      __syncthreads();
      // Lane l adds the matches l, l + LANES, ... in token order to its own
      // accumulator (every sum has one order, run to run), loading 16 ahead
      // so the loads overlap.
      const int total = matches;
      if (lane < LANES) {
        float *accl = acc + lane * (K * SLICE);
        for (int c = col; c < width; c += ${STEP})
          for (int i = lane; i < total; i += 16 * LANES) {
            float u[16];
#pragma unroll
            for (int q = 0; q < 16; ++q)
              u[q] = i + q * LANES < total
                         ? ls2_cvt(updates[(base + match[i + q * LANES]) * H + c0 + c])
                         : 0.0f;
#pragma unroll
            for (int q = 0; q < 16; ++q)
              if (i + q * LANES < total) accl[row[match[i + q * LANES]] * SLICE + c] += u[q];
          }
      }
    }
    __syncthreads();
)cuda";
  if (chunks == 1)
    src += R"cuda(    // The lanes in lane order, then the table.
    for (int e = threadIdx.x; e < K * SLICE; e += blockDim.x) {
      float s = acc[e];
      for (int l = 1; l < LANES; ++l) s += acc[l * (K * SLICE) + e];
      const long long r = lo + e / SLICE;
      const int c = e % SLICE;
      if (r < V && c < width) ls2_store(out, r * H + c0 + c, s);
    }
    __syncthreads();
  }
}
)cuda";
  else
    src += R"cuda(    // The lanes in lane order into this chunk's partial tile.
    float *part = partials + (long long)tile * CHUNKS * (K * SLICE);
    for (int e = threadIdx.x; e < K * SLICE; e += blockDim.x) {
      float s = acc[e];
      for (int l = 1; l < LANES; ++l) s += acc[l * (K * SLICE) + e];
      part[chunk * (K * SLICE) + e] = s;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&counters[tile], 1u) == CHUNKS - 1;
    __syncthreads();
    if (last) { // the tile's last block: the chunks' partials in chunk order
      __threadfence();
      for (int e = threadIdx.x; e < K * SLICE; e += blockDim.x) {
        const long long r = lo + e / SLICE;
        const int c = e % SLICE;
        if (r >= V || c >= width) continue;
        float s = __ldcg(&part[e]);
        for (int q = 1; q < CHUNKS; ++q) s += __ldcg(&part[q * (K * SLICE) + e]);
        ls2_store(out, r * H + c0 + c, s);
      }
      if (threadIdx.x == 0) counters[tile] = 0u;
    }
    __syncthreads();
  }
}
)cuda";
  src = substitute(std::move(src), values);
  kernel.source = std::move(src);
  return out;
}

} // namespace

FailureOr<std::vector<GeneratedKernel>>
generateScatterAddKernels(ls2::ScatterAddOp op, const SymbolicDims &dims,
                          const ShapeBounds &bounds, const std::string &kernelName) {
  auto result = cast<RankedTensorType>(op.getType());
  ScatterAddShape shape;
  // The verifier allows a dynamic row count only: the row shape is static.
  shape.dynamicRows = result.isDynamicDim(0);
  shape.rowsBound = shape.dynamicRows ? bounds.shape(op.getResult())[0] : result.getDimSize(0);
  if (shape.dynamicRows)
    shape.rowsDim = dims.shape(op.getResult())[0];
  for (int64_t d = 1; d < result.getRank(); ++d)
    shape.width *= result.getDimSize(d);
  // The number of ids: their one dynamic dim times the static ones.
  shape.count = runtime::Dim{1, -1, 0};
  shape.idsBound = 1;
  for (int64_t b : bounds.shape(op.getIds()))
    shape.idsBound *= b;
  for (const runtime::Dim &d : dims.shape(op.getIds())) {
    if (d.isStatic()) {
      shape.staticIds *= d.size;
    } else if (!shape.count.isStatic()) {
      return op.emitError("scatter_add ids with more than one dynamic dim");
    } else {
      shape.count = d;
    }
  }
  if (shape.count.isStatic()) {
    shape.count.size = shape.staticIds;
    shape.staticIds = 1;
  }
  if (auto sorted = generateSortedScatterAdd(op, kernelName, shape))
    return std::move(*sorted);
  FailureOr<GeneratedKernel> scan = scanKernel(op, kernelName, shape);
  if (failed(scan))
    return failure();
  std::vector<GeneratedKernel> kernels;
  kernels.push_back(std::move(*scan));
  return kernels;
}

} // namespace ls2c::codegen
