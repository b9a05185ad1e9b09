//===- ProgramStats.cpp - launches and memory of a compiled function ------===//
#include "ls2c/Analysis/ProgramStats.h"

#include "ls2/IR/LS2Dialect.h"

using namespace mlir;

namespace ls2c {

std::string scopeOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string s = scopeOf(l); !s.empty())
        return s;
  return "";
}

ProgramStats collectProgramStats(func::FuncOp f) {
  ProgramStats s;
  for (Operation &op : f.getBody().front()) {
    int64_t LaunchCounts::*field = nullptr;
    if (isa<ls2::FusionOp>(op))
      field = &LaunchCounts::kernels;
    else if (isa<ls2::MatmulOp>(op))
      field = &LaunchCounts::gemms;
    else if (isa<ls2::AttentionOp, ls2::AttentionGradOp>(op))
      field = &LaunchCounts::attention;
    else if (isa<ls2::ScatterAddOp, ls2::NonzeroOp, ls2::LayerNormOp, ls2::SoftmaxOp,
                 ls2::GeluOp, ls2::DropoutOp, ls2::CrossEntropyOp,
                 ls2::LayerNormGradOp, ls2::SoftmaxGradOp, ls2::GeluGradOp,
                 ls2::CrossEntropyGradOp, ls2::AdamWOp>(op))
      field = &LaunchCounts::other;
    if (!field)
      continue;
    // A row reduction with column sums launches a second kernel for them.
    int64_t count = 1;
    if (auto fusion = dyn_cast<ls2::FusionOp>(op);
        fusion && fusion.getKind() == ls2::FusionKind::RowReduction)
      count += fusion.getBody()
                   .walk([](ls2::ReduceSumOp sum) {
                     return sum.reducesLeadingDims() ? WalkResult::interrupt()
                                                     : WalkResult::advance();
                   })
                   .wasInterrupted();
    s.launches.*field += count;
    std::string scope = scopeOf(op.getLoc());
    s.scopes[scope.empty() ? "(no scope)" : scope].*field += count;
  }
  if (auto a = f->getAttrOfType<IntegerAttr>("ls2.arena_bytes"))
    s.arenaBytes = a.getInt();
  if (auto a = f->getAttrOfType<IntegerAttr>("ls2.arena_lower_bound_bytes"))
    s.arenaLowerBound = a.getInt();
  if (auto peak = f->getAttrOfType<DictionaryAttr>("ls2.arena_peak")) {
    auto integer = [](DictionaryAttr d, StringRef key) -> int64_t {
      auto a = d.getAs<IntegerAttr>(key);
      return a ? a.getInt() : 0;
    };
    auto text = [](DictionaryAttr d, StringRef key) -> std::string {
      auto a = d.getAs<StringAttr>(key);
      return a ? a.str() : "";
    };
    s.peakStep = peak.getAs<IntegerAttr>("step") ? integer(peak, "step") : -1;
    s.steps = integer(peak, "steps");
    if (auto live = peak.getAs<ArrayAttr>("live"))
      for (Attribute a : live)
        if (auto row = dyn_cast<DictionaryAttr>(a))
          s.peak.push_back({text(row, "name"), text(row, "type"), text(row, "scope"),
                            integer(row, "count"), integer(row, "bytes")});
  }
  return s;
}

} // namespace ls2c
