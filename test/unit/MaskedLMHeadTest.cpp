//===- MaskedLMHeadTest.cpp - the gathered masked-LM head changes nothing -===//
//
// With max_predictions P, BERT's MLM head (transform, LayerNorm, vocabulary
// projection, cross-entropy) runs on the labelled rows only, gathered into
// [P, H] (lib/Frontend/BuildEncoder.cpp). It must compute the loss and every
// parameter gradient of the head over every token. Both @forward_backward
// run in float64 on the same random weights and batches, dropout included
// (the head adds no dropout site, so the masks are the same): relative L2
// error <= 1e-12 per result (a gradient the loss does not depend on, the
// key biases', against 1e-4 of all gradients' norm). The batches are fresh
// random ones: fewer labels than P (slots past the count, filled with zero
// rows and the ignore index), exactly P, none at all (and no token at all),
// and every token labelled with T = P.
//
//===----------------------------------------------------------------------===//
#include "ModelInputs.h"
#include "ReferenceTestUtil.h"

#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

const char *const kPreset = LS2C_SOURCE_DIR "/examples/tiny-bert-max-predictions.json";

struct TrainStep {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp forwardBackward;
};

std::unique_ptr<TrainStep> build(const ls2c::ModelDescription &desc) {
  auto s = std::make_unique<TrainStep>();
  ls2c::loadFrontendDialects(s->context);
  s->module = ls2c::buildForwardModule(s->context, desc);
  if (!s->module)
    return nullptr;
  mlir::PassManager pm(&s->context);
  pm.addPass(ls2c::createAutodiff());
  if (mlir::failed(pm.run(*s->module)))
    return nullptr;
  s->forwardBackward = s->module->lookupSymbol<mlir::func::FuncOp>("forward_backward");
  return s;
}

bool hasNonzero(mlir::ModuleOp m) {
  bool found = false;
  m.walk([&](ls2c::ls2::NonzeroOp) { found = true; });
  return found;
}

/// A random batch of sequences of `lengths` with `labelled` labels at
/// random distinct positions; everything else is -100.
std::map<std::string, HostTensor> randomBatch(const ls2c::ModelDescription &d,
                                              const std::vector<int64_t> &lengths,
                                              int64_t labelled, std::mt19937 &rng) {
  std::vector<int64_t> ids, types, positions, cu = {0}, labels;
  std::uniform_int_distribution<int64_t> word(0, d.vocab - 1);
  for (int64_t l : lengths) {
    for (int64_t i = 0; i < l; ++i) {
      ids.push_back(word(rng));
      types.push_back(i >= l / 2);
      positions.push_back(i);
    }
    cu.push_back(cu.back() + l);
  }
  const auto tokens = static_cast<int64_t>(ids.size());
  std::vector<int64_t> order(static_cast<size_t>(tokens));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  labels.assign(static_cast<size_t>(tokens), -100);
  for (int64_t k = 0; k < labelled; ++k)
    labels[static_cast<size_t>(order[static_cast<size_t>(k)])] = word(rng);
  auto i32 = [](const std::vector<int64_t> &v) {
    return HostTensor::fromInts(ElementType::I32, {static_cast<int64_t>(v.size())}, v);
  };
  return {{"input_ids", i32(ids)},     {"token_type_ids", i32(types)},
          {"position_ids", i32(positions)}, {"cu_seqlens", i32(cu)},
          {"labels", i32(labels)}};
}

class GatheredHead : public ::testing::Test {
protected:
  void SetUp() override {
    gathered = ls2c::loadModelDescription(kPreset);
    ASSERT_GT(gathered.max_predictions, 0);
    full = gathered;
    full.max_predictions = 0;
    gatheredStep = build(gathered);
    fullStep = build(full);
    ASSERT_TRUE(gatheredStep && fullStep);
    ASSERT_TRUE(hasNonzero(*gatheredStep->module));
    ASSERT_FALSE(hasNonzero(*fullStep->module));
    // Weights, dropout seed and offset from the preset's usual test inputs.
    auto forward = fullStep->module->lookupSymbol<mlir::func::FuncOp>("forward");
    std::vector<HostTensor> args = modelArguments(full, forward, rng);
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      named[argName(forward, i)] = args[i];
    named["loss_grad"] = HostTensor::scalarFloat(ElementType::F32, 1.0);
  }

  /// Runs both programs on `batch` and compares every result.
  void expectSame(const std::map<std::string, HostTensor> &batch, const std::string &label) {
    SCOPED_TRACE(label);
    std::map<std::string, HostTensor> values = named;
    for (const auto &[name, t] : batch)
      values[name] = t;
    auto argsOf = [&](mlir::func::FuncOp f) {
      std::vector<HostTensor> args;
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        args.push_back(values.at(argName(f, i)));
      return args;
    };
    Interpreter f64(Precision::F64);
    std::vector<HostTensor> want = f64.run(fullStep->forwardBackward, argsOf(fullStep->forwardBackward));
    std::vector<HostTensor> got =
        f64.run(gatheredStep->forwardBackward, argsOf(gatheredStep->forwardBackward));
    ASSERT_EQ(want.size(), got.size());
    int64_t labelled = 0;
    for (int64_t l : batch.at("labels").ints)
      labelled += l != -100;
    if (labelled > 0) {
      EXPECT_GT(want[0].floats[0], 0.0);
    } else {
      EXPECT_EQ(want[0].floats[0], 0.0);
    }
    // Attention's key biases get rounding noise (the loss does not depend
    // on them): they are measured against 1e-4 of all gradients' norm.
    double all = 0;
    for (size_t i = 1; i < want.size(); ++i)
      for (double x : want[i].floats)
        all += x * x;
    const double floor = 1e-4 * std::sqrt(all);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(want[i].shape, got[i].shape) << "result " << i;
      double diff = 0, norm = 0;
      for (size_t e = 0; e < want[i].floats.size(); ++e) {
        diff += (got[i].floats[e] - want[i].floats[e]) * (got[i].floats[e] - want[i].floats[e]);
        norm += want[i].floats[e] * want[i].floats[e];
      }
      double scale = std::max(std::sqrt(norm), floor);
      double error = scale > 0 ? std::sqrt(diff) / scale : std::sqrt(diff);
      auto name = fullStep->forwardBackward.getResultAttrOfType<mlir::StringAttr>(
          static_cast<unsigned>(i), "ls2.name");
      EXPECT_LE(error, kF64Tolerance)
          << "result " << i << " (" << (name ? name.str() : std::string("loss")) << ")";
    }
    // The head's weights get a gradient whenever a token is labelled.
    double norm = 0;
    for (const HostTensor &g : want)
      for (double x : g.floats)
        norm += x * x;
    EXPECT_EQ(norm > 0, labelled > 0);
  }

  ls2c::ModelDescription gathered, full;
  std::unique_ptr<TrainStep> gatheredStep, fullStep;
  std::map<std::string, HostTensor> named;
  std::mt19937 rng = testRng();
};

TEST_F(GatheredHead, FewerLabelsThanPredictions) {
  // 11 of 45 tokens: the 13 slots past them read row 0 and carry no loss.
  expectSame(randomBatch(gathered, {9, 17, 6, 13}, 11, rng), "11 labels");
  expectSame(randomBatch(gathered, {3}, 1, rng), "1 label, 3 tokens");
}

TEST_F(GatheredHead, ExactlyMaxPredictionsLabels) {
  expectSame(randomBatch(gathered, {32, 20, 1}, gathered.max_predictions, rng),
             "max_predictions labels");
}

TEST_F(GatheredHead, NoLabels) {
  expectSame(randomBatch(gathered, {7, 5}, 0, rng), "no label");
  // A batch of no tokens: the gathers read no row, every slot is filled.
  expectSame(randomBatch(gathered, {}, 0, rng), "no token");
}

TEST_F(GatheredHead, EveryTokenLabelled) {
  // T = P: every slot a labelled row.
  expectSame(randomBatch(gathered, {10, 14}, gathered.max_predictions, rng),
             "every token labelled");
}

} // namespace
