//===- KernelCases.cpp - generated kernels with reference results ---------===//
//
// ls2c-kernel-cases MODEL.json OUTDIR [--tokens N] [--arch sm_90] [--seed S]
//                   [--only NAME-PART] [--max-case-bytes N]
//                   [--seqlens Q:K,Q:K,...] [--input-scale X] [--reference f32|f64]
//
// Writes one case per distinct generated kernel of the model: the cubin,
// its launch config, random inputs (ids within their tables; attention's
// cu_seqlens a random packing into a few sequences, one empty and one of
// length 1) and the outputs the CPU reference interpreter (F32 mode)
// computes for the same op (fusion group, attention, ...), with dynamic sizes
// set from --tokens (default 37, not a multiple of any tile). Tensors a
// kernel reads or writes through a row stride are laid out with padded rows.
// Attention's edge cases (issue 7): --seqlens fixes the sequences' query and
// key lengths (self-attention needs Q = K; an empty sequence is 0:0) and
// sets the attention cases' token counts to their sums; --input-scale
// multiplies every float input (x3 pushes fp16 scores toward overflow);
// --reference f64 computes the expected outputs in float64.
// ls2c-kernel-check runs them on a GPU, where there is no MLIR. Files:
// OUTDIR/<kernel>/case.json (format in KernelCheck.cpp) and raw
// little-endian tensors in their storage types.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"

#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Analysis/SymbolicDims.h"
#include "ls2c/Codegen/ModuleKernels.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>

using namespace mlir;
using namespace ls2c;
using reference::ElementType;
using reference::HostTensor;

namespace {

struct Options {
  std::string model, outDir, arch = "sm_90";
  int64_t tokens = 37;
  uint64_t seed = 1;
  std::string only; ///< keep kernels whose name contains this
  int64_t maxCaseBytes = 0; ///< skip cases whose data is larger (0: no limit)
  /// --seqlens: per sequence (query length, key length); empty: random.
  std::vector<std::pair<int64_t, int64_t>> seqlens;
  double inputScale = 1.0;
  bool referenceF64 = false;
};

std::string storageBytes(const HostTensor &t) {
  std::string out;
  auto put = [&](const void *p, size_t n) { out.append(static_cast<const char *>(p), n); };
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    switch (t.type) {
    case ElementType::F32: {
      float x = static_cast<float>(t.floats[i]);
      put(&x, 4);
      break;
    }
    case ElementType::F16: {
      uint16_t x = reference::toF16Bits(t.floats[i]);
      put(&x, 2);
      break;
    }
    case ElementType::BF16: {
      uint16_t x = reference::toBF16Bits(t.floats[i]);
      put(&x, 2);
      break;
    }
    case ElementType::I32: {
      int32_t x = static_cast<int32_t>(t.ints[i]);
      put(&x, 4);
      break;
    }
    case ElementType::I64: {
      int64_t x = t.ints[i];
      put(&x, 8);
      break;
    }
    case ElementType::I1: {
      uint8_t x = t.ints[i] ? 1 : 0;
      put(&x, 1);
      break;
    }
    }
  }
  return out;
}

double tolerance(ElementType t) {
  switch (t) {
  case ElementType::F16:
    return 5e-3;
  case ElementType::BF16:
    return 2e-2;
  default:
    return 1e-5;
  }
}

/// The ids a case draws for `v`.
struct IdRange {
  int64_t rows = 0;        ///< table rows of the gathers (and embedding
                           ///< gradients) that read `v` as ids; 0: none
  bool outOfRange = false; ///< they take -1 too (a gather's fill_value, a
                           ///< scatter_add's drop_out_of_range)
};

/// `rowsOf` gives a table's row count in this case (a dynamic one: rows of
/// an activation, the masked-LM head's).
IdRange idRange(Value v, const std::function<int64_t(Value)> &rowsOf) {
  IdRange r;
  for (OpOperand &use : v.getUses()) {
    if (auto g = dyn_cast<ls2::GatherOp>(use.getOwner()); g && use.getOperandNumber() == 1) {
      r.rows = r.rows ? std::min(r.rows, rowsOf(g.getTable())) : rowsOf(g.getTable());
      r.outOfRange |= g.getFillValueAttr() != nullptr;
    }
    if (auto s = dyn_cast<ls2::ScatterAddOp>(use.getOwner()); s && use.getOperandNumber() == 1) {
      r.rows = rowsOf(s.getResult());
      r.outOfRange |= s.getDropOutOfRange();
    }
  }
  return r;
}

/// The operands of an attention op or its gradient the cases shape.
struct AttentionOperands {
  Value query, key, cuQ, cuK;
  bool forward = true;
};

std::optional<AttentionOperands> attentionOperands(Operation *op) {
  if (auto a = dyn_cast<ls2::AttentionOp>(op))
    return AttentionOperands{a.getQuery(), a.getKey(), a.getCuSeqlensQ(), a.getCuSeqlensK(),
                             true};
  if (auto g = dyn_cast<ls2::AttentionGradOp>(op))
    return AttentionOperands{g.getQuery(), g.getKey(), g.getCuSeqlensQ(), g.getCuSeqlensK(),
                             false};
  return std::nullopt;
}

/// Random lengths of `count` packed sequences over `tokens`: sequence
/// `empty` has none and `single` one token where there are enough
/// sequences, every other at least one where the tokens allow.
std::vector<int64_t> randomLengths(int64_t tokens, int64_t count, int64_t empty, int64_t single,
                                   std::mt19937_64 &rng) {
  std::vector<int64_t> length(static_cast<size_t>(count), 0);
  if (count == 1) {
    length[0] = tokens;
    return length;
  }
  std::vector<int64_t> rest;
  for (int64_t b = 0; b < count; ++b)
    if (b != empty && b != single)
      rest.push_back(b);
  int64_t left = tokens;
  if (single != empty && left > 0 && !rest.empty()) {
    length[static_cast<size_t>(single)] = 1;
    --left;
  } else if (single != empty) {
    rest.push_back(single);
  }
  for (int64_t b : rest)
    if (left > 0) {
      length[static_cast<size_t>(b)] = 1;
      --left;
    }
  for (; left > 0; --left)
    ++length[static_cast<size_t>(rest[rng() % rest.size()])];
  return length;
}

/// cu_seqlens of `lengths`: [0, l0, l0 + l1, ...].
void fillCuSeqlens(HostTensor &cu, const std::vector<int64_t> &lengths) {
  cu.ints.assign(1, 0);
  for (int64_t l : lengths)
    cu.ints.push_back(cu.ints.back() + l);
}

/// Storage of [rows, ...] tensor `t` with rows `stride` elements apart, the
/// gaps 0xFF (NaN for floats: a kernel that reads them spreads NaN, one
/// that writes them leaves no NaN where the expected output has one).
std::string stridedBytes(const HostTensor &t, int64_t stride) {
  std::string packed = storageBytes(t);
  int64_t rows = t.shape.empty() ? 1 : t.shape[0];
  if (rows == 0)
    return packed;
  size_t rowBytes = packed.size() / static_cast<size_t>(rows);
  size_t elementBytes = rowBytes / static_cast<size_t>(t.numElements() / rows);
  size_t gap = static_cast<size_t>(stride) * elementBytes - rowBytes;
  std::string out;
  for (int64_t r = 0; r < rows; ++r) {
    out.append(packed, static_cast<size_t>(r) * rowBytes, rowBytes);
    out.append(gap, '\xff');
  }
  return out;
}

int run(const Options &o) {
  MLIRContext context;
  ModelDescription desc = loadModelDescription(o.model);
  OwningOpRef<ModuleOp> module = buildForwardModule(context, desc);
  if (!module)
    return 1;
  PassManager pm(&context);
  addCompilePipeline(pm, CompileStage::Planned, false);
  if (failed(pm.run(*module)))
    return 1;
  FailureOr<codegen::ModuleKernels> kernels = codegen::generateModuleKernels(*module);
  if (failed(kernels))
    return 1;
  std::vector<jit::KernelSource> sources;
  for (const runtime::Kernel &k : kernels->kernels)
    sources.push_back({k.name, k.source});
  jit::CompileOptions jo;
  jo.arch = o.arch;
  std::vector<jit::CompiledKernel> cubins = jit::compileKernels(sources, jo);

  std::mt19937_64 rng(o.seed);
  // One case per kernel, from its first use; an attention kernel's from a
  // use with separately packed queries and keys (cross-attention) if any,
  // which exercises more than self-attention.
  std::map<unsigned, const codegen::ModuleKernels::Use *> caseUse;
  auto cross = [](const codegen::ModuleKernels::Use *u) {
    std::optional<AttentionOperands> a = attentionOperands(u->op);
    return a && a->cuQ != a->cuK;
  };
  for (const codegen::ModuleKernels::Use &use : kernels->uses) {
    auto [it, inserted] = caseUse.try_emplace(use.kernel, &use);
    if (!inserted && cross(&use) && !cross(it->second))
      it->second = &use;
  }
  std::map<std::string, SymbolicDims> dimsOf;
  std::map<std::string, ShapeBounds> boundsOf;
  int written = 0, skipped = 0, tooLarge = 0, notApplicable = 0;
  // A fusion group's or scatter_add's later kernels (a row reduction's
  // column sums, the sums after the sorted ids) run in its case, after the
  // first, with the same parameters.
  std::map<Operation *, std::vector<const codegen::ModuleKernels::Use *>> usesOf;
  for (const codegen::ModuleKernels::Use &use : kernels->uses)
    usesOf[use.op].push_back(&use);
  for (const codegen::ModuleKernels::Use &use : kernels->uses) {
    if (caseUse.at(use.kernel) != &use)
      continue;
    if (isa<ls2::FusionOp, ls2::ScatterAddOp>(use.op) && usesOf.at(use.op).front() != &use)
      continue;
    const runtime::Kernel &kernel = kernels->kernels[use.kernel];
    if (!o.only.empty() && kernel.name.find(o.only) == std::string::npos)
      continue;
    Operation *op = use.op;
    auto function = op->getParentOfType<func::FuncOp>();
    std::string fname = function.getName().str();
    if (!dimsOf.count(fname)) {
      dimsOf.emplace(fname, *SymbolicDims::compute(function));
      boundsOf.emplace(fname, *ShapeBounds::compute(function));
    }
    const SymbolicDims &dims = dimsOf.at(fname);
    const ShapeBounds &bounds = boundsOf.at(fname);

    // Concrete sizes: every dynamic base dim at --tokens (within its
    // bound), a multiple of the divisors it is used with.
    std::map<std::pair<int32_t, int32_t>, int64_t> divisor;
    auto note = [&](const runtime::Dim &d) {
      if (d.isStatic())
        return;
      int64_t &l = divisor[{d.argument, d.axis}];
      l = l ? std::lcm(l, d.divisor) : d.divisor;
    };
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        for (const runtime::Dim &d : dims.shape(v))
          note(d);
      else
        note(dims.index(v));
    for (Value v : op->getResults())
      for (const runtime::Dim &d : dims.shape(v))
        note(d);
    std::map<std::pair<int32_t, int32_t>, int64_t> base;
    for (auto &[key, div] : divisor) {
      int64_t bound = bounds.shape(function.getArgument(key.first))[key.second];
      int64_t v = std::min(o.tokens, bound);
      v = std::max(div, v / div * div);
      base[key] = v;
    }
    // Attention: a few sequences (batch + 1 offsets), and when queries and
    // keys count different tokens (cross-attention), different counts.
    std::optional<AttentionOperands> attention = attentionOperands(op);
    if (attention) {
      auto keyOf = [](const runtime::Dim &d) { return std::make_pair(d.argument, d.axis); };
      runtime::Dim tq = dims.shape(attention->query)[0], tk = dims.shape(attention->key)[0];
      for (Value cu : {attention->cuQ, attention->cuK}) {
        runtime::Dim d = dims.shape(cu)[0];
        if (d.isStatic() || d.multiplier != 1 || d.divisor != 1 || sameDim(d, tq) ||
            sameDim(d, tk))
          continue;
        int64_t bound = bounds.shape(function.getArgument(d.argument))[d.axis];
        base[keyOf(d)] = std::min<int64_t>(bound, 6);
      }
      if (!tk.isStatic() && !tq.isStatic() && keyOf(tk) != keyOf(tq)) {
        int64_t div = divisor.at(keyOf(tk));
        base[keyOf(tk)] = std::max(div, base.at(keyOf(tk)) * 2 / 3 / div * div);
      }
      if (!o.seqlens.empty()) {
        // The given sequences: token counts are their sums, batch + 1 offsets.
        int64_t sumQ = 0, sumK = 0;
        bool equal = true;
        for (auto [lq, lk] : o.seqlens)
          sumQ += lq, sumK += lk, equal &= lq == lk;
        if (attention->cuQ == attention->cuK && !equal) {
          // Self-attention has one cu_seqlens: such lengths are for the
          // model's cross-attention kernels only.
          std::printf("not applicable: %s (self-attention needs Q = K in --seqlens)\n",
                      kernel.name.c_str());
          ++notApplicable;
          continue;
        }
        int64_t entries = static_cast<int64_t>(o.seqlens.size()) + 1;
        for (Value cu : {attention->cuQ, attention->cuK}) {
          runtime::Dim d = dims.shape(cu)[0];
          if (d.isStatic() && d.size != entries)
            throw std::runtime_error(kernel.name + ": cu_seqlens holds " +
                                     std::to_string(d.size) + " entries, --seqlens gives " +
                                     std::to_string(entries - 1) + " sequences");
          if (!d.isStatic())
            base[keyOf(d)] = entries;
        }
        for (auto [dim, sum] : {std::make_pair(tq, sumQ), std::make_pair(tk, sumK)}) {
          if (dim.isStatic() || dim.multiplier != 1 || dim.divisor != 1)
            throw std::runtime_error(kernel.name + ": --seqlens needs plain dynamic token dims");
          int64_t bound = bounds.shape(function.getArgument(dim.argument))[dim.axis];
          if (sum > bound)
            throw std::runtime_error(kernel.name + ": --seqlens sums to " + std::to_string(sum) +
                                     " tokens, over the model's bound " + std::to_string(bound) +
                                     " (max_batch_tokens)");
          base[keyOf(dim)] = sum;
        }
      }
    }
    auto value = [&](const runtime::Dim &d) {
      return d.isStatic() ? d.size : base.at({d.argument, d.axis}) * d.multiplier / d.divisor;
    };
    auto concrete = [&](Value v) {
      std::vector<int64_t> shape;
      for (const runtime::Dim &d : dims.shape(v))
        shape.push_back(value(d));
      return shape;
    };

    // A function of the op alone: tensor operands are its arguments, sizes
    // are read from the first of them that has the same dim.
    OpBuilder b(&context);
    OwningOpRef<ModuleOp> wrapper = ModuleOp::create(op->getLoc());
    b.setInsertionPointToEnd(wrapper->getBody());
    SmallVector<Type> argTypes;
    SmallVector<unsigned> tensorOperands;
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (isa<RankedTensorType>(v.getType())) {
        argTypes.push_back(v.getType());
        tensorOperands.push_back(static_cast<unsigned>(i));
      }
    auto f = b.create<func::FuncOp>(op->getLoc(), "case",
                                    b.getFunctionType(argTypes, op->getResultTypes()));
    Block *entry = f.addEntryBlock();
    b.setInsertionPointToEnd(entry);
    IRMapping map;
    for (auto [k, i] : llvm::enumerate(tensorOperands))
      map.map(op->getOperand(i), entry->getArgument(k));
    // Sizes no tensor operand carries (a scatter_add's dynamic row count)
    // become index arguments after the tensors.
    std::vector<int64_t> indexArgs;
    for (Value v : op->getOperands()) {
      if (isa<RankedTensorType>(v.getType()))
        continue;
      runtime::Dim want = dims.index(v);
      bool found = false;
      for (auto [k, i] : llvm::enumerate(tensorOperands)) {
        ArrayRef<runtime::Dim> s = dims.shape(op->getOperand(i));
        for (auto [axis, d] : llvm::enumerate(s))
          if (!found && sameDim(d, want)) {
            map.map(v, b.create<ls2::DimOp>(op->getLoc(), entry->getArgument(k),
                                            static_cast<int64_t>(axis)));
            found = true;
          }
      }
      if (!found && !map.contains(v)) {
        map.map(v, entry->addArgument(b.getIndexType(), op->getLoc()));
        indexArgs.push_back(value(want));
      }
    }
    if (!indexArgs.empty()) {
      SmallVector<Type> types(entry->getArgumentTypes());
      f.setFunctionType(b.getFunctionType(types, op->getResultTypes()));
    }
    Operation *clone = b.clone(*op, map);
    b.create<func::ReturnOp>(op->getLoc(), clone->getResults());

    // Inputs.
    std::vector<HostTensor> args;
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (unsigned i : tensorOperands) {
      Value v = op->getOperand(i);
      auto type = cast<RankedTensorType>(v.getType());
      ElementType et = *reference::elementTypeFromMLIR(type.getElementType());
      std::vector<int64_t> shape = concrete(v);
      HostTensor t = HostTensor::zeros(et, shape);
      Value inBody = isa<ls2::FusionOp>(op)
                         ? cast<ls2::FusionOp>(op).getBody().front().getArgument(i)
                         : v;
      // A table's rows in this case: an operand's (a fusion input's) or
      // the op's result's concrete dim 0.
      auto rowsOf = [&](Value table) -> int64_t {
        if (auto arg = dyn_cast<BlockArgument>(table); arg && isa<ls2::FusionOp>(op))
          return concrete(op->getOperand(arg.getArgNumber()))[0];
        return concrete(table)[0];
      };
      IdRange ids = isa<ls2::FusionOp>(op) ? idRange(inBody, rowsOf)
                                           : (i == 1 ? idRange(v, rowsOf) : IdRange{});
      for (int64_t e = 0; e < t.numElements(); ++e) {
        if (reference::isFloat(et)) {
          t.floats[e] = reference::roundTo(et, o.inputScale * uniform(rng));
        } else if (et == ElementType::I1) {
          t.ints[e] = rng() & 1;
        } else if (type.getRank() == 0) {
          t.ints[e] = static_cast<int64_t>(rng() >> 1);
        } else if (ids.outOfRange && rng() % 4 == 0) {
          t.ints[e] = -1; // a filled row (nonzero's unused slots)
        } else if (ids.rows > 0) {
          t.ints[e] = static_cast<int64_t>(rng() % static_cast<uint64_t>(ids.rows));
        } else {
          // Small values, one in ten the ignore index -100.
          t.ints[e] = rng() % 10 == 0 ? -100 : static_cast<int64_t>(rng() % 8);
        }
      }
      args.push_back(std::move(t));
    }
    if (attention) {
      // cu_seqlens: a random partition of the tokens into the batch's
      // sequences, one of them empty and one of length 1. Forward cases
      // empty the same query and key sequence, so no query row is left
      // without keys (lse = -inf, which ls2c-kernel-check cannot compare
      // yet; causal cross-attention with more queries than keys would
      // still have some); gradient cases empty different ones (dq = 0 for
      // rows without keys, dk = dv = 0 for keys without queries).
      auto argOf = [&](Value v) -> HostTensor & {
        size_t k = 0;
        while (op->getOperand(tensorOperands[k]) != v)
          ++k;
        return args[k];
      };
      HostTensor &cuQ = argOf(attention->cuQ);
      int64_t batch = cuQ.shape[0] - 1;
      if (!o.seqlens.empty()) {
        std::vector<int64_t> lq, lk;
        for (auto [q, k] : o.seqlens)
          lq.push_back(q), lk.push_back(k);
        fillCuSeqlens(cuQ, lq);
        if (attention->cuK != attention->cuQ)
          fillCuSeqlens(argOf(attention->cuK), lk);
      } else if (batch >= 1) {
        auto pick = [&](int64_t avoid) {
          if (batch < 2)
            return int64_t{0};
          int64_t b = static_cast<int64_t>(rng() % static_cast<uint64_t>(batch - 1));
          return b >= avoid ? b + 1 : b;
        };
        int64_t empty = static_cast<int64_t>(rng() % static_cast<uint64_t>(batch));
        int64_t tq = concrete(attention->query)[0], tk = concrete(attention->key)[0];
        fillCuSeqlens(cuQ, randomLengths(tq, batch, empty, pick(empty), rng));
        if (attention->cuK != attention->cuQ) {
          int64_t emptyK = attention->forward ? empty : pick(empty);
          fillCuSeqlens(argOf(attention->cuK),
                        randomLengths(tk, batch, emptyK, pick(emptyK), rng));
        }
      }
    }
    // An operand used twice (self-attention's cu_seqlens) is one tensor.
    for (size_t k = 0; k < tensorOperands.size(); ++k)
      for (size_t first = 0; first < k; ++first)
        if (op->getOperand(tensorOperands[first]) == op->getOperand(tensorOperands[k])) {
          args[k] = args[first];
          break;
        }
    for (int64_t size : indexArgs)
      args.push_back(HostTensor::scalarInt(ElementType::I64, size));
    std::vector<HostTensor> expected;
    try {
      reference::Interpreter interpreter(o.referenceF64 ? reference::Precision::F64
                                                        : reference::Precision::F32);
      expected = interpreter.run(f, args);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "skip %s: the reference failed: %s\n", kernel.name.c_str(), e.what());
      ++skipped;
      continue;
    }

    double caseTolerance = 0;
    for (const HostTensor &t : args)
      if (reference::isFloat(t.type))
        caseTolerance = std::max(caseTolerance, tolerance(t.type));
    for (const HostTensor &t : expected)
      if (reference::isFloat(t.type))
        caseTolerance = std::max(caseTolerance, tolerance(t.type));
    int64_t caseBytes = 0;
    for (const HostTensor &t : args)
      caseBytes += static_cast<int64_t>(storageBytes(t).size());
    for (const HostTensor &t : expected)
      caseBytes += static_cast<int64_t>(storageBytes(t).size());
    if (o.maxCaseBytes > 0 && caseBytes > o.maxCaseBytes) {
      ++tooLarge;
      continue;
    }

    // The case.
    std::filesystem::path dir = std::filesystem::path(o.outDir) / kernel.name;
    std::filesystem::create_directories(dir);
    nlohmann::json c;
    c["kernel"] = kernel.name;
    c["group"] = isa<ls2::FusionOp>(op) ? cast<ls2::FusionOp>(op).getGroupName().str()
                                         : op->getName().stripDialect().str();
    c["function"] = fname;
    c["cubin"] = "kernel.cubin";
    writeFileAtomically((dir / "kernel.cubin").string(), cubins[use.kernel].cubin);
    writeFileAtomically((dir / "kernel.cu").string(), kernel.source);
    // Dynamic work dims are the values of the kernel's int64 parameters.
    auto paramValue = [&](size_t i) -> int64_t {
      const codegen::ParamBinding &pb = use.bindings[i];
      if (pb.kind == codegen::ParamBinding::Kind::Size)
        return value(pb.size);
      if (pb.kind == codegen::ParamBinding::Kind::Constant)
        return pb.value;
      return value(dims.index(op->getOperand(pb.index)));
    };
    auto gridOf = [&](const runtime::LaunchConfig &launch) {
      int64_t work = 1;
      for (const runtime::Dim &d : launch.work)
        work *= d.isStatic() ? d.size
                             : paramValue(static_cast<size_t>(d.argument)) * d.multiplier /
                                   d.divisor;
      return work == 0 ? int64_t{0}
                       : std::min<int64_t>(launch.maxBlocks,
                                           (work + static_cast<int64_t>(launch.workPerBlock) - 1) /
                                               static_cast<int64_t>(launch.workPerBlock));
    };
    c["block"] = kernel.launch.blockThreads;
    c["grid"] = gridOf(kernel.launch);
    c["shared_bytes"] = kernel.launch.dynamicSharedBytes;
    uint64_t scratchBytes = kernel.scratchBytes;
    if (isa<ls2::FusionOp, ls2::ScatterAddOp>(op) && usesOf.at(op).size() > 1) {
      nlohmann::json then = nlohmann::json::array();
      for (size_t k = 1; k < usesOf.at(op).size(); ++k) {
        const runtime::Kernel &next = kernels->kernels[usesOf.at(op)[k]->kernel];
        std::string file = "kernel_" + std::to_string(k) + ".cubin";
        writeFileAtomically((dir / file).string(), cubins[usesOf.at(op)[k]->kernel].cubin);
        writeFileAtomically((dir / ("kernel_" + std::to_string(k) + ".cu")).string(),
                            next.source);
        then.push_back({{"kernel", next.name}, {"cubin", file},
                        {"block", next.launch.blockThreads}, {"grid", gridOf(next.launch)},
                        {"shared_bytes", next.launch.dynamicSharedBytes}});
        scratchBytes = std::max(scratchBytes, next.scratchBytes);
      }
      c["then"] = then;
    }
    // Tensors whose row stride the kernel takes are laid out with 8 more
    // elements a row than they hold, rounded up to 8 (strided views of fused
    // projections, in-place concat pieces; rows padded to 16 bytes, which
    // generated kernels read as vectors).
    auto rowStride = [&](unsigned index, bool ofResult) -> int64_t {
      for (const codegen::ParamBinding &pb : use.bindings)
        if (pb.kind == codegen::ParamBinding::Kind::RowStride && pb.index == index &&
            pb.ofResult == ofResult) {
          auto type = cast<RankedTensorType>(ofResult ? op->getResult(index).getType()
                                                      : op->getOperand(index).getType());
          int64_t width = 1;
          for (int64_t d = 1; d < type.getRank(); ++d)
            width *= type.getDimSize(d);
          return (width + 7) / 8 * 8 + 8;
        }
      return 0;
    };
    auto layout = [&](const HostTensor &t, int64_t stride) {
      return stride ? stridedBytes(t, stride) : storageBytes(t);
    };
    nlohmann::json params = nlohmann::json::array();
    for (const codegen::ParamBinding &pb : use.bindings) {
      nlohmann::json p;
      switch (pb.kind) {
      case codegen::ParamBinding::Kind::Operand: {
        Value v = op->getOperand(pb.index);
        if (!isa<RankedTensorType>(v.getType())) {
          p["kind"] = "int64";
          p["value"] = value(dims.index(v));
          break;
        }
        unsigned k = static_cast<unsigned>(
            std::find(tensorOperands.begin(), tensorOperands.end(), pb.index) -
            tensorOperands.begin());
        std::string file = "in" + std::to_string(pb.index) + ".bin";
        std::string bytes = layout(args[k], rowStride(pb.index, false));
        writeFileAtomically((dir / file).string(), bytes);
        p["kind"] = "pointer";
        p["role"] = "input";
        p["file"] = file;
        p["bytes"] = bytes.size();
        break;
      }
      case codegen::ParamBinding::Kind::Result: {
        // Held to the tolerance of the narrowest float the kernel reads or
        // writes: an f32 output computed from bf16 values carries bf16
        // rounding (the kernel computes in f32, the reference rounds every
        // bf16 op as the IR types say).
        std::string file = "out" + std::to_string(pb.index) + ".expected";
        std::string bytes = layout(expected[pb.index], rowStride(pb.index, true));
        writeFileAtomically((dir / file).string(), bytes);
        p["kind"] = "pointer";
        p["role"] = "output";
        p["file"] = file;
        p["bytes"] = bytes.size();
        p["dtype"] = reference::toString(expected[pb.index].type);
        p["tolerance"] = caseTolerance;
        break;
      }
      case codegen::ParamBinding::Kind::Size:
        p["kind"] = "int64";
        p["value"] = value(pb.size);
        break;
      case codegen::ParamBinding::Kind::Constant:
        p["kind"] = "int64";
        p["value"] = pb.value;
        break;
      case codegen::ParamBinding::Kind::RowStride:
        p["kind"] = "int64";
        p["value"] = rowStride(pb.index, pb.ofResult);
        break;
      case codegen::ParamBinding::Kind::Scratch:
        p["kind"] = "pointer";
        p["role"] = "scratch";
        p["bytes"] = scratchBytes;
        p["counter_bytes"] = codegen::kScratchCounterBytes;
        if (auto grad = dyn_cast<ls2::AttentionGradOp>(op);
            grad && kernel.name.size() > 5 &&
            kernel.name.compare(kernel.name.size() - 5, 5, "_dkdv") == 0) {
          // What the dq kernel leaves there: f32 [bound, heads] arrays of
          // D_i = dout_i . out_i, then the exponent bias (lse_i log2 e, 0
          // for -inf), the bound being the kernel's (half the scratch after
          // the counters each).
          auto argOf = [&](Value v) -> const HostTensor & {
            return args[std::find_if(tensorOperands.begin(), tensorOperands.end(),
                                     [&](unsigned i) { return op->getOperand(i) == v; }) -
                        tensorOperands.begin()];
          };
          const HostTensor &dout = argOf(grad.getDout()), &out = argOf(grad.getOut()),
                           &lse = argOf(grad.getLse());
          int64_t rows = dout.shape[0] * dout.shape[1], width = dout.shape[2];
          size_t bound = (kernel.scratchBytes - codegen::kScratchCounterBytes) / 8;
          std::vector<float> stats(2 * bound, 0.0f);
          for (int64_t r = 0; r < rows; ++r) {
            double sum = 0;
            for (int64_t c = 0; c < width; ++c)
              sum += dout.floats[r * width + c] * out.floats[r * width + c];
            stats[r] = static_cast<float>(sum);
            float bias = static_cast<float>(lse.floats[r]) * 1.4426950408889634f;
            stats[bound + r] = std::isinf(bias) && bias < 0 ? 0.0f : bias;
          }
          std::string file = "scratch.bin";
          writeFileAtomically((dir / file).string(),
                              std::string(reinterpret_cast<const char *>(stats.data()),
                                          stats.size() * sizeof(float)));
          p["file"] = file;
        }
        break;
      }
      params.push_back(p);
    }
    c["params"] = params;
    writeFileAtomically((dir / "case.json").string(), c.dump(1) + "\n");
    ++written;
  }
  std::printf("%s: %d cases written to %s (%d skipped, %d over --max-case-bytes%s), "
              "sizes at %lld\n",
              o.model.c_str(), written, o.outDir.c_str(), skipped, tooLarge,
              notApplicable ? (", " + std::to_string(notApplicable) +
                               " not applicable to --seqlens").c_str()
                            : "",
              static_cast<long long>(o.tokens));
  return skipped ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tokens" && i + 1 < argc)
      o.tokens = std::stoll(argv[++i]);
    else if (a == "--arch" && i + 1 < argc)
      o.arch = argv[++i];
    else if (a == "--max-case-bytes" && i + 1 < argc)
      o.maxCaseBytes = std::stoll(argv[++i]);
    else if (a == "--only" && i + 1 < argc)
      o.only = argv[++i];
    else if (a == "--seed" && i + 1 < argc)
      o.seed = std::stoull(argv[++i]);
    else if (a == "--input-scale" && i + 1 < argc)
      o.inputScale = std::stod(argv[++i]);
    else if (a == "--reference" && i + 1 < argc) {
      std::string r = argv[++i];
      if (r != "f32" && r != "f64") {
        std::fprintf(stderr, "ls2c-kernel-cases: error: --reference must be f32 or f64, got '%s'\n",
                     r.c_str());
        return 2;
      }
      o.referenceF64 = r == "f64";
    } else if (a == "--seqlens" && i + 1 < argc) {
      std::string text = argv[++i];
      size_t at = 0;
      while (at <= text.size()) {
        size_t comma = text.find(',', at);
        std::string item = text.substr(at, comma == std::string::npos ? std::string::npos
                                                                       : comma - at);
        size_t colon = item.find(':');
        long long q = -1, k = -1;
        char *end = nullptr;
        if (colon != std::string::npos) {
          q = std::strtoll(item.c_str(), &end, 10);
          if (end != item.c_str() + colon)
            q = -1;
          k = std::strtoll(item.c_str() + colon + 1, &end, 10);
          if (*end || colon + 1 == item.size())
            k = -1;
        }
        if (q < 0 || k < 0) {
          std::fprintf(stderr, "ls2c-kernel-cases: error: --seqlens: '%s' is not Q:K with "
                               "non-negative integers\n", item.c_str());
          return 2;
        }
        o.seqlens.emplace_back(q, k);
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
    }
    else
      positional.push_back(a);
  }
  if (positional.size() != 2) {
    std::fprintf(stderr, "usage: ls2c-kernel-cases MODEL.json OUTDIR [--tokens N] "
                         "[--arch sm_90] [--seed S] [--only NAME-PART] [--max-case-bytes N] "
                         "[--seqlens Q:K,...] [--input-scale X] [--reference f32|f64]\n");
    return 2;
  }
  o.model = positional[0];
  o.outDir = positional[1];
  try {
    return run(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c-kernel-cases: error: %s\n", e.what());
    return 1;
  }
}
