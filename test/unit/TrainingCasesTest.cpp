//===- TrainingCasesTest.cpp - whole-model training cases on the CPU ------===//
//
// Cases from public bug reports, run through the compiled program (frontend,
// ls2-autodiff, ls2-train-step) on the reference interpreter:
//   - a 3-layer encoder whose layers share one config: parameter and gradient
//     regions pairwise disjoint, and one step changes every layer;
//   - batch 0 and sequence length 0: forward and backward run, outputs are
//     empty and gradients zero.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Training/Workspace.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace {

using ls2c::reference::ElementType;
using ls2c::reference::HostTensor;
using ls2c::reference::Interpreter;
using ls2c::reference::Precision;

struct Compiled {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp fn(const char *name) {
    return module->lookupSymbol<mlir::func::FuncOp>(name);
  }
};

void compile(Compiled &c, const ls2c::ModelDescription &d) {
  c.module = ls2c::buildForwardModule(c.context, d);
  ASSERT_TRUE(c.module);
  mlir::PassManager pm(&c.context);
  pm.addPass(ls2c::createAutodiff());
  pm.addPass(ls2c::createTrainStep());
  ASSERT_TRUE(mlir::succeeded(pm.run(*c.module)));
}

HostTensor ids(std::vector<int64_t> values) {
  auto n = static_cast<int64_t>(values.size());
  return HostTensor::fromInts(ElementType::I32, {n}, std::move(values));
}

/// Arguments of `f` from `named` (by ls2.name) after its first `skip`.
std::vector<HostTensor> args(mlir::func::FuncOp f, std::vector<HostTensor> head,
                             const std::map<std::string, HostTensor> &named) {
  for (unsigned i = head.size(); i < f.getNumArguments(); ++i) {
    auto name = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name").str();
    auto it = named.find(name);
    EXPECT_NE(it, named.end()) << "no value for " << name;
    head.push_back(it == named.end() ? HostTensor() : it->second);
  }
  return head;
}

TEST(TrainingCases, ThreeEncoderLayersHaveDisjointRegionsAndAllLearn) {
  ls2c::ModelDescription d = ls2c::loadModelDescription(
      LS2C_SOURCE_DIR "/examples/tiny-bert.json");
  d.encoder_layers = 3;
  d.hidden_dropout = d.attention_dropout = d.activation_dropout = 0.0;
  // No warmup: the first update of a warmup uses learning rate 0.
  d.optimizer.schedule.warmup_steps = 0;
  Compiled c;
  compile(c, d);
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(d);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
  for (size_t i = 0; i < ws.slots.size(); ++i)
    for (size_t j = i + 1; j < ws.slots.size(); ++j) {
      const auto &a = ws.slots[i], &b = ws.slots[j];
      ASSERT_TRUE(a.offset + a.numel <= b.offset || b.offset + b.numel <= a.offset)
          << a.spec->name << " overlaps " << b.spec->name;
    }

  std::vector<float> init = ls2c::initializeWorkspace(ws, 7);
  auto flat = [&](std::vector<double> v) {
    return HostTensor::fromFloats(ElementType::F32, {ws.totalElements}, std::move(v));
  };
  HostTensor master = flat({init.begin(), init.end()});
  std::mt19937 rng(11);
  std::vector<int64_t> tokens, types, positions, labels;
  int64_t s = 0;
  for (int64_t len : {5, 3}) {
    for (int64_t j = 0; j < len; ++j) {
      tokens.push_back(2 + rng() % 98);
      types.push_back(s);
      positions.push_back(j);
      labels.push_back(j % 2 ? -100 : static_cast<int64_t>(rng() % 100));
    }
    ++s;
  }
  std::map<std::string, HostTensor> named = {
      {"input_ids", ids(tokens)},      {"token_type_ids", ids(types)},
      {"position_ids", ids(positions)}, {"cu_seqlens", ids({0, 5, 8})},
      {"labels", ids(labels)}};
  Interpreter interp(Precision::F32);
  HostTensor zeros = flat(std::vector<double>(ws.totalElements, 0.0));
  auto acc = interp.run(c.fn("accumulate_gradients"),
                        args(c.fn("accumulate_gradients"),
                             {master, zeros, HostTensor::scalarFloat(ElementType::F32, 1.0)},
                             named));
  auto out = interp.run(
      c.fn("optimizer_step"),
      {master, acc[1], zeros, zeros, HostTensor::scalarInt(ElementType::I64, 0),
       HostTensor::scalarFloat(ElementType::F32, 1.0),
       HostTensor::scalarInt(ElementType::I64, 0),
       HostTensor::scalarFloat(ElementType::F32, 1.0)});
  ASSERT_EQ(out[8].ints[0], 1);
  for (const ls2c::WorkspaceSlot &slot : ws.slots) {
    bool changed = false;
    for (int64_t i = slot.offset; i < slot.offset + slot.numel && !changed; ++i)
      changed = out[0].floats[i] != master.floats[i];
    EXPECT_TRUE(changed) << slot.spec->name << " did not change";
  }
}

TEST(TrainingCases, EmptyBatchesAndEmptySequences) {
  ls2c::ModelDescription d = ls2c::loadModelDescription(
      LS2C_SOURCE_DIR "/examples/tiny-gpt.json");
  Compiled c;
  compile(c, d);
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(d);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
  std::vector<float> init = ls2c::initializeWorkspace(ws, 3);
  HostTensor master = HostTensor::fromFloats(ElementType::F32, {ws.totalElements},
                                             {init.begin(), init.end()});
  HostTensor zeros = HostTensor::zeros(ElementType::F32, {ws.totalElements});
  Interpreter interp(Precision::F64);
  struct Case {
    std::vector<int64_t> cu;
  };
  // Batch 0 (no sequences, no tokens), and a batch of two empty sequences.
  for (Case k : {Case{{0}}, Case{{0, 0, 0}}}) {
    std::map<std::string, HostTensor> named = {
        {"input_ids", ids({})}, {"position_ids", ids({})},
        {"cu_seqlens", ids(k.cu)}, {"labels", ids({})},
        {"dropout_seed", HostTensor::scalarInt(ElementType::I64, 1)},
        {"dropout_offset", HostTensor::scalarInt(ElementType::I64, 0)}};
    auto out = interp.run(c.fn("accumulate_gradients"),
                          args(c.fn("accumulate_gradients"),
                               {master, zeros,
                                HostTensor::scalarFloat(ElementType::F32, 1.0)},
                               named));
    EXPECT_EQ(out[0].floats[0], 0.0) << "the mean loss of no tokens is 0";
    for (double g : out[1].floats)
      ASSERT_EQ(g, 0.0) << "no tokens, no gradient";
  }
}

} // namespace
