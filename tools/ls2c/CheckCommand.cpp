//===- CheckCommand.cpp - ls2c check MODEL.json ---------------------------===//
#include "Commands.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"

#include <fmt/format.h>

#include <cstdio>

namespace ls2c::cli {

namespace {

/// 109514298 -> "109,514,298".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytesLine(std::string_view what, int64_t bytes) {
  return fmt::format("  {:<34}{:>18} bytes ({:.2f} MiB)\n", what,
                     grouped(bytes), static_cast<double>(bytes) / (1 << 20));
}

int checkedAdd(int64_t a, int64_t b, int64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}

} // namespace

int runCheck(const std::vector<std::string> &args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::puts("usage: ls2c check MODEL.json\n\nValidates a model description "
              "(docs/model-description.md) and prints its parameter count and "
              "the bytes of its training state.");
    return kExitOk;
  }
  for (const std::string &a : args)
    if (a.size() > 1 && a[0] == '-')
      return usageError("unknown option '" + a + "' for check (usage: ls2c check MODEL.json)");
  if (args.size() > 1)
    return usageError("check takes one MODEL.json, got '" + args[0] + "' and '" + args[1] + "'");
  if (args.size() != 1)
    return usageError("usage: ls2c check MODEL.json");
  try {
    ModelDescription desc = loadModelDescription(args[0]);
    ParameterLayout layout = buildParameterLayout(desc);
    int64_t weights = layout.computeWeightBytes(desc.dtype);
    // fp32 compute weights are the master weights: no second copy.
    int64_t master = desc.dtype == DType::F32 ? 0 : layout.masterWeightBytes();
    int64_t grads = layout.gradientBytes(desc.dtype);
    int64_t states = layout.optimizerStateBytes();
    int64_t buffers = 0, total = 0;
    if (__builtin_mul_overflow(layout.numBufferElements(),
                               static_cast<int64_t>(dtypeBytes(desc.dtype)),
                               &buffers) ||
        checkedAdd(weights, master, total) || checkedAdd(total, grads, total) ||
        checkedAdd(total, states, total) || checkedAdd(total, buffers, total))
      throw DescriptionError(args[0], "$",
                             "training-state bytes overflow 64-bit integers");

    std::string out = fmt::format(
        "{}: {} ({}, {}, {} norm)\n", args[0],
        desc.name.empty() ? "unnamed" : desc.name,
        toString(desc.architecture), toString(desc.dtype), toString(desc.norm));
    out += fmt::format("  {:<34}{:>18}\n", "parameters (trainable)",
                       grouped(layout.numParameters()));
    out += fmt::format("  {:<34}{:>18}\n", "parameter tensors",
                       grouped(static_cast<int64_t>(layout.parameters.size())));
    if (layout.numBufferElements())
      out += fmt::format("  {:<34}{:>18}\n", "buffer elements (not trained)",
                         grouped(layout.numBufferElements()));
    out += bytesLine(fmt::format("weights ({})", toString(desc.dtype)), weights);
    out += bytesLine(desc.dtype == DType::F32 ? "master weights (= weights)"
                                              : "master weights (fp32)",
                     master);
    out += bytesLine(fmt::format("gradients ({})", toString(desc.dtype)), grads);
    out += bytesLine(fmt::format("optimizer states ({} m, v fp32)",
                                 toString(desc.optimizer.type)),
                     states);
    if (buffers)
      out += bytesLine("buffers", buffers);
    out += bytesLine("total training state", total);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  } catch (const DescriptionError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  }
}

} // namespace ls2c::cli
