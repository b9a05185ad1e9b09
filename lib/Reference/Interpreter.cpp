//===- Interpreter.cpp - the CPU reference evaluator of ls2 IR ------------===//
//
// Checks the arguments against the function type, then evaluates the
// body's ops in program order (Kernels.h) until func.return. An `index`
// argument or result is passed as a rank-0 i64 tensor.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Reference/Interpreter.h"

#include "Frame.h"
#include "Kernels.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <new>

namespace ls2c::reference {

using namespace mlir;
using namespace detail;

namespace {

std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return os.str();
}

void evalOp(Operation *op, Frame &frame);

/// Moves `from` (read by `user`) into `to`: tensors and index values alike.
void forward(Operation *user, Value from, Value to, Frame &frame) {
  if (from.getType().isIndex())
    frame.bindIndex(to, frame.getIndex(user, from));
  else
    frame.bind(user, to, frame.get(user, from));
}

/// A fusion group runs its body's primitives in order, so the fused program
/// computes exactly what the unfused one does.
void evalFusion(ls2::FusionOp op, Frame &frame) {
  Block &body = op.getBody().front();
  for (auto [input, arg] : llvm::zip(op.getInputs(), body.getArguments()))
    forward(op, input, arg, frame);
  for (Operation &inner : body.without_terminator())
    evalOp(&inner, frame);
  auto yield = cast<ls2::YieldOp>(body.getTerminator());
  for (auto [value, result] : llvm::zip(yield.getValues(), op.getResults()))
    forward(yield, value, result, frame);
}

void evalOp(Operation *op, Frame &frame) {
  llvm::TypeSwitch<Operation *, void>(op)
      .Case<ls2::NegOp, ls2::ExpOp, ls2::LogOp, ls2::TanhOp, ls2::ErfOp,
            ls2::SqrtOp, ls2::RsqrtOp, ls2::SinOp, ls2::CosOp>(
          [&](auto) { evalUnary(op, frame); })
      .Case<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp,
            ls2::MinOp>([&](auto) { evalBinary(op, frame); })
      .Case([&](ls2::CompareOp o) { evalCompare(o, frame); })
      .Case([&](ls2::SelectOp o) { evalSelect(o, frame); })
      .Case([&](ls2::CastOp o) { evalCast(o, frame); })
      .Case([&](ls2::ConstantOp o) { evalConstant(o, frame); })
      .Case([&](ls2::GeluOp o) { evalGelu(o, frame); })
      .Case([&](ls2::DimOp o) { evalDim(o, frame); })
      .Case([&](ls2::IotaOp o) { evalIota(o, frame); })
      .Case([&](ls2::BroadcastOp o) { evalBroadcast(o, frame); })
      .Case([&](ls2::ReshapeOp o) { evalReshape(o, frame); })
      .Case([&](ls2::TransposeOp o) { evalTranspose(o, frame); })
      .Case([&](ls2::SliceOp o) { evalSlice(o, frame); })
      .Case([&](ls2::ConcatOp o) { evalConcat(o, frame); })
      .Case([&](ls2::ReduceSumOp o) { evalReduceSum(o, frame); })
      .Case([&](ls2::ReduceMaxOp o) { evalReduceMax(o, frame); })
      .Case([&](ls2::MatmulOp o) { evalMatmul(o, frame); })
      .Case([&](ls2::GatherOp o) { evalGather(o, frame); })
      .Case([&](ls2::ScatterAddOp o) { evalScatterAdd(o, frame); })
      .Case([&](ls2::NonzeroOp o) { evalNonzero(o, frame); })
      .Case([&](ls2::RandomUniformOp o) { evalRandomUniform(o, frame); })
      .Case([&](ls2::DropoutOp o) { evalDropout(o, frame); })
      .Case([&](ls2::LayerNormOp o) { evalLayerNorm(o, frame); })
      .Case([&](ls2::SoftmaxOp o) { evalSoftmax(o, frame); })
      .Case([&](ls2::AttentionOp o) { evalAttention(o, frame); })
      .Case([&](ls2::CrossEntropyOp o) { evalCrossEntropy(o, frame); })
      .Case([&](ls2::LayerNormGradOp o) { evalLayerNormGrad(o, frame); })
      .Case([&](ls2::SoftmaxGradOp o) { evalSoftmaxGrad(o, frame); })
      .Case([&](ls2::GeluGradOp o) { evalGeluGrad(o, frame); })
      .Case([&](ls2::CrossEntropyGradOp o) { evalCrossEntropyGrad(o, frame); })
      .Case([&](ls2::AttentionGradOp o) { evalAttentionGrad(o, frame); })
      .Case([&](ls2::AdamWOp o) { evalAdamW(o, frame); })
      .Case([&](ls2::FusionOp o) { evalFusion(o, frame); })
      .Default([&](Operation *) {
        fail(op, "is not supported by the reference interpreter");
      });
}

/// Checks argument `i` against its type; returns the tensor to bind.
HostTensor checkArgument(func::FuncOp function, unsigned i, Type type,
                         const HostTensor &argument) {
  Operation *op = function;
  std::string which = "argument " + std::to_string(i) + " of @" +
                      function.getSymName().str();
  // Malformed host tensors first: their storage must match their shape.
  size_t count = 0;
  try {
    count = static_cast<size_t>(argument.numElements());
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::exception &e) {
    fail(op, which + ": " + e.what());
  }
  bool floatStorage = isFloat(argument.type);
  if ((floatStorage ? argument.floats.size() : argument.ints.size()) != count ||
      !(floatStorage ? argument.ints.empty() : argument.floats.empty()))
    fail(op, which + " (" + argument.describe() +
                 ") does not hold one value per element in the storage its "
                 "type uses");
  if (type.isIndex()) {
    if (argument.type != ElementType::I64 || argument.rank() != 0)
      fail(op, which + " is an index; pass a rank-0 i64 tensor, got " +
                   argument.describe());
    return argument;
  }
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    fail(op, which + " has type " + typeString(type) +
                 ", which the reference interpreter does not support");
  ElementType expected = elementTypeOf(op, tensorType.getElementType());
  bool matches = argument.type == expected &&
                 argument.rank() == tensorType.getRank();
  for (int64_t d = 0; matches && d < tensorType.getRank(); ++d)
    matches = tensorType.isDynamicDim(d) ||
              tensorType.getDimSize(d) == argument.shape[d];
  if (!matches)
    fail(op, which + " is " + argument.describe() + " but the function takes " +
                 typeString(type));
  for (int64_t x : argument.ints) {
    if (expected == ElementType::I1 && x != 0 && x != 1)
      fail(op, which + " holds " + std::to_string(x) + "; i1 values are 0 or 1");
    if (expected == ElementType::I32 && wrapI32(x) != x)
      fail(op, which + " holds " + std::to_string(x) +
                   ", which does not fit in i32");
  }
  return argument;
}

} // namespace

std::vector<HostTensor>
Interpreter::run(func::FuncOp function,
                 const std::vector<HostTensor> &arguments) const {
  if (!function)
    throw InterpreterError("Interpreter::run: null function");
  Operation *funcOp = function;
  if (function.isExternal())
    fail(funcOp, "@" + function.getSymName().str() +
                     " has no body to interpret");
  if (!function.getBody().hasOneBlock())
    fail(funcOp, "@" + function.getSymName().str() +
                     " has several blocks; the reference interpreter runs "
                     "single-block functions");
  FunctionType type = function.getFunctionType();
  if (arguments.size() != type.getNumInputs())
    fail(funcOp, "@" + function.getSymName().str() + " takes " +
                     std::to_string(type.getNumInputs()) + " arguments, got " +
                     std::to_string(arguments.size()));

  Frame frame(precision);
  Block &body = function.getBody().front();
  if (useArena) {
    auto bytes = function->getAttrOfType<IntegerAttr>("ls2.arena_bytes");
    if (!bytes)
      fail(funcOp, "@" + function.getSymName().str() +
                       " has no buffer plan (run ls2-plan-buffers) to run on "
                       "an arena");
    if (precision != Precision::F32)
      fail(funcOp, "runs on its arena only in F32 precision (the arena holds "
                   "the IR's element types)");
    frame.enableArena(bytes.getInt());
  }
  for (unsigned i = 0; i < arguments.size(); ++i) {
    HostTensor argument =
        checkArgument(function, i, type.getInput(i), arguments[i]);
    Value value = body.getArgument(i);
    if (value.getType().isIndex()) {
      frame.bindIndex(value, argument.ints[0]);
      continue;
    }
    // Arguments are storage too: in F32 mode an f16 argument holds f16
    // values.
    frame.normalize(argument);
    frame.bind(funcOp, value, std::move(argument));
  }

  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<HostTensor> results;
      for (Value v : ret.getOperands()) {
        if (v.getType().isIndex())
          results.push_back(
              HostTensor::scalarInt(ElementType::I64, frame.getIndex(&op, v)));
        else
          results.push_back(frame.get(&op, v));
      }
      return results;
    }
    try {
      evalOp(&op, frame);
      if (auto offsets = op.getAttrOfType<DenseI64ArrayAttr>("ls2.offsets");
          offsets && useArena)
        for (auto [r, offset] : llvm::zip(op.getResults(), offsets.asArrayRef()))
          if (offset >= 0)
            frame.storeInArena(&op, r, offset);
      frame.releaseDecoded();
    } catch (const InterpreterError &) {
      throw;
    } catch (const std::bad_alloc &) {
      throw; // the machine's limit, not the op's: the tools say so
    } catch (const std::exception &e) {
      fail(&op, e.what());
    }
  }
  fail(funcOp, "@" + function.getSymName().str() + " has no func.return");
}

} // namespace ls2c::reference
