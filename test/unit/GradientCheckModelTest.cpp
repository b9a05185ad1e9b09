//===- GradientCheckModelTest.cpp - whole-model finite-difference checks --===//
//
// For each tiny preset (examples/tiny-{bert,gpt,transformer,vit}.json) with
// its dropout rates set to 0: the frontend's @forward, ls2-autodiff's
// @forward_backward evaluated in F64 mode on small random weights (std 0.1,
// layer-norm scales 1 + N(0, 0.1^2)) and a small random batch, and each
// parameter's gradient compared with central differences of the loss on a
// random subset of its elements (all of them for small parameters), step
// h = 1e-4 relative to the value's scale (see kRelativeStep): relative L2
// error <= 1e-6 per parameter. A parameter the loss provably does not
// depend on (attention's key bias) must get a gradient that is zero to the
// differences' resolution.
//
// ReLU (select(x > 0, x, 0)) has a kink: a finite-difference step that
// moves a pre-activation across 0 measures a mix of the two slopes. The
// loss is therefore evaluated through a probe function that also returns
// every ls2.compare result; when the two sides of a step disagree on any
// of them, the step is shrunk (x 1/8) until they agree, so every difference
// is taken on one smooth piece.
//
//===----------------------------------------------------------------------===//
#include "ModelInputs.h"
#include "ReferenceTestUtil.h"

#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;


namespace {

constexpr double kGradientTolerance = 1e-6;
// The loss of a whole model carries rounding noise of a few ulps that does
// not vary smoothly with a weight; at h = 1e-6 relative it dominates the
// difference quotient of the small gradients (attention q/k projections:
// errors ~2e-6, falling as 1/h), at 1e-4 the errors are ~3e-8 and at 1e-3
// truncation starts to show. LS2C_GRADCHECK_STEP overrides it.
constexpr double kRelativeStep = 1e-4;
// A difference quotient below this many ulps of the loss per step cannot
// tell a gradient from zero.
constexpr double kNoiseUlps = 1000;
constexpr size_t kSubset = 20;

struct Model {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp forward, forwardBackward, probe;
};

/// @probe: @forward returning the loss and then every ls2.compare result.
mlir::func::FuncOp addProbe(mlir::ModuleOp module, mlir::func::FuncOp forward) {
  auto probe = mlir::cast<mlir::func::FuncOp>(forward->clone());
  probe.setName("probe");
  module.push_back(probe);
  mlir::Operation *ret = probe.getBody().front().getTerminator();
  llvm::SmallVector<mlir::Value> results(ret->getOperands());
  probe.walk([&](ls2c::ls2::CompareOp op) { results.push_back(op.getResult()); });
  mlir::OpBuilder b(ret);
  b.create<mlir::func::ReturnOp>(ret->getLoc(), results);
  ret->erase();
  llvm::SmallVector<mlir::Type> types;
  for (mlir::Value v : results)
    types.push_back(v.getType());
  probe.setFunctionType(mlir::FunctionType::get(
      module.getContext(), probe.getArgumentTypes(), types));
  probe.removeResAttrsAttr();
  return probe;
}

std::unique_ptr<Model> buildModel(const std::string &preset) {
  auto model = std::make_unique<Model>();
  ls2c::ModelDescription desc = ls2c::loadModelDescription(
      LS2C_SOURCE_DIR "/examples/" + preset + ".json");
  desc.hidden_dropout = 0;
  desc.attention_dropout = 0;
  desc.activation_dropout = 0;
  ls2c::loadFrontendDialects(model->context);
  model->module = ls2c::buildForwardModule(model->context, desc);
  if (!model->module)
    return nullptr;
  mlir::PassManager pm(&model->context);
  pm.addPass(ls2c::createAutodiff());
  if (mlir::failed(pm.run(model->module.get())))
    return nullptr;
  mlir::ModuleOp module = model->module.get();
  model->forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  model->forwardBackward =
      module.lookupSymbol<mlir::func::FuncOp>("forward_backward");
  model->probe = addProbe(module, model->forward);
  return model;
}

void checkModel(const std::string &preset) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Model> model = buildModel(preset);
  ASSERT_TRUE(model && model->forward && model->forwardBackward);
  ls2c::ModelDescription desc = ls2c::loadModelDescription(
      LS2C_SOURCE_DIR "/examples/" + preset + ".json");
  std::mt19937 rng = testRng();
  std::vector<HostTensor> args = modelArguments(desc, model->forward, rng);
  std::vector<HostTensor> fbArgs = args;
  if (model->forwardBackward.getNumArguments() == args.size() + 1) {
    ASSERT_EQ(argName(model->forwardBackward, args.size()), "loss_grad");
    fbArgs.push_back(HostTensor::scalarFloat(ElementType::F32, 1.0));
  }
  Interpreter f64(Precision::F64);
  std::vector<HostTensor> results = f64.run(model->forwardBackward, fbArgs);
  double loss = results[0].floats[0];
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_EQ(f64.run(model->forward, args)[0].floats[0], loss);

  const char *stepOverride = std::getenv("LS2C_GRADCHECK_STEP");
  const double step = stepOverride ? std::atof(stepOverride) : kRelativeStep;
  size_t evaluations = 0, shrunk = 0, checked = 0, parameters = 0;
  std::vector<std::string> zeroGradients;
  double worst = 0;
  std::string worstName;
  auto probe = [&](std::vector<HostTensor> &values) {
    ++evaluations;
    std::vector<HostTensor> r = f64.run(model->probe, values);
    std::vector<int64_t> bits;
    for (size_t i = 1; i < r.size(); ++i)
      bits.insert(bits.end(), r[i].ints.begin(), r[i].ints.end());
    return std::make_pair(r[0].floats[0], bits);
  };

  for (unsigned a = 0; a < args.size(); ++a) {
    if (argKind(model->forward, a) != "parameter")
      continue;
    std::string name = argName(model->forward, a);
    SCOPED_TRACE(preset + ": gradient of " + name);
    ASSERT_LT(1 + parameters, results.size());
    const std::vector<double> &grad = results[1 + parameters++].floats;
    std::vector<double> &x = args[a].floats;
    ASSERT_EQ(grad.size(), x.size());
    // All elements of small parameters; else up to 16 with a non-zero
    // gradient and 4 with a zero one (embedding rows no id selects).
    std::vector<size_t> subset;
    if (x.size() <= kSubset) {
      subset.resize(x.size());
      std::iota(subset.begin(), subset.end(), 0);
    } else {
      std::vector<size_t> nonzero, zero;
      for (size_t e = 0; e < x.size(); ++e)
        (grad[e] != 0.0 ? nonzero : zero).push_back(e);
      std::shuffle(nonzero.begin(), nonzero.end(), rng);
      std::shuffle(zero.begin(), zero.end(), rng);
      size_t takeZero = std::min<size_t>(zero.size(), 4);
      size_t takeNonzero = std::min(nonzero.size(), kSubset - takeZero);
      subset.assign(nonzero.begin(), nonzero.begin() + takeNonzero);
      subset.insert(subset.end(), zero.begin(), zero.begin() + takeZero);
    }
    double rms = 0;
    for (double v : x)
      rms += v * v;
    rms = std::sqrt(rms / static_cast<double>(x.size()));
    std::vector<double> analytic, fd;
    double noise2 = 0; // the squared norm of the quotients' noise floor
    for (size_t e : subset) {
      double x0 = x[e];
      double h = step * std::max(std::fabs(x0), rms);
      double estimate = 0;
      for (int attempt = 0;; ++attempt) {
        double up = x0 + h, down = x0 - h;
        x[e] = up;
        auto [fUp, bitsUp] = probe(args);
        x[e] = down;
        auto [fDown, bitsDown] = probe(args);
        x[e] = x0;
        estimate = (fUp - fDown) / (up - down);
        if (bitsUp == bitsDown)
          break;
        // A compare (ReLU) flips inside the step: shrink it.
        ++shrunk;
        ASSERT_LT(attempt, 6) << "element " << e
                              << " sits on a kink at every step size";
        h /= 8;
      }
      analytic.push_back(grad[e]);
      fd.push_back(estimate);
      double floor = kNoiseUlps * std::numeric_limits<double>::epsilon() *
                     std::fabs(loss) / (2 * h);
      noise2 += floor * floor;
    }
    checked += subset.size();
    double error = relativeL2(analytic, fd);
    double fdNorm = 0, analyticNorm = 0;
    for (size_t i = 0; i < fd.size(); ++i) {
      fdNorm += fd[i] * fd[i];
      analyticNorm += analytic[i] * analytic[i];
    }
    fdNorm = std::sqrt(fdNorm);
    analyticNorm = std::sqrt(analyticNorm);
    double noise = std::sqrt(noise2);
    if (fdNorm <= noise) {
      // The loss does not move with this parameter (the key bias of
      // attention: it shifts every score of a row alike, which softmax
      // ignores): the gradient must vanish as well, to the same resolution.
      zeroGradients.push_back(name);
      EXPECT_LE(analyticNorm, noise)
          << "finite differences see no dependence (norm " << fdNorm
          << "), autodiff gives norm " << analyticNorm;
      error = 0;
    } else {
      EXPECT_LE(error, kGradientTolerance) << subset.size() << " elements";
    }
    if (std::getenv("LS2C_GRADCHECK_DUMP"))
      for (size_t i = 0; i < analytic.size(); ++i)
        std::printf("    %zu %.17g %.17g\n", subset[i], analytic[i], fd[i]);
    if (std::getenv("LS2C_GRADCHECK_VERBOSE"))
      std::printf("  %-14s %-60s %6zu elements, %2zu checked, relative L2 "
                  "error %.2e\n",
                  preset.c_str(), name.c_str(), x.size(), subset.size(), error);
    if (error > worst) {
      worst = error;
      worstName = name;
    }
  }
  EXPECT_EQ(1 + parameters, results.size());
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  std::string zeros;
  for (const std::string &z : zeroGradients)
    zeros += (zeros.empty() ? "" : ", ") + z;
  std::printf("[ %s ] %zu parameters, %zu elements checked, %zu forward runs "
              "(%zu shrunk steps), loss %.6f, worst relative L2 error %.2e "
              "(%s), zero gradients: %s; %.1f s\n",
              preset.c_str(), parameters, checked, evaluations, shrunk, loss,
              worst, worstName.c_str(), zeros.empty() ? "none" : zeros.c_str(),
              seconds);
}

} // namespace

TEST(GradientCheckModel, TinyBert) { checkModel("tiny-bert"); }
TEST(GradientCheckModel, TinyGpt) { checkModel("tiny-gpt"); }
TEST(GradientCheckModel, TinyTransformer) { checkModel("tiny-transformer"); }
TEST(GradientCheckModel, TinyVit) { checkModel("tiny-vit"); }
TEST(GradientCheckModel, LlamaTiny) { checkModel("llama-tiny"); }
