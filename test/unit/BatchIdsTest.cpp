//===- BatchIdsTest.cpp - batchIdRanges against the train step's graph ----===//
//
// The tools check a user's ids, positions and labels by input name
// (ls2c/Model/BatchIds.h). These tests build @accumulate_gradients of every
// architecture and its variants and read each integer input's range off the
// graph: the rows of the table an ls2.gather indexes with it, the classes of
// the ls2.cross_entropy it targets and its ignore index. The two must agree
// for every input, both ways.
//
//===----------------------------------------------------------------------===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/BatchIds.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace {

using ls2c::BatchIdRange;

/// Each integer input's range as @accumulate_gradients uses it.
std::map<std::string, BatchIdRange> rangesInGraph(const ls2c::ModelDescription &desc) {
  mlir::MLIRContext context;
  ls2c::loadFrontendDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = ls2c::buildForwardModule(context, desc);
  EXPECT_TRUE(module);
  mlir::PassManager pm(&context);
  pm.addPass(ls2c::createAutodiff());
  pm.addPass(ls2c::createTrainStep());
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  auto f = module->lookupSymbol<mlir::func::FuncOp>("accumulate_gradients");
  std::map<std::string, BatchIdRange> out;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto name = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name");
    // The input and what carries its values on: the masked-LM head's labels
    // gathered at the labelled positions (the input as a gather's table),
    // their unused slots selected to the ignore index.
    llvm::SmallVector<mlir::Value> carriers = {f.getArgument(i)};
    for (size_t k = 0; k < carriers.size(); ++k)
      for (mlir::OpOperand &use : carriers[k].getUses()) {
        auto g = mlir::dyn_cast<ls2c::ls2::GatherOp>(use.getOwner());
        if ((g && use.getOperandNumber() == 0 && g.getType().getRank() == 1) ||
            mlir::isa<ls2c::ls2::SelectOp>(use.getOwner()))
          carriers.push_back(use.getOwner()->getResult(0));
      }
    for (mlir::Value arg : carriers)
    for (mlir::Operation *user : arg.getUsers()) {
      BatchIdRange r;
      if (auto g = mlir::dyn_cast<ls2c::ls2::GatherOp>(user); g && g.getIds() == arg) {
        r.limit = mlir::cast<mlir::RankedTensorType>(g.getTable().getType()).getDimSize(0);
      } else if (auto ce = mlir::dyn_cast<ls2c::ls2::CrossEntropyOp>(user);
                 ce && ce.getTargets() == arg) {
        r.limit = mlir::cast<mlir::RankedTensorType>(ce.getLogits().getType()).getDimSize(1);
        r.ignore = ce.getIgnoreIndex();
      } else {
        continue;
      }
      auto [it, inserted] = out.emplace(name.str(), r);
      // An input used twice (tied tables) must see one range.
      EXPECT_EQ(it->second.limit, r.limit) << name.str();
    }
  }
  return out;
}

void expectSameRanges(const std::string &preset,
                      const std::function<void(ls2c::ModelDescription &)> &edit = {}) {
  SCOPED_TRACE(preset);
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(std::string(LS2C_SOURCE_DIR) + "/examples/" + preset + ".json");
  if (edit)
    edit(desc);
  std::map<std::string, BatchIdRange> graph = rangesInGraph(desc);
  std::map<std::string, BatchIdRange> declared = ls2c::batchIdRanges(desc);
  ASSERT_FALSE(graph.empty());
  for (const auto &[name, r] : graph) {
    auto it = declared.find(name);
    ASSERT_NE(it, declared.end()) << "no range for input '" << name << "'";
    EXPECT_EQ(it->second.limit, r.limit) << name;
    EXPECT_EQ(it->second.ignore, r.ignore) << name;
  }
  for (const auto &[name, r] : declared)
    EXPECT_TRUE(graph.count(name)) << "'" << name << "' indexes nothing in the graph";
}

TEST(BatchIds, RangesAreTheGraphsOnEveryArchitecture) {
  for (const char *preset : {"tiny-bert", "tiny-bert-max-predictions", "tiny-gpt",
                             "tiny-transformer", "tiny-vit"})
    expectSameRanges(preset);
  // Variants that change a table or the ignore index.
  expectSameRanges("tiny-transformer", [](ls2c::ModelDescription &d) {
    d.share_embeddings = false;
    d.src_vocab = d.vocab + 17;
    d.padding_idx = -1;
  });
  expectSameRanges("tiny-gpt", [](ls2c::ModelDescription &d) {
    d.tie_embeddings = false;
    d.kv_heads = 1;
  });
  expectSameRanges("tiny-bert", [](ls2c::ModelDescription &d) { d.type_vocab_size = 5; });
}

TEST(BatchIds, RefusalsNameTheInputElementAndRange) {
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(std::string(LS2C_SOURCE_DIR) + "/examples/tiny-gpt.json");
  auto ranges = ls2c::batchIdRanges(desc);
  const std::string vocab = std::to_string(desc.vocab);
  EXPECT_EQ(ls2c::checkBatchIds(ranges, "input_ids", {0, desc.vocab - 1}), "");
  EXPECT_EQ(ls2c::checkBatchIds(ranges, "input_ids", {3, desc.vocab}),
            "batch input 'input_ids' element 1 is " + vocab + ", outside [0, " + vocab +
                ") (the vocabulary (vocab " + vocab + "))");
  EXPECT_EQ(ls2c::checkBatchIds(ranges, "labels", {-100, 2}), "");
  EXPECT_EQ(ls2c::checkBatchIds(ranges, "labels", {-1}),
            "batch input 'labels' element 0 is -1, outside [0, " + vocab +
                ") (the classes (vocab " + vocab + ")) and not the ignore index -100");
  EXPECT_EQ(ls2c::checkBatchIds(ranges, "position_ids", {desc.max_seq_len}),
            "batch input 'position_ids' element 0 is " + std::to_string(desc.max_seq_len) +
                ", outside [0, " + std::to_string(desc.max_seq_len) +
                ") (the positions (max_seq_len " + std::to_string(desc.max_seq_len) + "))");
  // Offsets are not ids; their sequences are bounded by max_seq_len
  // (decreasing ones are left to the caller, extremes do not overflow).
  EXPECT_EQ(ls2c::checkBatchIds(ranges, "cu_seqlens", {0, 1000000}), "");
  EXPECT_EQ(ls2c::checkSequenceLengths("cu_seqlens", {0, 32, 64, 10}, 32), "");
  EXPECT_EQ(ls2c::checkSequenceLengths("src_cu_seqlens", {0, 5, 38}, 32),
            "batch input 'src_cu_seqlens': sequence 1 has 33 tokens, more than max_seq_len 32");
  EXPECT_EQ(ls2c::checkSequenceLengths("cu_seqlens", {INT64_MIN, INT64_MAX}, 32),
            "batch input 'cu_seqlens': sequence 0 has 18446744073709551615 tokens, more than "
            "max_seq_len 32");
}

} // namespace

namespace {

// With max_predictions the gathered head holds that many rows: a batch
// with more labels is refused (by ls2c step and ls2c-gpu-step) instead of
// losing some.
TEST(BatchIds, LabelsBeyondMaxPredictionsAreRefused) {
  ls2c::ModelDescription desc = ls2c::loadModelDescription(
      std::string(LS2C_SOURCE_DIR) + "/examples/tiny-bert-max-predictions.json");
  ASSERT_EQ(desc.max_predictions, 24);
  std::vector<int64_t> labels(40, -100);
  EXPECT_EQ(ls2c::checkLabelCount(desc, labels), "");
  for (int k = 0; k < 24; ++k)
    labels[k] = k % 3; // class 0 is a label too
  EXPECT_EQ(ls2c::checkLabelCount(desc, labels), "");
  labels[39] = 7;
  EXPECT_EQ(ls2c::checkLabelCount(desc, labels),
            "batch input 'labels' has 25 labelled tokens (not -100), more than "
            "max_predictions 24 (the masked-LM head's rows); raise max_predictions in the "
            "description or label fewer tokens");
  // Without the field every label is scored.
  desc.max_predictions = 0;
  EXPECT_EQ(ls2c::checkLabelCount(desc, std::vector<int64_t>(300, 5)), "");
}

} // namespace
