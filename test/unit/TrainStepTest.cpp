//===- TrainStepTest.cpp - ls2-train-step's optimizer step, interpreted ---===//
//
// Runs @optimizer_step (built by ls2-autodiff + ls2-train-step) on the
// reference interpreter and checks it against the optimizer's definition
// written out here: fp16 loss scaling skips non-finite steps bit for bit,
// AdamW's decoupled decay, Adam with zero gradients, global-norm clipping,
// and every learning-rate schedule.
//
//===----------------------------------------------------------------------===//
#include "ReferenceTestUtil.h"

#include "ls2c/Training/Workspace.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <cmath>
#include <limits>

namespace {

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

/// Three f16 parameters of sizes 1, 7 (no weight decay) and 1025, as in the
/// bug report on loss scaling, with `optimizer` as the module's settings.
Program buildTrainStep(const std::string &optimizer) {
  Program p = parseProgram(R"(
module attributes {ls2.optimizer = )" + optimizer + R"(} {
  func.func @forward(%a: tensor<1xf16> {ls2.kind = "parameter", ls2.name = "a", ls2.weight_decay = true},
                     %b: tensor<7xf16> {ls2.kind = "parameter", ls2.name = "b", ls2.weight_decay = false},
                     %c: tensor<1025xf16> {ls2.kind = "parameter", ls2.name = "c", ls2.weight_decay = true})
      -> tensor<f32> {
    %sa = ls2.reduce_sum %a [0] : tensor<1xf16> -> tensor<f16>
    %sb = ls2.reduce_sum %b [0] : tensor<7xf16> -> tensor<f16>
    %sc = ls2.reduce_sum %c [0] : tensor<1025xf16> -> tensor<f16>
    %ab = ls2.add %sa, %sb : tensor<f16>
    %abc = ls2.add %ab, %sc : tensor<f16>
    %loss = ls2.cast %abc : tensor<f16> to tensor<f32>
    return %loss : tensor<f32>
  }
})");
  mlir::PassManager pm(p.context.get());
  pm.addPass(ls2c::createAutodiff());
  pm.addPass(ls2c::createTrainStep());
  EXPECT_TRUE(mlir::succeeded(pm.run(*p.module)));
  return p;
}

const std::string kAdamWFp16 =
    "{type = \"adamw\", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, "
    "eps = 1.0e-8 : f64, weight_decay = 0.01 : f64, clip_norm = 0.0 : f64, "
    "schedule = \"constant\", warmup_steps = 0 : i64, total_steps = 0 : i64, "
    "min_lr_ratio = 0.0 : f64, loss_scale_init = 65536.0 : f64, "
    "loss_scale_growth_interval = 3 : i64}";

struct State {
  HostTensor master, grads, m, v, step, scale, good, micro;
  std::vector<HostTensor> args() const {
    return {master, grads, m, v, step, scale, good, micro};
  }
};

State randomState(std::mt19937 &rng, int64_t p) {
  // f32-representable values: the F32 mode rounds its arguments.
  auto ws = [&](double lo, double hi) {
    std::vector<double> values = uniform(rng, static_cast<size_t>(p), lo, hi);
    for (double &x : values)
      x = static_cast<float>(x);
    return HostTensor::fromFloats(ElementType::F32, {p}, values);
  };
  return {ws(-1, 1),
          ws(-100, 100),
          ws(-0.1, 0.1),
          ws(0.001, 0.01),
          HostTensor::scalarInt(ElementType::I64, 5),
          HostTensor::scalarFloat(ElementType::F32, 1024.0),
          HostTensor::scalarInt(ElementType::I64, 1),
          HostTensor::scalarFloat(ElementType::F32, 1.0)};
}

int64_t workspaceSize(const Program &p) {
  auto t = mlir::cast<mlir::RankedTensorType>(
      p.function("optimizer_step").getArgument(0).getType());
  return t.getDimSize(0);
}

TEST(TrainStep, NonFiniteGradientChangesNothingButHalvesTheScale) {
  Program p = buildTrainStep(kAdamWFp16);
  int64_t size = workspaceSize(p);
  EXPECT_EQ(size, 16 + 1040 + 16) << "slots a, c (decayed), then b; 16-aligned";
  std::mt19937 rng = testRng();
  for (double bad : {std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    State s = randomState(rng, size);
    s.grads.floats[16 + 700] = bad; // inside parameter c
    std::vector<HostTensor> out = p.run(Precision::F32, s.args(), "optimizer_step");
    EXPECT_EQ(out[0].floats, s.master.floats) << "parameters unchanged";
    EXPECT_EQ(out[1].floats, s.m.floats) << "exp_avg unchanged";
    EXPECT_EQ(out[2].floats, s.v.floats) << "exp_avg_sq unchanged";
    EXPECT_EQ(out[3].ints[0], 5) << "step count unchanged";
    EXPECT_EQ(out[4].floats[0], 512.0) << "loss scale halved";
    EXPECT_EQ(out[5].ints[0], 0);
    EXPECT_EQ(out[8].ints[0], 0) << "reported as not finite";

    // The next, finite step proceeds normally.
    s.grads.floats[16 + 700] = 3.0;
    s.scale = out[4];
    s.good = out[5];
    out = p.run(Precision::F32, s.args(), "optimizer_step");
    EXPECT_EQ(out[3].ints[0], 6);
    EXPECT_NE(out[0].floats, s.master.floats);
    EXPECT_EQ(out[4].floats[0], 512.0);
    EXPECT_EQ(out[5].ints[0], 1);
    EXPECT_EQ(out[8].ints[0], 1);
  }
}

TEST(TrainStep, LossScaleDoublesAfterTheGrowthInterval) {
  Program p = buildTrainStep(kAdamWFp16);
  std::mt19937 rng = testRng();
  State s = randomState(rng, workspaceSize(p));
  s.good = HostTensor::scalarInt(ElementType::I64, 2); // interval 3
  std::vector<HostTensor> out = p.run(Precision::F32, s.args(), "optimizer_step");
  EXPECT_EQ(out[4].floats[0], 2048.0);
  EXPECT_EQ(out[5].ints[0], 0);
}

/// PyTorch's AdamW step, written out in double.
void adamwReference(double &p, double &m, double &v, double g, int64_t t,
                    double lr, double b1, double b2, double eps, double wd) {
  p -= lr * wd * p;
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g * g;
  double mhat = m / (1 - std::pow(b1, double(t)));
  double vhat = v / (1 - std::pow(b2, double(t)));
  p -= lr * mhat / (std::sqrt(vhat) + eps);
}

TEST(TrainStep, AdamWMatchesItsDefinitionPerRegion) {
  Program p = buildTrainStep(kAdamWFp16);
  std::mt19937 rng = testRng();
  State s = randomState(rng, workspaceSize(p));
  std::vector<HostTensor> out = p.run(Precision::F64, s.args(), "optimizer_step");
  ASSERT_EQ(out[8].ints[0], 1) << out[8].describe() << " " << out[6].floats[0];
  double scale = 1024.0, lr = double(1e-3f); // the f32 constant in the program
  EXPECT_EQ(out[7].floats[0], lr);
  for (int64_t i = 0; i < workspaceSize(p); ++i) {
    double pe = s.master.floats[i], me = s.m.floats[i], ve = s.v.floats[i];
    bool decayed = i < 16 + 1040;
    // The f32 attribute values the program uses.
    adamwReference(pe, me, ve, s.grads.floats[i] / scale, 6, lr,
                   double(0.9f), double(0.999f), double(1e-8f),
                   decayed ? double(0.01f) : 0.0);
    ASSERT_NEAR(out[0].floats[i], pe, 1e-12 * (1 + std::fabs(pe))) << i;
    ASSERT_NEAR(out[1].floats[i], me, 1e-12 * (1 + std::fabs(me))) << i;
    ASSERT_NEAR(out[2].floats[i], ve, 1e-12 * (1 + std::fabs(ve))) << i;
  }
}

TEST(TrainStep, ZeroGradientsDecayByExactlyLrTimesWd) {
  Program p = buildTrainStep(kAdamWFp16);
  std::mt19937 rng = testRng();
  State s = randomState(rng, workspaceSize(p));
  std::fill(s.grads.floats.begin(), s.grads.floats.end(), 0.0);
  std::fill(s.m.floats.begin(), s.m.floats.end(), 0.0);
  std::fill(s.v.floats.begin(), s.v.floats.end(), 0.0);
  s.step = HostTensor::scalarInt(ElementType::I64, 0);
  for (int step = 1; step <= 3; ++step) {
    std::vector<HostTensor> out = p.run(Precision::F64, s.args(), "optimizer_step");
    for (int64_t i = 0; i < workspaceSize(p); ++i) {
      double wd = i < 16 + 1040 ? double(0.01f) : 0.0;
      double expected = s.master.floats[i] - double(1e-3f) * wd * s.master.floats[i];
      ASSERT_TRUE(std::isfinite(out[0].floats[i]));
      ASSERT_NEAR(out[0].floats[i], expected, 1e-15) << "step " << step << " " << i;
    }
    s.master = out[0];
    s.m = out[1];
    s.v = out[2];
    s.step = out[3];
  }
}

TEST(TrainStep, ClipsToTheGlobalNorm) {
  Program p = buildTrainStep(
      "{type = \"adam\", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, "
      "eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, clip_norm = 1.0 : f64, "
      "schedule = \"constant\", warmup_steps = 0 : i64, total_steps = 0 : i64, "
      "min_lr_ratio = 0.0 : f64}");
  std::mt19937 rng = testRng();
  State s = randomState(rng, workspaceSize(p));
  s.scale = HostTensor::scalarFloat(ElementType::F32, 1.0);
  s.micro = HostTensor::scalarFloat(ElementType::F32, 2.0);
  std::fill(s.m.floats.begin(), s.m.floats.end(), 0.0);
  std::vector<HostTensor> out = p.run(Precision::F64, s.args(), "optimizer_step");
  double sumsq = 0;
  for (double g : s.grads.floats)
    sumsq += g * g;
  double norm = std::sqrt(sumsq) / 2.0; // averaged over 2 micro-batches
  EXPECT_NEAR(out[6].floats[0], norm, 1e-9 * norm);
  double coef = std::min(1.0, 1.0 / (norm + 1e-6));
  for (int64_t i = 0; i < workspaceSize(p); ++i)
    ASSERT_NEAR(out[1].floats[i], (1 - double(0.9f)) * s.grads.floats[i] / 2.0 * coef,
                1e-12)
        << i;
}

TEST(TrainStep, LearningRateSchedules) {
  struct Case {
    const char *schedule;
    int64_t warmup, total;
    double minRatio;
  };
  // warmup == total: a decay of no length, at its end right after warmup.
  for (Case c : {Case{"constant", 4, 0, 0.0}, Case{"linear", 4, 20, 0.1},
                 Case{"cosine", 4, 20, 0.1}, Case{"inverse_sqrt", 4, 0, 0.0},
                 Case{"linear", 4, 4, 0.5}, Case{"cosine", 4, 4, 0.25}}) {
    std::string settings =
        std::string("{type = \"adamw\", lr = 2.0e-3 : f64, beta1 = 0.9 : f64, "
                    "beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, "
                    "clip_norm = 0.0 : f64, schedule = \"") +
        c.schedule + "\", warmup_steps = " + std::to_string(c.warmup) +
        " : i64, total_steps = " + std::to_string(c.total) +
        " : i64, min_lr_ratio = " + std::to_string(c.minRatio) + " : f64}";
    Program p = buildTrainStep(settings);
    std::mt19937 rng = testRng();
    State s = randomState(rng, workspaceSize(p));
    for (int64_t done = 0; done < 25; ++done) {
      s.step = HostTensor::scalarInt(ElementType::I64, done);
      double t = double(done), lr = 2e-3, expected; // updates made before this one
      double progress = c.total <= c.warmup
                            ? 1.0
                            : std::clamp((t - c.warmup) / double(c.total - c.warmup), 0.0, 1.0);
      if (t < c.warmup)
        expected = lr * t / c.warmup;
      else if (std::string(c.schedule) == "constant")
        expected = lr;
      else if (std::string(c.schedule) == "linear")
        expected = lr * (c.minRatio + (1 - c.minRatio) * (1 - progress));
      else if (std::string(c.schedule) == "cosine")
        expected = lr * (c.minRatio + (1 - c.minRatio) * 0.5 * (1 + std::cos(M_PI * progress)));
      else
        expected = lr * std::sqrt(c.warmup / t);
      double got = p.run(Precision::F64, s.args(), "optimizer_step")[7].floats[0];
      EXPECT_NEAR(got, expected, 1e-6 * expected) << c.schedule << " after " << t << " updates";
    }
  }
}

} // namespace
