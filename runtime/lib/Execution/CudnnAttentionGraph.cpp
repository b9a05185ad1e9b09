//===- CudnnAttentionGraph.cpp - cuDNN fused attention plans --------------===//
//
// The composite scaled-dot-product-attention graphs of cuDNN 9's backend API:
// matmul, pointwise, reduction, reshape and RNG operations in the exact
// pattern cuDNN's fused flash-attention engines (FlashAttention-2, Dao, 2023)
// recognize. The pattern follows what cudnn-frontend's CompositeSDPANode and
// CompositeSDPABackwardNode lower to; cuDNN 9.19's unified SDPA_FWD/BWD
// operations are not used because in 9.19 they have no causal mask (the
// diagonal-band subgraph arrives later). Support surface (cuDNN "Attention"
// operation docs): fp16/bf16, head dim a multiple of 8 and at most 256 on
// Hopper, forward and backward; packed (ragged) layouts only with the padding
// mask; packed statistics from cuDNN 9.6.
//
// Shapes below: B batch, H heads, Hk kvHeads, Sq/Sk the sequence bounds, D
// headDim. "io" is fp16 or bf16, "f32" float; every compute type is float
// except where noted. v = virtual (never in memory), n = bound in the variant
// pack. Scalars are by-value host floats [1,1,1,1].
//
// Forward (O and the statistics):
//   matmul        Q[B,H,Sq,D] io n, K^T[B,Hk,D,Sk] io n -> S f32 v
//                 (M = seq_len_q, N = seq_len_kv overrides; padding value 0)
//   pw MUL        S, scale -> S
//   padding mask  (below) S -> S
//   causal mask   (below, optional) S -> S
//   reduction MAX S -> M[B,H,Sq,1] f32 v
//   pw SUB        S, M -> S;  pw EXP S -> E
//   reduction ADD E -> Z[B,H,Sq,1] f32 v
//   pw LOG        Z -> L;  pw ADD M, L -> Stats[B,H,Sq,1] f32 n
//   pw DIV        E, Z -> P (io v when it feeds the second matmul)
//   dropout only: rng BERNOULLI(1 - rate) seed,offset i64 n -> mask f32 v;
//                 pw MUL P, mask -> P;  pw MUL P, 1/(1 - rate) -> P io v
//   matmul        P io v, V[B,Hk,Sk,D] io n -> O[B,H,Sq,D] io n
//                 (M = seq_len_q, K = seq_len_kv)
//
// Padding mask (both graphs): pw GEN_INDEX axis 2 -> row i32 v, GEN_INDEX
// axis 3 -> col i32 v (compute i32); pw CMP_LT row, seq_len_q -> bool v;
// CMP_LT col, seq_len_kv -> bool v; LOGICAL_AND -> keep bool v (compute
// bool); pw BINARY_SELECT S, -inf, keep -> S.
// Causal mask (top-left, row >= col): GEN_INDEX axis 2 and axis 3 (i32),
// pw CMP_GE row, col -> keep bool v, BINARY_SELECT S, -inf, keep -> S.
//
// Backward (dQ, dK, dV; P rebuilt from the statistics):
//   dropout only: rng as in forward -> mask f32 v (same seed and offset)
//   pw MUL        dO n, O n -> T[B,H,Sq,D] f32 v
//   reduction ADD T -> R[B,H,Sq,1] f32 v
//   pw MUL        R, (1 - rate) or 1 -> RowSum[B,H,Sq,1] f32 n (workspace)
//   matmul        Q, K^T -> S f32 v (M = seq_len_q, N = seq_len_kv)
//   pw MUL S, scale; pw SUB S, Stats; padding mask; causal mask (optional)
//   pw EXP        S -> E f32 v (the softmax, P before dropout)
//   dropout only: pw MUL E, mask;  pw MUL by 1/(1 - rate) -> P
//   reshape       P -> P^T[B,H,Sk,Sq] io v (strides [.., .., 1, Sk])
//   matmul        P^T, dO -> dV (M = seq_len_kv, K = seq_len_q); with GQA
//                 -> dVfull[B,H,Sk,D] io v, reduction ADD -> dV[B,Hk,Sk,D]
//   matmul        dO, V^T[B,Hk,D,Sk] -> dP f32 v (M = seq_len_q, N = seq_len_kv)
//   dropout only: pw MUL dP, mask
//   pw SUB dP, RowSum;  pw MUL dP, E;  dropout only: pw MUL by 1/(1 - rate)
//   pw MUL        dP, scale -> dS f32 v
//   reshape       dS -> dS^T[B,H,Sk,Sq] io v
//   matmul        dS^T, Q -> dK (M = seq_len_kv, K = seq_len_q); with GQA via
//                 dKfull io v and reduction ADD
//   reshape       K^T -> K[B,Hk,Sk,D] f32 v (K's ragged offset)
//   matmul        dS, K -> dQacc[B,H,Sq,D] f32 n (workspace; M = seq_len_q,
//                 K = seq_len_kv)
//   pw IDENTITY   dQacc -> dQ io n
//
// Every tensor in memory but the workspace ones and the scalars carries a
// ragged offset (i32 [B+1,1,1,1], element offsets); seq_len tensors are i32
// [B,1,1,1]. The statistics are [B,H,Sq,1] with strides [H*Sq, 1, H, 1] and
// their own ragged offset (cu_q[b] * H), or padded [H*Sq, Sq, 1, 1].
//
//===----------------------------------------------------------------------===//
#include "CudnnAttentionGraph.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

namespace ls2c::runtime::cudnn {
namespace {

using Desc = cudnnBackendDescriptor_t;

// Unique ids of the tensors the variant pack binds; virtual tensors count up
// from kFirstVirtual.
enum : int64_t {
  kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV,
  kSeqLenQ = 10, kSeqLenK,
  kOffsetQ = 20, kOffsetK, kOffsetV, kOffsetO, kOffsetStats,
  kOffsetDO, kOffsetDQ, kOffsetDK, kOffsetDV,
  kSeed = 30, kDropoutOffset,
  // By-value host floats, kept in the plan (Descriptors::scalars).
  kScale = 40, kNegInfPadding, kNegInfCausal, kOne, kDropoutScale, kKeepRate,
  kScalarEnd,
  // f32 scratch of the backward graph in the caller's workspace.
  kRowSum = 50, kDQAccum,
  kFirstVirtual = 100,
};
constexpr int kScalarCount = kScalarEnd - kScale;

// Where the workspace tensors start: cuDNN wants 16-byte aligned tensors;
// 256 keeps each on its own cache lines.
constexpr int64_t kWorkspaceAlign = 256;
int64_t alignUp(int64_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// The handle attributes are deprecated in cuDNN 9 headers yet still how a
// graph and a plan learn their device; named once here so the deprecation
// warning is silenced in one place.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

struct Shape {
  int64_t dim[4];
  int64_t stride[4];
};

// [B, H, S, D] over token-major rows: element (b, h, s, d) at
// b * S * row + h * D + s * row + d (the batch stride only matters unpacked).
Shape tokenMajor(int64_t b, int64_t h, int64_t s, int64_t d, int64_t row) {
  return {{b, h, s, d}, {s * row, d, row, 1}};
}
Shape rowMajor(int64_t b, int64_t h, int64_t s, int64_t d) {
  return {{b, h, s, d}, {h * s * d, s * d, d, 1}};
}
// The last two axes swapped: K as K^T for the matmul.
Shape transposed(Shape s) {
  std::swap(s.dim[2], s.dim[3]);
  std::swap(s.stride[2], s.stride[3]);
  return s;
}

std::string lastErrorText() {
  char text[1024] = {};
  cudnnGetLastErrorString(text, sizeof text);
  return text;
}

std::string refusal(const std::string &what, cudnnStatus_t status) {
  std::string out = what + ": " + cudnnGetErrorString(status);
  std::string text = lastErrorText();
  if (!text.empty())
    out += " (" + text + ")";
  return out;
}

// Makes the descriptors of one operation graph. The first refusal is kept
// (whyNot) and every later call does nothing, so graph code reads straight
// through; descriptors not handed over by release() are destroyed here.
class GraphBuilder {
public:
  GraphBuilder(std::string stage, float *scalars) : stage(std::move(stage)), scalars(scalars) {}
  ~GraphBuilder() {
    for (auto it = made.rbegin(); it != made.rend(); ++it)
      cudnnBackendDestroyDescriptor(*it);
  }
  GraphBuilder(const GraphBuilder &) = delete;
  GraphBuilder &operator=(const GraphBuilder &) = delete;

  bool ok() const { return whyNot.empty(); }
  const std::string &error() const { return whyNot; }
  const std::vector<int64_t> &boundUids() const { return bound; }
  std::vector<Desc> release() { return std::exchange(made, {}); }

  void fail(const std::string &what, cudnnStatus_t status) {
    if (ok())
      whyNot = refusal(stage + " (" + what + ")", status);
  }

  Desc make(cudnnBackendDescriptorType_t type, const char *what) {
    if (!ok())
      return nullptr;
    Desc d = nullptr;
    cudnnStatus_t status = cudnnBackendCreateDescriptor(type, &d);
    if (status != CUDNN_STATUS_SUCCESS) {
      fail(what, status);
      return nullptr;
    }
    made.push_back(d);
    return d;
  }
  void set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           int64_t count, const void *value, const char *what) {
    if (!ok())
      return;
    cudnnStatus_t status = cudnnBackendSetAttribute(d, name, type, count, value);
    if (status != CUDNN_STATUS_SUCCESS)
      fail(what, status);
  }
  void setDesc(Desc d, cudnnBackendAttributeName_t name, Desc value, const char *what) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value, what);
  }
  void finalize(Desc d, const char *what) {
    if (!ok())
      return;
    cudnnStatus_t status = cudnnBackendFinalize(d);
    if (status != CUDNN_STATUS_SUCCESS)
      fail(what, status);
  }

  // A tensor in memory (bound by uid in the variant pack), or virtual.
  Desc tensor(int64_t uid, const Shape &s, cudnnDataType_t type, bool isVirtual,
              Desc ragged = nullptr, bool byValue = false) {
    Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    const int64_t alignment = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor data type");
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, s.dim, "tensor dimensions");
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, s.stride, "tensor strides");
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor id");
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "tensor alignment");
    if (isVirtual) {
      bool yes = true;
      set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, "virtual tensor");
    }
    if (byValue) {
      bool yes = true;
      set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, "by-value tensor");
    }
    if (ragged)
      setDesc(t, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, ragged, "ragged offset of a tensor");
    finalize(t, "tensor");
    if (!isVirtual && ok())
      bound.push_back(uid);
    return t;
  }
  Desc virt(const Shape &s, cudnnDataType_t type = CUDNN_DATA_FLOAT, Desc ragged = nullptr) {
    return tensor(nextVirtual++, s, type, true, ragged);
  }
  // A host float passed by value; its storage is the plan's.
  Desc scalar(int64_t uid, float value) {
    scalars[uid - kScale] = value;
    return tensor(uid, Shape{{1, 1, 1, 1}, {1, 1, 1, 1}}, CUDNN_DATA_FLOAT, false, nullptr, true);
  }

  // y = mode(x[, b[, t]]) with the given math precision.
  void pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc t, Desc y, const char *what,
                 cudnnDataType_t math = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math, what);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
    finalize(pw, what);
    Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, what);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, what);
    if (b)
      setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, what);
    if (t)
      setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, what);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, what);
    addOp(op, what);
  }
  // The same, into a new virtual tensor of `shape`.
  Desc pw(cudnnPointwiseMode_t mode, Desc x, Desc b, const Shape &shape, const char *what,
          cudnnDataType_t out = CUDNN_DATA_FLOAT) {
    Desc y = virt(shape, out);
    pointwise(mode, x, b, nullptr, y, what);
    return y;
  }

  void matmul(Desc a, Desc b, Desc c, Desc mOverride, Desc nOverride, Desc kOverride,
              const char *what, bool zeroPadding = false) {
    Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, what);
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, what);
    if (zeroPadding) {
      double zero = 0.0;
      set(mm, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &zero, what);
    }
    finalize(mm, what);
    Desc op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, what);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, what);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, what);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, what);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, what);
    if (mOverride)
      setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, mOverride, what);
    if (nOverride)
      setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, nOverride, what);
    if (kOverride)
      setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, kOverride, what);
    addOp(op, what);
  }

  void reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y, const char *what) {
    Desc red = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what);
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, what);
    set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, what);
    if (cudnnGetVersion() >= 91100) { // the attribute's first release
      bool deterministic = false;
      set(red, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic, what);
    }
    finalize(red, what);
    Desc op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, what);
    setDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, what);
    setDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, what);
    setDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red, what);
    addOp(op, what);
  }

  // Bernoulli(keep) keep-mask from cuDNN's Philox generator.
  void rng(double keep, Desc seed, Desc offset, Desc y, const char *what) {
    Desc r = make(CUDNN_BACKEND_RNG_DESCRIPTOR, what);
    cudnnRngDistribution_t dist = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
    set(r, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1, &dist, what);
    set(r, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &keep, what);
    finalize(r, what);
    Desc op = make(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR, what);
    setDesc(op, CUDNN_ATTR_OPERATION_RNG_YDESC, y, what);
    setDesc(op, CUDNN_ATTR_OPERATION_RNG_SEED, seed, what);
    setDesc(op, CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, offset, what);
    setDesc(op, CUDNN_ATTR_OPERATION_RNG_DESC, r, what);
    addOp(op, what);
  }

  void reshape(Desc x, Desc y, const char *what) {
    Desc op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, what);
    setDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, what);
    setDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, what);
    addOp(op, what);
  }

  // The operation graph of every operation added so far.
  Desc graph(cudnnHandle_t handle) {
    Desc g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the operation graph");
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        static_cast<int64_t>(ops.size()), ops.data(), "the graph's operations");
    set(g, kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle, "the graph's handle");
    finalize(g, "finalizing the operation graph");
    return g;
  }

private:
  void addOp(Desc op, const char *what) {
    finalize(op, what);
    if (ok())
      ops.push_back(op);
  }

  std::string stage;
  float *scalars;
  std::string whyNot;
  std::vector<Desc> made; // every descriptor, in creation order
  std::vector<Desc> ops;
  std::vector<int64_t> bound;
  int64_t nextVirtual = kFirstVirtual;
};

// The tensors both graphs share.
struct Common {
  Shape scores, rowStats;
  cudnnDataType_t io;
  Desc seqLenQ, seqLenK, seed = nullptr, dropoutOffset = nullptr, scale;
};

Common commonTensors(GraphBuilder &g, const AttentionGraphDesc &d) {
  Common c;
  c.scores = rowMajor(d.batch, d.heads, d.maxSeqQ, d.maxSeqK);
  c.rowStats = rowMajor(d.batch, d.heads, d.maxSeqQ, 1);
  c.io = d.bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  Shape perSequence{{d.batch, 1, 1, 1}, {1, 1, 1, 1}};
  c.seqLenQ = g.tensor(kSeqLenQ, perSequence, CUDNN_DATA_INT32, false);
  c.seqLenK = g.tensor(kSeqLenK, perSequence, CUDNN_DATA_INT32, false);
  if (d.dropoutRate > 0) {
    Shape one{{1, 1, 1, 1}, {1, 1, 1, 1}};
    c.seed = g.tensor(kSeed, one, CUDNN_DATA_INT64, false);
    c.dropoutOffset = g.tensor(kDropoutOffset, one, CUDNN_DATA_INT64, false);
  }
  c.scale = g.scalar(kScale, d.scale);
  return c;
}

Desc raggedOffset(GraphBuilder &g, int64_t uid, const AttentionGraphDesc &d) {
  return g.tensor(uid, Shape{{d.batch + 1, 1, 1, 1}, {1, 1, 1, 1}}, CUDNN_DATA_INT32, false);
}

// Q/O-like ([T_q, heads, headDim]) and K/V-like tensors, packed.
Desc queryTensor(GraphBuilder &g, int64_t uid, int64_t offsetUid, int64_t row,
                 const AttentionGraphDesc &d, cudnnDataType_t io) {
  Desc offset = raggedOffset(g, offsetUid, d);
  return g.tensor(uid, tokenMajor(d.batch, d.heads, d.maxSeqQ, d.headDim, row), io, false, offset);
}
Desc keyTensor(GraphBuilder &g, int64_t uid, Desc offset, int64_t row, bool transpose,
               const AttentionGraphDesc &d, cudnnDataType_t io) {
  Shape s = tokenMajor(d.batch, d.kvHeads, d.maxSeqK, d.headDim, row);
  return g.tensor(uid, transpose ? transposed(s) : s, io, false, offset);
}

Desc statsTensor(GraphBuilder &g, const AttentionGraphDesc &d) {
  const int64_t b = d.batch, h = d.heads, s = d.maxSeqQ;
  if (!d.raggedStats)
    return g.tensor(kStats, rowMajor(b, h, s, 1), CUDNN_DATA_FLOAT, false);
  Desc offset = raggedOffset(g, kOffsetStats, d);
  return g.tensor(kStats, Shape{{b, h, s, 1}, {h * s, 1, h, 1}}, CUDNN_DATA_FLOAT, false, offset);
}

// Scores outside either sequence's length become -inf.
Desc paddingMask(GraphBuilder &g, const Common &c, Desc s) {
  Desc row = g.virt(c.scores, CUDNN_DATA_INT32), col = g.virt(c.scores, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, row, "padding mask rows",
              CUDNN_DATA_INT32, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, col, "padding mask columns",
              CUDNN_DATA_INT32, 3);
  Desc rowIn = g.virt(c.scores, CUDNN_DATA_BOOLEAN), colIn = g.virt(c.scores, CUDNN_DATA_BOOLEAN);
  Desc keep = g.virt(c.scores, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_LT, row, c.seqLenQ, nullptr, rowIn, "row < seq_len_q",
              CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_LT, col, c.seqLenK, nullptr, colIn, "column < seq_len_kv",
              CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_LOGICAL_AND, rowIn, colIn, nullptr, keep, "padding mask",
              CUDNN_DATA_BOOLEAN);
  Desc out = g.virt(c.scores);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, g.scalar(kNegInfPadding, -INFINITY), keep, out,
              "padding mask select");
  return out;
}

// Top-left causal mask: query row r sees keys 0..r of its own sequence.
Desc causalMask(GraphBuilder &g, const Common &c, Desc s) {
  Desc row = g.virt(c.scores, CUDNN_DATA_INT32), col = g.virt(c.scores, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, row, "causal mask rows",
              CUDNN_DATA_INT32, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, col, "causal mask columns",
              CUDNN_DATA_INT32, 3);
  Desc keep = g.virt(c.scores, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, nullptr, keep, "row >= column",
              CUDNN_DATA_BOOLEAN);
  Desc out = g.virt(c.scores);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, g.scalar(kNegInfCausal, -INFINITY), keep, out,
              "causal mask select");
  return out;
}

// The scaled, masked scores S = mask(scale * Q K^T).
Desc maskedScores(GraphBuilder &g, const Common &c, Desc q, Desc kT, bool zeroPadding) {
  Desc s = g.virt(c.scores);
  g.matmul(q, kT, s, c.seqLenQ, c.seqLenK, nullptr, "S = Q K^T", zeroPadding);
  return g.pw(CUDNN_POINTWISE_MUL, s, c.scale, c.scores, "S * scale");
}

Desc dropoutMask(GraphBuilder &g, const AttentionGraphDesc &d, const Common &c) {
  Desc mask = g.virt(c.scores);
  g.rng(1.0 - static_cast<double>(d.dropoutRate), c.seed, c.dropoutOffset, mask, "dropout mask");
  return mask;
}

void buildForward(GraphBuilder &g, const AttentionGraphDesc &d) {
  Common c = commonTensors(g, d);
  Desc q = queryTensor(g, kQ, kOffsetQ, d.strideQ, d, c.io);
  Desc kT = keyTensor(g, kK, raggedOffset(g, kOffsetK, d), d.strideK, true, d, c.io);
  Desc v = keyTensor(g, kV, raggedOffset(g, kOffsetV, d), d.strideV, false, d, c.io);
  Desc o = queryTensor(g, kO, kOffsetO, d.strideO, d, c.io);
  Desc stats = statsTensor(g, d);

  Desc s = paddingMask(g, c, maskedScores(g, c, q, kT, /*zeroPadding=*/true));
  if (d.causal)
    s = causalMask(g, c, s);

  // Softmax with its log-sum-exp: Stats = max + log(sum(exp(S - max))).
  Desc rowMax = g.virt(c.rowStats), rowSum = g.virt(c.rowStats);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, s, rowMax, "row max");
  Desc e = g.pw(CUDNN_POINTWISE_SUB, s, rowMax, c.scores, "S - max");
  e = g.pw(CUDNN_POINTWISE_EXP, e, nullptr, c.scores, "exp");
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, rowSum, "row sum");
  Desc logSum = g.pw(CUDNN_POINTWISE_LOG, rowSum, nullptr, c.rowStats, "log of the row sum");
  g.pointwise(CUDNN_POINTWISE_ADD, rowMax, logSum, nullptr, stats, "statistics");

  // P in the compute dtype: the second matmul takes it as its A operand.
  const bool dropout = d.dropoutRate > 0;
  Desc p = g.pw(CUDNN_POINTWISE_DIV, e, rowSum, c.scores, "softmax",
                dropout ? CUDNN_DATA_FLOAT : c.io);
  if (dropout) {
    p = g.pw(CUDNN_POINTWISE_MUL, p, dropoutMask(g, d, c), c.scores, "dropout");
    p = g.pw(CUDNN_POINTWISE_MUL, p, g.scalar(kDropoutScale, 1.0f / (1.0f - d.dropoutRate)),
             c.scores, "dropout scale", c.io);
  }
  g.matmul(p, v, o, c.seqLenQ, nullptr, c.seqLenK, "O = P V");
}

// dX = (dS^T or P^T) Y, summed over each group of query heads for GQA.
void keyGradient(GraphBuilder &g, const AttentionGraphDesc &d, const Common &c, Desc aT, Desc y,
                 Desc out, const char *what) {
  if (d.heads == d.kvHeads) {
    g.matmul(aT, y, out, c.seqLenK, nullptr, c.seqLenQ, what);
    return;
  }
  Desc full = g.virt(rowMajor(d.batch, d.heads, d.maxSeqK, d.headDim), c.io);
  g.matmul(aT, y, full, c.seqLenK, nullptr, c.seqLenQ, what);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out, "sum over the query heads of a group");
}

void buildBackward(GraphBuilder &g, const AttentionGraphDesc &d) {
  Common c = commonTensors(g, d);
  const int64_t b = d.batch, h = d.heads, sq = d.maxSeqQ, sk = d.maxSeqK, hd = d.headDim;
  Desc offsetK = raggedOffset(g, kOffsetK, d);
  Desc q = queryTensor(g, kQ, kOffsetQ, d.strideQ, d, c.io);
  Desc kT = keyTensor(g, kK, offsetK, d.strideK, true, d, c.io);
  Desc vT = keyTensor(g, kV, raggedOffset(g, kOffsetV, d), d.strideV, true, d, c.io);
  Desc o = queryTensor(g, kO, kOffsetO, d.strideO, d, c.io);
  Desc dO = queryTensor(g, kDO, kOffsetDO, d.strideDO, d, c.io);
  Desc stats = statsTensor(g, d);
  Desc dQ = queryTensor(g, kDQ, kOffsetDQ, d.strideDQ, d, c.io);
  Desc dK = keyTensor(g, kDK, raggedOffset(g, kOffsetDK, d), d.strideDK, false, d, c.io);
  Desc dV = keyTensor(g, kDV, raggedOffset(g, kOffsetDV, d), d.strideDV, false, d, c.io);

  const bool dropout = d.dropoutRate > 0;
  Desc mask = dropout ? dropoutMask(g, d, c) : nullptr;

  // RowSum = rowsum(dO * O) (FlashAttention-2's D), times the keep rate
  // under dropout; f32 in the workspace.
  Shape rows{{b, h, sq, hd}, {h * sq * hd, sq * hd, h * hd, 1}};
  Desc dOO = g.pw(CUDNN_POINTWISE_MUL, dO, o, rows, "dO * O");
  Desc sums = g.virt(c.rowStats);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, dOO, sums, "row sums of dO * O");
  Desc rowSum = g.tensor(kRowSum, c.rowStats, CUDNN_DATA_FLOAT, false);
  Desc factor = dropout ? g.scalar(kKeepRate, 1.0f - d.dropoutRate) : g.scalar(kOne, 1.0f);
  g.pointwise(CUDNN_POINTWISE_MUL, sums, factor, nullptr, rowSum, "row sums * keep rate");

  // P = exp(S - Stats), rebuilt from the forward's statistics.
  Desc s = maskedScores(g, c, q, kT, /*zeroPadding=*/false);
  s = paddingMask(g, c, g.pw(CUDNN_POINTWISE_SUB, s, stats, c.scores, "S - Stats"));
  if (d.causal)
    s = causalMask(g, c, s);
  Desc e = g.pw(CUDNN_POINTWISE_EXP, s, nullptr, c.scores, "P = exp(S - Stats)");
  Desc dropScale = dropout ? g.scalar(kDropoutScale, 1.0f / (1.0f - d.dropoutRate)) : nullptr;
  Desc p = e;
  if (dropout) {
    p = g.pw(CUDNN_POINTWISE_MUL, p, mask, c.scores, "dropout");
    p = g.pw(CUDNN_POINTWISE_MUL, p, dropScale, c.scores, "dropout scale");
  }
  Shape scoresT{{b, h, sk, sq}, {h * sq * sk, sq * sk, 1, sk}};
  Desc pT = g.virt(scoresT, c.io);
  g.reshape(p, pT, "P^T");
  keyGradient(g, d, c, pT, dO, dV, "dV = P^T dO");

  // dS = P * (dP - RowSum) * scale, dP = dO V^T (through the dropout mask).
  Desc dP = g.virt(c.scores);
  g.matmul(dO, vT, dP, c.seqLenQ, c.seqLenK, nullptr, "dP = dO V^T");
  if (dropout)
    dP = g.pw(CUDNN_POINTWISE_MUL, dP, mask, c.scores, "dP dropout");
  dP = g.pw(CUDNN_POINTWISE_SUB, dP, rowSum, c.scores, "dP - row sums");
  dP = g.pw(CUDNN_POINTWISE_MUL, dP, e, c.scores, "dP * P");
  if (dropout)
    dP = g.pw(CUDNN_POINTWISE_MUL, dP, dropScale, c.scores, "dS dropout scale");
  Desc dS = g.pw(CUDNN_POINTWISE_MUL, dP, c.scale, c.scores, "dS * scale");
  Desc dST = g.virt(scoresT, c.io);
  g.reshape(dS, dST, "dS^T");
  keyGradient(g, d, c, dST, q, dK, "dK = dS^T Q");

  // dQ = dS K, accumulated in f32 (the workspace) and converted.
  Desc k = g.virt(tokenMajor(b, d.kvHeads, sk, hd, d.strideK), CUDNN_DATA_FLOAT, offsetK);
  g.reshape(kT, k, "K from K^T");
  Desc dQAccum = g.tensor(kDQAccum, rowMajor(b, h, sq, hd), CUDNN_DATA_FLOAT, false);
  g.matmul(dS, k, dQAccum, c.seqLenQ, nullptr, c.seqLenK, "dQ = dS K");
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dQAccum, nullptr, nullptr, dQ, "dQ");
}

// The first engine configuration (heuristics mode A, then the fallback list)
// that finalizes as an execution plan; null with `whyNot` when none does.
Desc executionPlan(GraphBuilder &g, cudnnHandle_t handle, Desc graph, const std::string &stage,
                   int64_t &workspace, std::string &whyNot) {
  std::string last = "heuristics offered no engine configuration";
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    const char *modeName = mode == CUDNN_HEUR_MODE_A ? "heuristics mode A" : "fallback heuristics";
    Desc heur = g.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, modeName);
    if (!heur)
      break;
    cudnnStatus_t status = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    if (status == CUDNN_STATUS_SUCCESS)
      status = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                        &mode);
    if (status == CUDNN_STATUS_SUCCESS)
      status = cudnnBackendFinalize(heur);
    int64_t count = 0;
    if (status == CUDNN_STATUS_SUCCESS)
      status = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
    if (status != CUDNN_STATUS_SUCCESS) {
      last = refusal(stage + " (" + modeName + ")", status);
      continue;
    }
    if (count <= 0) {
      last = stage + " (" + modeName + "): no engine configuration";
      continue;
    }
    std::vector<Desc> configs;
    for (int64_t i = 0; i < count && g.ok(); ++i)
      configs.push_back(g.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "an engine configuration"));
    if (!g.ok())
      break;
    int64_t returned = 0;
    status = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                      configs.data());
    if (status != CUDNN_STATUS_SUCCESS) {
      last = refusal(stage + " (" + modeName + " results)", status);
      continue;
    }
    for (int64_t i = 0; i < returned; ++i) {
      Desc plan = nullptr;
      status = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
      if (status != CUDNN_STATUS_SUCCESS) {
        last = refusal(stage + " (creating an execution plan)", status);
        continue;
      }
      status = cudnnBackendSetAttribute(plan, kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle);
      if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i]);
      if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnBackendFinalize(plan);
      int64_t bytes = 0, got = 0;
      if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                          CUDNN_TYPE_INT64, 1, &got, &bytes);
      if (status == CUDNN_STATUS_SUCCESS) {
        workspace = bytes;
        return plan;
      }
      last = refusal(stage + " (finalizing an execution plan from " + modeName + ")", status);
      cudnnBackendDestroyDescriptor(plan);
    }
  }
  whyNot = g.ok() ? last : g.error();
  return nullptr;
}

// True when the product of `factors` (all positive) is at most `limit`.
bool productAtMost(std::initializer_list<int64_t> factors, int64_t limit) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (f > limit / product)
      return false;
    product *= f;
  }
  return true;
}

} // namespace

struct AttentionPlan::Descriptors {
  std::vector<Desc> all; // in creation order; destroyed in reverse
  std::vector<int64_t> uids; // tensors the variant pack binds
  float scalars[kScalarCount] = {};
  int64_t rowSumOffset = -1, dQAccumOffset = -1; // in the workspace
  int64_t dQAccumBytes = 0;

  ~Descriptors() {
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      cudnnBackendDestroyDescriptor(*it);
  }
};

std::string attentionDescProblem(const AttentionGraphDesc &d) {
  if (d.batch <= 0 || d.maxSeqQ <= 0 || d.maxSeqK <= 0)
    return "the batch and both sequence bounds must be positive";
  if (d.heads <= 0 || d.kvHeads <= 0 || d.heads % d.kvHeads != 0)
    return "kvHeads (" + std::to_string(d.kvHeads) + ") must divide heads (" +
           std::to_string(d.heads) + ")";
  // cuDNN's fused attention (FP16/BF16, Hopper): head dims multiples of 8 up
  // to 256.
  if (d.headDim <= 0 || d.headDim % 8 != 0 || d.headDim > 256)
    return "headDim " + std::to_string(d.headDim) +
           " is not a multiple of 8 in 8..256 (cuDNN's fused attention)";
  if (!std::isfinite(d.scale) || d.scale == 0)
    return "the softmax scale must be finite and nonzero";
  if (!(d.dropoutRate >= 0 && d.dropoutRate < 1))
    return "the dropout rate must be in [0, 1), got " + std::to_string(d.dropoutRate);
  const int64_t queryWidth = d.heads * d.headDim, keyWidth = d.kvHeads * d.headDim;
  struct Row {
    const char *name;
    int64_t stride, width, seq;
  };
  std::vector<Row> rows = {{"Q", d.strideQ, queryWidth, d.maxSeqQ},
                           {"K", d.strideK, keyWidth, d.maxSeqK},
                           {"V", d.strideV, keyWidth, d.maxSeqK},
                           {"O", d.strideO, queryWidth, d.maxSeqQ}};
  if (d.backward) {
    rows.push_back({"dO", d.strideDO, queryWidth, d.maxSeqQ});
    rows.push_back({"dQ", d.strideDQ, queryWidth, d.maxSeqQ});
    rows.push_back({"dK", d.strideDK, keyWidth, d.maxSeqK});
    rows.push_back({"dV", d.strideDV, keyWidth, d.maxSeqK});
  }
  const int64_t i32 = std::numeric_limits<int32_t>::max();
  for (const Row &r : rows) {
    if (r.stride < r.width)
      return std::string("the row stride of ") + r.name + " (" + std::to_string(r.stride) +
             ") is below its width (" + std::to_string(r.width) + ")";
    // The ragged offsets are i32 element offsets.
    if (!productAtMost({d.batch, r.seq, r.stride}, i32))
      return std::string("the element offsets of ") + r.name + " can pass 2^31 - 1";
  }
  if (!productAtMost({d.batch, d.maxSeqQ, d.heads}, i32))
    return "the element offsets of the statistics can pass 2^31 - 1";
  return {};
}

std::unique_ptr<AttentionPlan> AttentionPlan::build(cudnnHandle_t handle,
                                                    const AttentionGraphDesc &desc,
                                                    std::string &whyNot) {
  whyNot = attentionDescProblem(desc);
  if (!whyNot.empty())
    return nullptr;
  if (!handle) {
    whyNot = "no cuDNN handle";
    return nullptr;
  }
  std::unique_ptr<AttentionPlan> out(new AttentionPlan);
  out->d = desc;
  out->owned = std::make_unique<Descriptors>();

  const std::string stage = desc.backward ? "building the backward operation graph"
                                          : "building the forward operation graph";
  GraphBuilder g(stage, out->owned->scalars);
  if (desc.backward)
    buildBackward(g, desc);
  else
    buildForward(g, desc);
  Desc graph = g.graph(handle);
  if (!g.ok()) {
    whyNot = g.error();
    return nullptr;
  }
  const std::string planStage = desc.backward ? "planning the backward operation graph"
                                              : "planning the forward operation graph";
  int64_t planBytes = 0;
  Desc plan = executionPlan(g, handle, graph, planStage, planBytes, whyNot);
  if (!plan)
    return nullptr;

  out->plan = plan;
  out->owned->uids = g.boundUids();
  out->owned->all = g.release();
  out->workspace = planBytes;
  if (desc.backward) {
    int64_t rowSumBytes = desc.batch * desc.heads * desc.maxSeqQ * int64_t(sizeof(float));
    out->owned->rowSumOffset = alignUp(planBytes);
    out->owned->dQAccumOffset = alignUp(out->owned->rowSumOffset + rowSumBytes);
    out->owned->dQAccumBytes = rowSumBytes * desc.headDim;
    out->workspace = out->owned->dQAccumOffset + out->owned->dQAccumBytes;
  }
  return out;
}

AttentionPlan::~AttentionPlan() {
  if (plan)
    cudnnBackendDestroyDescriptor(plan);
}

cudnnStatus_t AttentionPlan::execute(cudnnHandle_t handle, const AttentionDeviceArrays &a,
                                     void *workspacePointer) const {
  if (workspace > 0 && !workspacePointer)
    return CUDNN_STATUS_BAD_PARAM;
  char *ws = static_cast<char *>(workspacePointer);
  std::vector<void *> pointers;
  pointers.reserve(owned->uids.size());
  for (int64_t uid : owned->uids) {
    void *p = nullptr;
    switch (uid) {
    case kQ: p = a.q; break;
    case kK: p = a.k; break;
    case kV: p = a.v; break;
    case kO: p = a.o; break;
    case kStats: p = a.stats; break;
    case kDO: p = a.dO; break;
    case kDQ: p = a.dQ; break;
    case kDK: p = a.dK; break;
    case kDV: p = a.dV; break;
    case kSeqLenQ: p = a.seqLenQ; break;
    case kSeqLenK: p = a.seqLenK; break;
    case kOffsetQ: p = a.offsetQ; break;
    case kOffsetK: p = a.offsetK; break;
    case kOffsetV: p = a.offsetV; break;
    case kOffsetO: p = a.offsetO; break;
    case kOffsetStats: p = a.offsetStats; break;
    case kOffsetDO: p = a.offsetDO; break;
    case kOffsetDQ: p = a.offsetDQ; break;
    case kOffsetDK: p = a.offsetDK; break;
    case kOffsetDV: p = a.offsetDV; break;
    case kSeed: p = a.dropoutSeed; break;
    case kDropoutOffset: p = a.dropoutOffset; break;
    case kRowSum: p = ws + owned->rowSumOffset; break;
    case kDQAccum: p = ws + owned->dQAccumOffset; break;
    default:
      if (uid >= kScale && uid < kScalarEnd)
        p = &owned->scalars[uid - kScale];
    }
    if (!p)
      return CUDNN_STATUS_BAD_PARAM;
    pointers.push_back(p);
  }

  Desc pack = nullptr;
  cudnnStatus_t status = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (status != CUDNN_STATUS_SUCCESS)
    return status;
  const int64_t n = static_cast<int64_t>(pointers.size());
  status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                    owned->uids.data());
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, pointers.data());
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                      1, &workspacePointer);
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendFinalize(pack);
  // cuDNN sums dQ = dS K into dQAccum, which must start at zero:
  // cudnn-frontend's SDPA backward (the graph this one follows) memsets it
  // before every execution.
  if (status == CUDNN_STATUS_SUCCESS && owned->dQAccumBytes > 0) {
    cudaStream_t stream = nullptr;
    status = cudnnGetStream(handle, &stream);
    if (status == CUDNN_STATUS_SUCCESS &&
        cudaMemsetAsync(ws + owned->dQAccumOffset, 0, static_cast<size_t>(owned->dQAccumBytes),
                        stream) != cudaSuccess) {
      (void)cudaGetLastError(); // reported as the status below, not left sticky
      status = CUDNN_STATUS_EXECUTION_FAILED_CUDART;
    }
  }
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendExecute(handle, plan, pack);
  cudnnBackendDestroyDescriptor(pack);
  return status;
}

} // namespace ls2c::runtime::cudnn
