//===- ReferenceTrainingTest.cpp - adamw and the whole tiny-gpt forward ---===//
#include "ReferenceTestUtil.h"

#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ModelDescription.h"

#include <limits>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

const char *kAdamWProgram = R"(
func.func @f(%p: tensor<10xf32>, %g: tensor<10xf32>, %m: tensor<10xf32>, %v: tensor<10xf32>, %step: tensor<i64>, %lr: tensor<f32>, %gs: tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) {
  %np, %nm, %nv = ls2.adamw %p, %g, %m, %v, %step, %lr, %gs {beta1 = 9.000000e-01 : f32, beta2 = 9.990000e-01 : f32, epsilon = 1.000000e-08 : f32, weight_decay = 1.000000e-02 : f32} : tensor<10xf32>, tensor<10xf32>
  %lp, %lm, %lv = ls2.adamw %p, %g, %m, %v, %step, %lr, %gs {beta1 = 9.000000e-01 : f32, beta2 = 9.990000e-01 : f32, epsilon = 1.000000e-08 : f32, weight_decay = 1.000000e-02 : f32, mode = #ls2<weight_decay_mode l2>} : tensor<10xf32>, tensor<10xf32>
  return %np, %nm, %nv, %lp, %lm, %lv : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
})";

struct AdamState {
  std::vector<double> p, m, v;
};

/// torch.optim.AdamW / Adam's single-tensor step, transcribed.
void pytorchStep(AdamState &s, const std::vector<double> &grad, int step,
                 double lr, double gradScale, bool decoupled) {
  const double beta1 = static_cast<double>(0.9f);
  const double beta2 = static_cast<double>(0.999f);
  const double eps = static_cast<double>(1e-8f);
  const double wd = static_cast<double>(0.01f);
  for (size_t i = 0; i < s.p.size(); ++i) {
    double g = grad[i] * gradScale;
    if (decoupled)
      s.p[i] *= 1 - lr * wd; // param.mul_(1 - lr * weight_decay)
    else
      g += wd * s.p[i]; // grad = grad.add(param, alpha=weight_decay)
    s.m[i] += (g - s.m[i]) * (1 - beta1); // exp_avg.lerp_(grad, 1 - beta1)
    s.v[i] = s.v[i] * beta2 + (1 - beta2) * g * g;
    double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
    double denom = std::sqrt(s.v[i]) / std::sqrt(bc2) + eps;
    s.p[i] += -(lr / bc1) * s.m[i] / denom;
  }
}

HostTensor f32(const std::vector<double> &v) {
  return HostTensor::fromFloats(ElementType::F32,
                                {static_cast<int64_t>(v.size())}, v);
}

} // namespace

TEST(ReferenceAdamW, ThreeStepsMatchThePyTorchFormulas) {
  Program p = parseProgram(kAdamWProgram);
  std::mt19937 rng = testRng();
  const double lr = static_cast<double>(1e-3f), gradScale = 0.5;
  AdamState init{randomF32(rng, {10}).floats, std::vector<double>(10, 0.0),
                 std::vector<double>(10, 0.0)};
  for (bool decoupled : {true, false}) {
    SCOPED_TRACE(decoupled ? "decoupled" : "l2");
    AdamState expected = init, actual = init, actual32 = init;
    for (int step = 1; step <= 3; ++step) {
      std::vector<double> grad = randomF32(rng, {10}, -2, 2).floats;
      if (step == 2)
        grad[3] = 0.0;
      pytorchStep(expected, grad, step, lr, gradScale, decoupled);
      for (auto [state, precision] :
           {std::pair<AdamState *, Precision>{&actual, Precision::F64},
            {&actual32, Precision::F32}}) {
        auto r = p.run(precision,
                       {f32(state->p), f32(grad), f32(state->m), f32(state->v),
                        HostTensor::scalarInt(ElementType::I64, step),
                        HostTensor::scalarFloat(ElementType::F32, lr),
                        HostTensor::scalarFloat(ElementType::F32, gradScale)});
        size_t base = decoupled ? 0 : 3;
        *state = {r[base].floats, r[base + 1].floats, r[base + 2].floats};
      }
      EXPECT_LE(relativeL2(actual.p, expected.p), kF64Tolerance);
      EXPECT_LE(relativeL2(actual.m, expected.m), kF64Tolerance);
      EXPECT_LE(relativeL2(actual.v, expected.v), kF64Tolerance);
      EXPECT_LE(relativeL2(actual32.p, expected.p), kF32Tolerance);
      EXPECT_LE(relativeL2(actual32.m, expected.m), kF32Tolerance);
      EXPECT_LE(relativeL2(actual32.v, expected.v), kF32Tolerance);
    }
  }
}

TEST(ReferenceAdamW, ZeroGradientsOnlyDecay) {
  Program p = parseProgram(kAdamWProgram);
  std::mt19937 rng = testRng();
  const double lr = static_cast<double>(1e-2f), wd = static_cast<double>(0.01f);
  std::vector<double> param = randomF32(rng, {10}, -3, 3).floats;
  std::vector<double> zeros(10, 0.0), m = zeros, v = zeros;
  for (int step = 1; step <= 3; ++step) {
    auto r = p.run(Precision::F64,
                   {f32(param), f32(zeros), f32(m), f32(v),
                    HostTensor::scalarInt(ElementType::I64, step),
                    HostTensor::scalarFloat(ElementType::F32, lr),
                    HostTensor::scalarFloat(ElementType::F32, 1.0)});
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(r[0].floats[i], param[i] - lr * wd * param[i]) << i;
      EXPECT_EQ(r[1].floats[i], 0.0);
      EXPECT_EQ(r[2].floats[i], 0.0);
      // l2 mode instead feeds g = wd p to Adam, whose first step is
      // lr * g / (|g| + eps).
      if (step == 1) {
        double g = wd * param[i], eps = static_cast<double>(1e-8f);
        EXPECT_NEAR(r[3].floats[i], param[i] - lr * g / (std::fabs(g) + eps),
                    1e-15)
            << i;
      }
    }
    param = r[0].floats;
  }
}

TEST(ReferenceAdamW, StepZeroIsAnError) {
  Program p = parseProgram(kAdamWProgram);
  std::vector<double> zeros(10, 0.0);
  try {
    p.run(Precision::F64, {f32(zeros), f32(zeros), f32(zeros), f32(zeros),
                           HostTensor::scalarInt(ElementType::I64, 0),
                           HostTensor::scalarFloat(ElementType::F32, 1e-3),
                           HostTensor::scalarFloat(ElementType::F32, 1.0)});
    FAIL() << "step 0 did not throw";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'ls2.adamw' op step is 0; steps count from 1"),
              std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// The tiny-gpt forward pass
//===----------------------------------------------------------------------===//

namespace {

struct TinyGpt {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp forward;
};

std::unique_ptr<TinyGpt> buildTinyGpt() {
  auto gpt = std::make_unique<TinyGpt>();
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/tiny-gpt.json");
  ls2c::loadFrontendDialects(gpt->context);
  gpt->module = ls2c::buildForwardModule(gpt->context, desc);
  if (gpt->module)
    gpt->forward = gpt->module->lookupSymbol<mlir::func::FuncOp>("forward");
  return gpt;
}

/// Weights N(0, 0.02^2), layer-norm scales 1; sequences of lengths
/// `lengths` with next-token labels (-100 at each sequence's end).
std::vector<HostTensor> tinyGptArguments(mlir::func::FuncOp forward,
                                         std::mt19937 &rng,
                                         const std::vector<int64_t> &lengths,
                                         int64_t offset) {
  int64_t tokens = 0;
  for (int64_t l : lengths)
    tokens += l;
  std::uniform_int_distribution<int64_t> vocab(0, 64);
  std::vector<int64_t> ids(tokens), positions, cu = {0}, labels;
  for (int64_t &id : ids)
    id = vocab(rng);
  for (int64_t l : lengths) {
    for (int64_t i = 0; i < l; ++i) {
      positions.push_back(i);
      int64_t t = cu.back() + i;
      labels.push_back(i + 1 < l ? ids[t + 1] : -100);
    }
    cu.push_back(cu.back() + l);
  }
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name =
        forward.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name").str();
    auto type = mlir::cast<mlir::RankedTensorType>(forward.getArgument(i).getType());
    if (name == "input_ids")
      args.push_back(HostTensor::fromInts(ElementType::I32, {tokens}, ids));
    else if (name == "position_ids")
      args.push_back(HostTensor::fromInts(ElementType::I32, {tokens}, positions));
    else if (name == "cu_seqlens")
      args.push_back(HostTensor::fromInts(
          ElementType::I32, {static_cast<int64_t>(cu.size())}, cu));
    else if (name == "labels")
      args.push_back(HostTensor::fromInts(ElementType::I32, {tokens}, labels));
    else if (name == "dropout_seed")
      args.push_back(HostTensor::scalarInt(ElementType::I64, 20240601));
    else if (name == "dropout_offset")
      args.push_back(HostTensor::scalarInt(ElementType::I64, offset));
    else {
      std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
      bool lnScale = name.find(".ln_") != std::string::npos &&
                     name.size() > 7 &&
                     name.compare(name.size() - 7, 7, ".weight") == 0;
      std::vector<double> w = lnScale ? std::vector<double>(count(shape), 1.0)
                                      : normal(rng, count(shape), 0.02);
      for (double &x : w)
        x = static_cast<float>(x);
      args.push_back(HostTensor::fromFloats(ElementType::F32, shape, w));
    }
  }
  return args;
}

} // namespace

TEST(ReferenceTinyGpt, ForwardGivesAFiniteLossNearLogVocab) {
  std::unique_ptr<TinyGpt> gpt = buildTinyGpt();
  ASSERT_TRUE(gpt->forward);
  std::mt19937 rng = testRng();
  std::vector<HostTensor> args =
      tinyGptArguments(gpt->forward, rng, {5, 12, 1, 14}, 0);
  std::vector<HostTensor> r64 = Interpreter(Precision::F64).run(gpt->forward, args);
  ASSERT_EQ(r64.size(), 1u);
  ASSERT_TRUE(r64[0].shape.empty());
  double loss = r64[0].floats[0];
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, std::log(65.0), 0.1);
  std::vector<HostTensor> r32 = Interpreter(Precision::F32).run(gpt->forward, args);
  // A whole program may take 10x the per-kernel f32 tolerance.
  EXPECT_NEAR(r32[0].floats[0], loss, 10 * kF32Tolerance * loss);
  // Deterministic: same inputs, same bits.
  EXPECT_EQ(Interpreter(Precision::F32).run(gpt->forward, args)[0].floats,
            r32[0].floats);
  // The next step's dropout masks (another offset) change the loss.
  std::mt19937 same = testRng();
  std::vector<HostTensor> next =
      tinyGptArguments(gpt->forward, same, {5, 12, 1, 14}, 1);
  double nextLoss = Interpreter(Precision::F64).run(gpt->forward, next)[0].floats[0];
  EXPECT_NE(nextLoss, loss);
  EXPECT_NEAR(nextLoss, loss, 0.1);
}

TEST(ReferenceTinyGpt, BadInputsNameTheOp) {
  std::unique_ptr<TinyGpt> gpt = buildTinyGpt();
  ASSERT_TRUE(gpt->forward);
  std::mt19937 rng = testRng();
  std::vector<HostTensor> args =
      tinyGptArguments(gpt->forward, rng, {4, 6}, 0);
  Interpreter interpreter(Precision::F32);
  auto errorOf = [&](const std::vector<HostTensor> &a) -> std::string {
    try {
      interpreter.run(gpt->forward, a);
    } catch (const InterpreterError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(errorOf(args), "");
  std::vector<HostTensor> fewer(args.begin(), args.end() - 1);
  EXPECT_NE(errorOf(fewer).find("'func.func' op @forward takes 34 arguments, "
                                "got 33"),
            std::string::npos)
      << errorOf(fewer);
  auto named = [&](const std::string &name) -> HostTensor & {
    for (unsigned i = 0; i < gpt->forward.getNumArguments(); ++i)
      if (gpt->forward.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name")
              .str() == name)
        return args[i];
    throw std::runtime_error("no argument " + name);
  };
  std::vector<HostTensor> saved = args;
  named("input_ids").ints[3] = 65;
  std::string e = errorOf(args);
  EXPECT_EQ(e.rfind("transformer: 'ls2.gather' op id 65", 0), 0u) << e;
  EXPECT_NE(e.find("[0, 65)"), std::string::npos) << e;
  args = saved;
  named("cu_seqlens").ints = {0, 4, 9};
  e = errorOf(args);
  EXPECT_NE(e.find("'ls2.attention' op cu_seqlens_q ends at 9 but there are "
                   "10 tokens"),
            std::string::npos)
      << e;
  args = saved;
  named("labels").ints[2] = 70;
  e = errorOf(args);
  EXPECT_NE(e.find("'ls2.cross_entropy' op target 70 of row 2"),
            std::string::npos)
      << e;
  args = saved;
  named("transformer.wte.weight") = HostTensor::zeros(ElementType::F32, {64, 64});
  e = errorOf(args);
  EXPECT_NE(e.find("argument 0 of @forward is f32[64, 64] but the function "
                   "takes tensor<65x64xf32>"),
            std::string::npos)
      << e;
}
