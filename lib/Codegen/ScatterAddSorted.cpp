//===- ScatterAddSorted.cpp - large-table embedding gradients by sorted ids ===//
//
// ls2.scatter_add into a table with many rows (word embeddings: 30,522 to
// 50,257 rows and more) in two kernels, deterministic and without atomics.
// The scan kernel (ScatterAddKernel.cpp) has every block of K rows test all
// T ids: at T = 16,384 and a 32,000 x 768 table that is 1,000 blocks x 16
// windows of 1,024 ids with three barriers each, 0.34 ms on an H200 with
// uniform ids and 1.4-2.4 with real text's skew (the block of a frequent
// id adds its rows alone), where moving the bytes takes about 0.02. Here
// each block touches only its own ids:
//
//  1. `<name>_sort`: a block per chunk of 1,024 ids sorts the keys
//     (id << 10 | the id's place in the chunk) with a bitonic network in
//     shared memory (unique keys: the order depends on the ids alone) and
//     writes them to scratch, with, for every tile of K rows, where the
//     tile's ids begin in the sorted chunk (offsets [tiles + 1][chunks], a
//     binary search per tile).
//     Dropped ids (padding, outside [0, V)) sort after every tile.
//  2. `<name>`: a block per tile reads, for each chunk, the slice of sorted
//     keys in its rows (two coalesced loads of offsets), lists them in
//     shared memory, and its token lanes add the update rows (16-byte
//     vectors, U a thread in flight: a frequent id's tile has thousands)
//     into f32 accumulators [lane][K][VEC][H / VEC]
//     (conflict-free); the lanes are summed in lane order and each row of
//     the table is written once, zeros included.
//
// Every sum runs in an order fixed by the ids: chunk by chunk in token
// order, a row's updates in token order within a chunk, then by lane. Keys
// are 32 bits, so tables up to 4,194,303 rows take this path; smaller grids
// (fewer than a block per multiprocessor) keep the scan kernel.
//
//===----------------------------------------------------------------------===//

#include "ScatterAdd.h"

#include "ElementalEmitter.h"
#include "Prelude.h"

#include "ls2c/Analysis/ShapeBounds.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {
constexpr int64_t kIdsPerChunk = 1024;  // keys a sort block holds (10 bits of the key)
constexpr int64_t kMaxRows = 4194303;   // (rows << 10) | 1023 fits 32 bits
constexpr int64_t kAccBudget = 48 * 1024; // f32 accumulators: four blocks a multiprocessor
constexpr int64_t kMinTiles = 132;      // a block per multiprocessor of an H100/H200
constexpr int64_t kInFlight = 8;       // update rows a thread loads before adding
} // namespace

std::optional<std::vector<GeneratedKernel>>
generateSortedScatterAdd(ls2::ScatterAddOp op, const std::string &kernelName,
                         const ScatterAddShape &shape) {
  auto result = cast<RankedTensorType>(op.getType());
  auto updates = cast<RankedTensorType>(op.getUpdates().getType());
  auto ids = cast<RankedTensorType>(op.getIds().getType());
  const int64_t rows = shape.rowsBound, h = shape.width;
  if (rows > kMaxRows)
    return std::nullopt;
  const int64_t updateBytes = elementBytes(updates.getElementType());
  const int64_t vec = h % (16 / updateBytes) == 0 ? 16 / updateBytes : 1;
  const int64_t groups = h / vec; // VEC-column groups of a row
  const int64_t tpr = std::min<int64_t>(256, groups);
  const int64_t lanes = std::max<int64_t>(1, 256 / tpr);
  const int64_t threads = (lanes * tpr + 31) / 32 * 32;
  // Rows a tile: as many as the accumulators' budget holds, fewer where
  // that leaves multiprocessors without a tile (position tables).
  const int64_t k = std::clamp<int64_t>(
      std::min(kAccBudget / (lanes * h * 4), rows / kMinTiles), 1, 64);
  const int64_t tiles = (rows + k - 1) / k;
  if (tiles < kMinTiles)
    return std::nullopt;
  const int64_t chunks = (shape.idsBound + kIdsPerChunk - 1) / kIdsPerChunk;
  const uint64_t keyBytes = static_cast<uint64_t>(chunks) * kIdsPerChunk * 4;
  const uint64_t scratchBytes = kScratchCounterBytes + keyBytes +
                                static_cast<uint64_t>(tiles + 1) * chunks * 4;

  // Both kernels bind (updates, ids, result, number of ids, scratch[, rows]).
  std::vector<GeneratedKernel> out(2);
  for (GeneratedKernel &g : out) {
    g.kernel.params = {runtime::ParamKind::Pointer, runtime::ParamKind::Pointer,
                       runtime::ParamKind::Pointer, runtime::ParamKind::Int64,
                       runtime::ParamKind::Pointer};
    g.bindings = {{ParamBinding::Kind::Operand, 0, {}},
                  {ParamBinding::Kind::Operand, 1, {}},
                  {ParamBinding::Kind::Result, 0, {}},
                  {ParamBinding::Kind::Size, 0, shape.count},
                  {ParamBinding::Kind::Scratch, 0, {}}};
    if (shape.dynamicRows) {
      g.kernel.params.push_back(runtime::ParamKind::Int64);
      g.bindings.push_back({ParamBinding::Kind::Size, 0, shape.rowsDim});
    }
    g.kernel.scratchBytes = scratchBytes;
  }
  GeneratedKernel &sort = out[0], &sum = out[1];
  sort.kernel.name = kernelName + "_sort";
  sort.kernel.launch.blockThreads = 512;
  // A block per chunk of ids: the count parameter times the static ids.
  sort.kernel.launch.work = {runtime::Dim{0, 3, 0}, runtime::Dim{shape.staticIds, -1, 0}};
  sort.kernel.launch.workPerBlock = kIdsPerChunk;
  sort.kernel.launch.maxBlocks = static_cast<uint32_t>(chunks);
  sum.kernel.name = kernelName;
  sum.kernel.launch.blockThreads = static_cast<uint32_t>(threads);
  sum.kernel.launch.dynamicSharedBytes = static_cast<uint32_t>(lanes * k * h * 4);
  sum.kernel.launch.maxBlocks = static_cast<uint32_t>(tiles);
  if (shape.dynamicRows) {
    sum.kernel.launch.work = {runtime::Dim{0, 5, 0}};
    sum.kernel.launch.workPerBlock = static_cast<uint64_t>(k);
  } else {
    sum.kernel.launch.work = {runtime::Dim{tiles, -1, 0}};
  }

  const Type outType = result.getElementType();
  const bool vectorStores = vec > 1 && vec * elementBytes(outType) == 16;
  std::map<std::string, std::string> values{
      {"H", std::to_string(h)},
      {"K", std::to_string(k)},
      {"V", std::to_string(rows)},
      {"VEC", std::to_string(vec)},
      {"HV", std::to_string(groups)},
      {"TPR", std::to_string(tpr)},
      {"LANES", std::to_string(lanes)},
      {"U", std::to_string(kInFlight)},
      {"CMAX", std::to_string(chunks)},
      {"STATIC_IDS", std::to_string(shape.staticIds)},
      {"COUNTER_BYTES", std::to_string(kScratchCounterBytes)},
      {"KEY_BYTES", std::to_string(keyBytes)},
      {"UT", storageType(updates.getElementType())},
      {"OT", storageType(outType)},
      {"NOT_PADDING", op.getPaddingIdx()
                          ? " && id != " + std::to_string(*op.getPaddingIdx()) + "LL"
                          : ""}};
  const std::string title = std::string("// Generated by ls2c: embedding gradient (ls2.scatter_add) into [") +
                            (shape.dynamicRows ? "? <= " : "") + values["V"] + ", " + values["H"] +
                            "], ";
  // minBlocks: sum blocks resident a multiprocessor (3 of 192 threads, 2
  // of 256), so the U loads in flight do not cost occupancy.
  auto signature = [&](const std::string &name, int64_t block, int minBlocks) {
    return "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ", " +
           std::to_string(minBlocks) + ")\n" +
           name + "(const ${UT} *updates,\n    const " + storageType(ids.getElementType()) +
           " *ids,\n    ${OT} *out,\n    const long long count,\n    unsigned char *scratch" +
           (shape.dynamicRows ? ",\n    const long long rows" : "") + ") {\n";
  };
  const std::string head =
      std::string(shape.dynamicRows
                      ? "  const long long V = rows; // this call's row count, at most ${V}\n"
                      : "  constexpr long long V = ${V};\n") +
      R"cuda(  constexpr int H = ${H}, K = ${K}, CMAX = ${CMAX};
  const long long TILES = (V + K - 1) / K;
  const long long n = count * ${STATIC_IDS};
  const int C = (int)((n + 1023) / 1024); // chunks of ids this call
  unsigned *keys = reinterpret_cast<unsigned *>(scratch + ${COUNTER_BYTES});
  unsigned *offsets = reinterpret_cast<unsigned *>(scratch + ${COUNTER_BYTES} + ${KEY_BYTES});
)cuda";

  std::string s1 = title + "the ids sorted per chunk of 1,024.\n" + kernelPrelude() +
                   signature(sort.kernel.name, 512, 1) + head;
  s1 += R"cuda(  __shared__ unsigned key[1024];
  // A key's tile; dropped ids and the slots past n sort after the last.
  auto tileOf = [&](unsigned k) -> long long {
    const long long id = k >> 10;
    return id >= V ? TILES : id / K;
  };
  for (int c = blockIdx.x; c < C; c += gridDim.x) {
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) {
      const long long t = (long long)c * 1024 + i;
      const long long id = t < n ? (long long)ids[t] : -1;
      const bool kept = id >= 0 && id < V${NOT_PADDING};
      key[i] = t >= n ? 0xffffffffu : ((unsigned)(kept ? id : V) << 10) | (unsigned)i;
    }
    __syncthreads();
    // Bitonic sorting network: pair (i, i + j), ascending where bit k of i
    // is clear.
    for (int k = 2; k <= 1024; k <<= 1)
      for (int j = k >> 1; j > 0; j >>= 1) {
        const int t = threadIdx.x, i = 2 * t - (t & (j - 1)), p = i + j;
        const unsigned a = key[i], b = key[p];
        if ((a > b) == ((i & k) == 0)) {
          key[i] = b;
          key[p] = a;
        }
        __syncthreads();
      }
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) keys[(long long)c * 1024 + i] = key[i];
    // Tile t begins at the first key of a tile >= t (a binary search per
    // tile, so a chunk whose ids skip many tiles costs no thread more).
    for (long long t = threadIdx.x; t <= TILES; t += blockDim.x) {
      int b = 0;
#pragma unroll
      for (int step = 1024; step > 0; step >>= 1)
        if (b + step <= 1024 && tileOf(key[b + step - 1]) < t) b += step;
      offsets[t * CMAX + c] = (unsigned)b;
    }
    __syncthreads();
  }
}
)cuda";

  std::string s2 = title + "the sums per tile of " + values["K"] + " rows.\n" + kernelPrelude() +
                   signature(sum.kernel.name, threads,
                             static_cast<int>(std::max<int64_t>(1, 576 / threads))) + head;
  s2 += R"cuda(  constexpr int VEC = ${VEC}, HV = ${HV}, TPR = ${TPR}, LANES = ${LANES}, U = ${U};
  extern __shared__ float acc[];        // [LANES][K][VEC][HV]
  __shared__ int start[33];             // the group's chunks' first entries, then the total
  __shared__ unsigned first[32];        // each chunk's first key of this tile
  __shared__ int entryRow[1024], entryToken[1024];
  const int lane = threadIdx.x / TPR, g = threadIdx.x % TPR;
  const bool aligned = (((unsigned long long)updates | (unsigned long long)out) & 15) == 0;
  for (long long tile = blockIdx.x; tile < TILES; tile += gridDim.x) {
    const long long lo = tile * K;
    for (int e = threadIdx.x; e < LANES * K * H; e += blockDim.x) acc[e] = 0.0f;
    for (int c0 = 0; c0 < C; c0 += 32) {
      __syncthreads(); // the accumulators cleared, the last group's entries added
      if (threadIdx.x < 32) {
        const int c = c0 + threadIdx.x;
        unsigned b = 0, e = 0;
        if (c < C) {
          b = offsets[tile * CMAX + c];
          e = offsets[(tile + 1) * CMAX + c];
        }
        int at = (int)(e - b);
#pragma unroll
        for (int m = 1; m < 32; m <<= 1) {
          const int below = __shfl_up_sync(0xffffffffu, at, m);
          if ((int)threadIdx.x >= m) at += below;
        }
        start[threadIdx.x + 1] = at;
        if (threadIdx.x == 0) start[0] = 0;
        first[threadIdx.x] = b;
      }
      __syncthreads();
      const int total = start[32];
      for (int w0 = 0; w0 < total; w0 += 1024) {
        if (w0 > 0) __syncthreads(); // the last window added
        for (int slot = threadIdx.x; slot < 1024 && w0 + slot < total; slot += blockDim.x) {
          const int e = w0 + slot;
          int q = 0; // the chunk of entry e: the last q with start[q] <= e
#pragma unroll
          for (int step = 16; step > 0; step >>= 1)
            if (start[q + step] <= e) q += step;
          const unsigned k = keys[(long long)(c0 + q) * 1024 + first[q] + (e - start[q])];
          entryRow[slot] = (int)((long long)(k >> 10) - lo);
          entryToken[slot] = (c0 + q) * 1024 + (int)(k & 1023u);
        }
        __syncthreads();
        const int m = min(1024, total - w0);
        // Lane l adds entries l, l + LANES, ... in order, U rows in flight.
        if (lane < LANES)
          for (int col = g * VEC; col < H; col += TPR * VEC)
            for (int i = lane; i < m; i += U * LANES) {
              ls2_vec<${UT}, VEC> u[U]; // raw: U x 16 bytes in registers
#pragma unroll
              for (int q = 0; q < U; ++q) {
                // Predicated, not a break: the U loads issue back to back.
                const int at = i + q * LANES;
                if (at < m) {
                  const long long base = (long long)entryToken[at] * H + col;
                  if (VEC > 1 && aligned) {
                    u[q] = *reinterpret_cast<const ls2_vec<${UT}, VEC> *>(updates + base);
                  } else {
#pragma unroll
                    for (int x = 0; x < VEC; ++x) u[q].v[x] = updates[base + x];
                  }
                }
              }
#pragma unroll
              for (int q = 0; q < U; ++q)
                if (i + q * LANES < m) {
                  float *a = acc + ((long long)(lane * K + entryRow[i + q * LANES]) * VEC) * HV + col / VEC;
#pragma unroll
                  for (int x = 0; x < VEC; ++x) a[x * HV] += ls2_cvt(u[q].v[x]);
                }
            }
      }
    }
    __syncthreads();
    // The lanes in lane order, then the tile's rows of the table (zeros too).
    for (int e = threadIdx.x; e < K * HV; e += blockDim.x) {
      const int r = e / HV, gc = e % HV;
      if (lo + r >= V) continue;
      float s[VEC];
#pragma unroll
      for (int x = 0; x < VEC; ++x) {
        s[x] = acc[(r * VEC + x) * HV + gc];
        for (int l = 1; l < LANES; ++l) s[x] += acc[((l * K + r) * VEC + x) * HV + gc];
      }
      const long long base = (lo + r) * H + (long long)gc * VEC;
)cuda";
  if (vectorStores)
    s2 += R"cuda(      if (aligned) {
        ls2_vec<${OT}, VEC> v;
#pragma unroll
        for (int x = 0; x < VEC; ++x) ls2_put(v.v[x], s[x]);
        *reinterpret_cast<ls2_vec<${OT}, VEC> *>(out + base) = v;
        continue;
      }
)cuda";
  s2 += R"cuda(#pragma unroll
      for (int x = 0; x < VEC; ++x) ls2_store(out, base + x, s[x]);
    }
    __syncthreads(); // the accumulators read before the next tile clears them
  }
}
)cuda";
  sort.kernel.source = substitute(std::move(s1), values);
  sum.kernel.source = substitute(std::move(s2), values);
  return out;
}

} // namespace ls2c::codegen
