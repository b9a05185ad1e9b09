//===- CompileCommand.cpp - ls2c compile MODEL.json -----------------------===//
#include "Commands.h"

#include "ls2c/Analysis/ProgramStats.h"
#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Codegen/ModuleKernels.h"
#if LS2C_HAVE_CUDA
#include "ls2c/JIT.h"
#include "ls2c/Runtime/Bundle.h"
#endif
#include "ls2c/Frontend/Decoding.h"
#include "ls2c/Frontend/EvaluationModule.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Frontend/SequenceParallelModule.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Training/Workspace.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace ls2c::cli {

namespace {

constexpr const char *kCompileUsage =
    "usage: ls2c compile MODEL.json --emit=mlir|cuda "
    "[--stage=forward|train-step|fused|planned] [--stats] [--fusion-report] "
    "[-o FILE]\n"
    "       ls2c compile MODEL.json --stats|--fusion-report\n"
    "       ls2c compile MODEL.json --arch=sm_90[,sm_80...] -o MODEL.ls2b\n"
    "       (one of --emit, --stats, --fusion-report or --arch is needed; --emit, "
    "--fusion-report and --arch take --program=train|eval|sequence-parallel|decode, "
    "--stats reports the train program)";

struct CompileOptions {
  std::string model;
  std::string emit;
  std::string stage;
  bool stats = false;
  bool fusionReport = false;
  std::optional<std::string> output;
  std::vector<std::string> archs; ///< --arch: write a bundle
  /// --program: the train step, the dropout-free @forward returning the loss
  /// and the logits (EvaluationModule.h), or the model's sequence-parallel
  /// attention (SequenceParallelModule.h).
  std::string program = "train";
};

/// Parses the options; returns an error message or "".
std::string parse(const std::vector<std::string> &args, CompileOptions &o) {
  bool stageGiven = false, emitGiven = false, programGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a.rfind("--emit=", 0) == 0) {
      if (emitGiven && o.emit != a.substr(7))
        return "--emit given twice ('" + o.emit + "' and '" + a.substr(7) + "')";
      o.emit = a.substr(7);
      emitGiven = true;
    } else if (a.rfind("--stage=", 0) == 0) {
      o.stage = a.substr(8);
      stageGiven = true;
    } else if (a.rfind("--program=", 0) == 0 || a == "--program") {
      if (a == "--program" && i + 1 == args.size())
        return "--program needs a value (train, eval, sequence-parallel, decode)";
      std::string program = a == "--program" ? args[++i] : a.substr(10);
      if (programGiven && program != o.program)
        return "--program given twice ('" + o.program + "' and '" + program + "')";
      programGiven = true;
      o.program = program;
      if (o.program != "train" && o.program != "eval" && o.program != "sequence-parallel" &&
          o.program != "decode")
        return "--program=" + o.program +
               " is not a program (allowed: train, eval, sequence-parallel, decode)";
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--fusion-report") {
      o.fusionReport = true;
    } else if (a.rfind("--arch=", 0) == 0 || a == "--arch") {
      std::string list;
      if (a == "--arch") {
        if (i + 1 == args.size())
          return "--arch needs a value (sm_80, sm_90, ...)";
        list = args[++i];
      } else {
        list = a.substr(7);
      }
      for (size_t pos = 0; pos <= list.size();) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos)
          end = list.size();
        std::string arch = list.substr(pos, end - pos);
        if (arch.empty())
          return "--arch: an empty element in the list '" + list + "'";
        bool valid = arch.size() > 3 && arch.rfind("sm_", 0) == 0 &&
                     std::all_of(arch.begin() + 3, arch.end(),
                                 [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        if (!valid)
          return "--arch: '" + arch + "' is not a GPU architecture (sm_80, sm_90, ...)";
#if LS2C_HAVE_CUDA
        try {
          jit::checkArchitecture(arch);
        } catch (const std::invalid_argument &e) {
          return std::string("--arch: ") + e.what();
        }
#endif
        if (std::find(o.archs.begin(), o.archs.end(), arch) != o.archs.end())
          return "--arch: '" + arch + "' is listed twice";
        o.archs.push_back(arch);
        pos = end + 1;
      }
    } else if (a == "--emit" || a == "--stage" || a == "-o") {
      if (i + 1 == args.size())
        return a + " needs a value";
      stageGiven |= a == "--stage";
      if (a == "--emit" && emitGiven && o.emit != args[i + 1])
        return "--emit given twice ('" + o.emit + "' and '" + args[i + 1] + "')";
      emitGiven |= a == "--emit";
      (a == "-o" ? o.output.emplace() : a == "--emit" ? o.emit : o.stage) =
          args[++i];
      if (a == "-o" && o.output->empty())
        return "-o needs a file name";
    } else if (a.rfind("-", 0) == 0) {
      return "unknown option '" + a + "' for compile";
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      return "compile takes one MODEL.json, got '" + o.model + "' and '" + a +
             "'";
    }
  }
  if (o.model.empty())
    return kCompileUsage;
  if (o.output && *o.output != "-")
    if (std::string e = ls2c::outputReplacesInput({{"-o", *o.output}}, {{"MODEL.json", o.model}});
        !e.empty())
      return e;
  if (stageGiven && o.stage.empty())
    return "--stage needs a value (forward, train-step, fused, planned)";
  if (!o.stage.empty() && o.stage != "forward" && o.stage != "train-step" &&
      o.stage != "fused" && o.stage != "planned")
    return "--stage=" + o.stage +
           " is not a stage (forward, train-step, fused, planned)";
  if (emitGiven && o.emit.empty())
    return "--emit needs a value (mlir, cuda)";
  if (!o.emit.empty() && o.emit != "mlir" && o.emit != "cuda")
    return "--emit=" + o.emit + " is not supported (allowed: mlir, cuda)";
  if (o.emit == "cuda" && !o.stage.empty() && o.stage != "fused" &&
      o.stage != "planned")
    return "--emit=cuda needs the fused program (--stage=fused, planned or "
           "no --stage)";
  if (!o.archs.empty()) {
    if (!o.emit.empty() || o.stats || o.fusionReport || !o.stage.empty())
      return "--arch writes a bundle; it takes no --emit, --stage, --stats or "
             "--fusion-report";
    if (!o.output || *o.output == "-" || o.output->empty())
      return "--arch writes a bundle: name its file with -o MODEL.ls2b";
    // Refused before minutes of compiling, not after.
    std::filesystem::path parent = std::filesystem::path(*o.output).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      return "-o " + *o.output + ": the directory '" + parent.string() + "' does not exist";
    return "";
  }
  if (o.program == "sequence-parallel" && o.stage == "forward")
    return "--stage=forward: the sequence-parallel program has no frontend stage (its "
           "functions start complete: train-step, fused or planned)";
  if (o.stats && o.program != "train")
    return "--stats reports a train step's memory; it takes no --program=" + o.program;
  if (o.emit.empty() && !o.stats && !o.fusionReport)
    return "compile needs --emit=mlir, --emit=cuda, --stats, --fusion-report "
           "or --arch";
  if (o.stats && !o.stage.empty() && o.stage != "planned")
    return "--stats needs the planned program (--stage=planned or no --stage)";
  if (o.fusionReport && (o.stage == "forward" || o.stage == "train-step"))
    return "--fusion-report needs the fused program (--stage=fused, planned "
           "or no --stage)";
  if (o.output && o.emit.empty())
    return "-o writes the --emit output; --stats and --fusion-report print "
           "to standard output";
  if (!o.emit.empty() && (o.stats || o.fusionReport) &&
      (!o.output || *o.output == "-"))
    return "with --stats or --fusion-report on standard output, write the "
           "--emit output to a file with -o";
  return "";
}

CompileStage stageOf(const CompileOptions &o) {
  if (o.stage.empty() && o.fusionReport && !o.stats)
    return CompileStage::Fused;
  if (o.stage == "train-step")
    return CompileStage::TrainStep;
  if (o.stage == "fused")
    return CompileStage::Fused;
  if (o.stage == "planned" || (o.stage.empty() && (o.stats || o.emit == "cuda")))
    return CompileStage::Planned;
  return CompileStage::Forward;
}

std::string launchText(const LaunchCounts &c) {
  return std::to_string(c.total()) + " launches (" + std::to_string(c.kernels) +
         " kernels, " + std::to_string(c.gemms) + " GEMMs, " +
         std::to_string(c.attention) + " attention, " +
         std::to_string(c.other) + " other)";
}

std::string bytesText(int64_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld bytes (%.3f GiB)",
                static_cast<long long>(b), double(b) / (1024.0 * 1024 * 1024));
  return buf;
}

/// Launches per function and per frontend scope, the arenas, and the
/// estimated peak device memory of one training step at the bounds.
void printStats(const ModelDescription &desc, mlir::ModuleOp module) {
  auto acc = module.lookupSymbol<mlir::func::FuncOp>("accumulate_gradients");
  auto opt = module.lookupSymbol<mlir::func::FuncOp>("optimizer_step");
  ProgramStats a = collectProgramStats(acc), o = collectProgramStats(opt);
  std::printf("%s: forward + backward (@accumulate_gradients): %s\n",
              desc.name.c_str(), launchText(a.launches).c_str());
  // Layer scopes in numeric order (layer.2 before layer.10).
  std::vector<std::pair<std::string, LaunchCounts>> scopes(a.scopes.begin(),
                                                           a.scopes.end());
  auto key = [](const std::string &s) {
    size_t end = s.size(), digits = end;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(s[digits - 1])))
      --digits;
    long long n = digits < end ? std::stoll(s.substr(digits)) : -1;
    return std::make_pair(s.substr(0, digits), n);
  };
  std::stable_sort(scopes.begin(), scopes.end(), [&](auto &x, auto &y) {
    return key(x.first) < key(y.first);
  });
  for (const auto &[scope, counts] : scopes)
    std::printf("  %s: %s\n", scope.c_str(), launchText(counts).c_str());
  std::printf("optimizer (@optimizer_step): %s\n", launchText(o.launches).c_str());
  std::printf("train step (one micro-batch): %lld launches\n",
              static_cast<long long>(a.launches.total() + o.launches.total()));
  // The gradient workspace: one group a kernel, each a data-parallel bucket
  // (an in-place concat of the groups, or a single group).
  mlir::Operation *ret = acc.getBody().front().getTerminator();
  size_t groups = 1;
  if (ret->getNumOperands() > 1)
    if (auto concat = ret->getOperand(1).getDefiningOp<ls2::ConcatOp>();
        concat && concat->hasAttr("ls2.in_place"))
      groups = concat.getInputs().size();
  std::printf("gradient accumulation: %zu groups of at most %g MiB "
              "(optimizer.bucket_cap_mb) and %zu parameters\n",
              groups, desc.optimizer.bucket_cap_mb, kAccumulationGroupSlots);
  std::string inPlace;
  for (mlir::func::FuncOp f : {acc, opt})
    for (unsigned r = 0; r < f.getNumResults(); ++r)
      if (f.getResultAttr(r, "ls2.in_place_of"))
        if (auto name = f.getResultAttrOfType<mlir::StringAttr>(r, "ls2.name"))
          inPlace += (inPlace.empty() ? "" : ", ") + name.str();
  std::printf("state written over its argument: %s\n", inPlace.empty() ? "none" : inPlace.c_str());

  ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout ws = planWorkspace(layout); // its slots point into layout
  // fp32 master weights, gradients and both Adam moments.
  int64_t workspaces = 4 * 4 * ws.totalElements;
  int64_t inputs = 0;
  mlir::FailureOr<ShapeBounds> bounds = ShapeBounds::compute(acc);
  for (unsigned i = 3; mlir::succeeded(bounds) && i < acc.getNumArguments(); ++i)
    inputs += bounds->bytes(acc.getArgument(i));
  int64_t arena = std::max(a.arenaBytes, o.arenaBytes);
  std::printf("activation checkpointing: %s\n",
              !desc.activation_checkpointing ? "off"
              : desc.recompute_attention
                  ? "layers keep their input and row statistics (recompute_attention)"
                  : "layers keep their input, row statistics and attention results");
  std::printf("memory at max_batch_tokens %lld:\n",
              static_cast<long long>(desc.max_batch_tokens));
  std::printf("  arena (forward + backward): %s; lower bound %s; %.3fx\n",
              bytesText(a.arenaBytes).c_str(), bytesText(a.arenaLowerBound).c_str(),
              a.arenaLowerBound > 0 ? double(a.arenaBytes) / double(a.arenaLowerBound)
                                    : 1.0);
  if (a.peakStep >= 0) {
    // What makes the peak: the largest groups of buffers live there.
    std::printf("  live at its peak (step %lld of %lld):\n", static_cast<long long>(a.peakStep),
                static_cast<long long>(a.steps));
    constexpr size_t kShown = 8;
    int64_t restBytes = 0, restCount = 0;
    for (size_t i = 0; i < a.peak.size(); ++i) {
      const PeakLive &row = a.peak[i];
      if (i >= kShown) {
        restBytes += row.bytes;
        restCount += row.count;
        continue;
      }
      std::printf("    %s: %lld x %s %s%s\n", bytesText(row.bytes).c_str(),
                  static_cast<long long>(row.count), row.name.c_str(), row.type.c_str(),
                  row.scope.empty() ? "" : (" in " + row.scope).c_str());
    }
    if (restCount > 0)
      std::printf("    %s: %lld more buffers\n", bytesText(restBytes).c_str(),
                  static_cast<long long>(restCount));
  }
  std::printf("  arena (optimizer): %s\n", bytesText(o.arenaBytes).c_str());
  std::printf("  workspaces (fp32 master, gradients, 2 Adam moments): %s\n",
              bytesText(workspaces).c_str());
  std::printf("  inputs and buffers: %s\n", bytesText(inputs).c_str());
  std::printf("  estimated peak device memory: %s\n",
              bytesText(arena + workspaces + inputs).c_str());
}

/// Every kernel's source after a comment with its launch config.
std::string kernelListing(const codegen::ModuleKernels &kernels) {
  std::string text;
  for (const runtime::Kernel &kernel : kernels.kernels) {
    std::string work;
    for (const runtime::Dim &d : kernel.launch.work)
      work += (work.empty() ? "" : " x ") +
              (d.isStatic() ? std::to_string(d.size)
                            : "param" + std::to_string(d.argument) +
                                  (d.multiplier != 1 ? " * " + std::to_string(d.multiplier) : "") +
                                  (d.divisor != 1 ? " / " + std::to_string(d.divisor) : ""));
    text += "// ===== kernel " + kernel.name + ": block " +
            std::to_string(kernel.launch.blockThreads) + ", grid min(" +
            std::to_string(kernel.launch.maxBlocks) + ", ceil(" +
            (work.empty() ? "1" : work) + " / " +
            std::to_string(kernel.launch.workPerBlock) + ")), scratch " +
            std::to_string(kernel.scratchBytes) + " bytes" +
            (kernel.launch.dynamicSharedBytes
                 ? ", shared " + std::to_string(kernel.launch.dynamicSharedBytes) + " bytes"
                 : "") +
            "\n";
    text += kernel.source;
  }
  return text;
}

/// --arch: the whole program, compiled for each architecture, as a bundle.
int writeBundleFile(const CompileOptions &options, const ModelDescription &desc,
                    mlir::ModuleOp module, double frontendSeconds) {
#if LS2C_HAVE_CUDA
  std::ifstream in(options.model, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  ProgramOptions po;
  po.archs = options.archs;
  if (options.program == "sequence-parallel")
    po.functions = parallel::sequenceParallelFunctions();
  if (options.program == "decode")
    po.functions = desc.architecture == Architecture::EncoderDecoder
                       ? std::vector<std::string>{"encode", "decode"}
                       : std::vector<std::string>{"decode"};
  // The evaluation bundle holds @forward only, and records the description
  // it evaluates (every dropout 0), which ls2c-gpu-train checks.
  std::string description = text.str();
  if (options.program == "eval") {
    po.functions = {"forward"};
    description = toJson(evaluationDescription(desc)).dump(1) + "\n";
  }
  CompileReport stats;
  try {
    runtime::Program program = compileModule(module, desc, description, po, &stats);
    stats.pipelineSeconds += frontendSeconds;
    runtime::writeBundle(program, *options.output);
  } catch (const ProgramError &e) {
    std::fprintf(stderr, "ls2c: internal error: %s\n", e.what());
    return kExitInternal;
  } catch (const jit::CompileError &e) {
    std::fprintf(stderr, "ls2c: internal error: a generated kernel does not compile: %s\n",
                 e.what());
    return kExitInternal;
  } catch (const runtime::BundleError &e) {
    std::fprintf(stderr, "ls2c: internal error: the program is not a valid bundle: %s\n",
                 e.what());
    return kExitInternal;
  } catch (const FileWriteError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::runtime_error &e) {
    // No device to pick an architecture from, an unwritable cache, ...
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  }
  std::string archs;
  for (const std::string &a : options.archs)
    archs += (archs.empty() ? "" : ",") + a;
  std::printf("%s: %zu kernels for %s; compiler %.2f s, NVRTC %.2f s (%zu of %zu from "
              "the cache)\n",
              options.output->c_str(), stats.kernels, archs.c_str(), stats.pipelineSeconds,
              stats.nvrtcSeconds, stats.fromCache, stats.kernels * options.archs.size());
  return kExitOk;
#else
  (void)desc;
  (void)module;
  (void)frontendSeconds;
  std::fprintf(stderr, "ls2c: error: --arch: this ls2c was built without the CUDA "
                       "toolkit, so it cannot compile kernels\n");
  return kExitBadInput;
#endif
}

} // namespace

int runCompile(const std::vector<std::string> &args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("%s\n\n%s", kCompileUsage,
                "Compiles a model description and prints its ls2 IR (to FILE, "
                "written atomically,\nwith -o; -o - is standard output) after "
                "a stage:\n"
                "  forward     the frontend's verified @forward (default)\n"
                "  train-step  + backward (ls2-autodiff) and the optimizer "
                "step (ls2-train-step)\n"
                "  fused       + ls2-decompose, CSE and fusion groups "
                "(ls2-fuse)\n"
                "  planned     + static arena offsets (ls2-plan-buffers)\n"
                "--stats compiles to the planned program and prints launches "
                "per function and\nper layer scope, the arena against its "
                "lower bound, what is live at the arena's\npeak (by buffer "
                "name, shape, dtype and scope, largest first) and the\n"
                "estimated peak device memory of a train step at "
                "max_batch_tokens.\n--fusion-report prints every "
                "fusion group (with its layer scope) and every refused\n"
                "fusion with its reason.\n"
                "--emit=cuda prints the generated CUDA C++ kernel of every "
                "fusion group (of the\nplanned program) with its launch "
                "config.\n"
                "--arch=sm_90[,sm_80...] -o MODEL.ls2b compiles the whole "
                "program, each kernel\nthrough NVRTC for each architecture "
                "(the program cache, $LS2C_CACHE_DIR or\n~/.cache/ls2c, "
                "serves kernels compiled before), and writes a bundle\n"
                "(docs/bundle-format.md) atomically.\n"
                "--program=eval compiles, instead of the train step, the dropout-free\n"
                "@forward that evaluation runs (every dropout rate 0), returning the loss and\n"
                "the logits it scores (ls2c-gpu-train's evaluation bundle; accuracy needs them).\n"
                "--program=sequence-parallel compiles, instead of the train step, the pieces\n"
                "of the model's self-attention that a rank runs in sequence parallelism\n"
                "(blocks, their gradients, the partial-result merge; ls2c-seq-parallel runs\n"
                "its bundle).\n");
    return kExitOk;
  }
  CompileOptions options;
  if (std::string error = parse(args, options); !error.empty())
    return usageError(error);
  ModelDescription desc;
  try {
    desc = loadModelDescription(options.model);
  } catch (const DescriptionError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  }

  auto start = std::chrono::steady_clock::now();
  mlir::MLIRContext context;
  if (options.program == "decode" && !canGenerate(desc))
    return usageError(options.model + ": --program=decode needs a decoder, llama or encoder_decoder "
                      "model, not " + std::string(toString(desc.architecture)));
  mlir::OwningOpRef<mlir::ModuleOp> module =
      options.program == "train"    ? buildForwardModule(context, desc)
      : options.program == "eval"   ? buildEvaluationModule(context, desc)
      : options.program == "decode" ? buildDecodingModule(context, desc)
                                    : buildSequenceParallelModule(context, desc);
  if (!module) {
    std::fprintf(stderr, "ls2c: internal error: the %s module of '%s' "
                         "does not verify (diagnostics above)\n",
                 options.program == "train" ? "forward" : options.program.c_str(),
                 options.model.c_str());
    return kExitInternal;
  }
  if (!options.archs.empty())
    return writeBundleFile(options, desc, *module,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                         start)
                               .count());
  mlir::PassManager pm(&context);
  // The sequence-parallel and decoding modules start complete (nothing to
  // differentiate).
  addCompilePipeline(pm, moduleStage(*module), stageOf(options), options.fusionReport);
  if (mlir::failed(pm.run(*module))) {
    std::fprintf(stderr, "ls2c: internal error: compiling '%s' failed "
                         "(diagnostics above)\n",
                 options.model.c_str());
    return kExitInternal;
  }
  if (options.stats)
    printStats(desc, *module);
  if (options.emit.empty())
    return kExitOk;
  std::string text;
  if (options.emit == "cuda") {
    mlir::FailureOr<codegen::ModuleKernels> kernels =
        codegen::generateModuleKernels(*module);
    if (mlir::failed(kernels)) {
      std::fprintf(stderr, "ls2c: internal error: generating the kernels of "
                           "'%s' failed (diagnostics above)\n",
                   options.model.c_str());
      return kExitInternal;
    }
    text = kernelListing(*kernels);
  } else {
    llvm::raw_string_ostream os(text);
    module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
    os.flush();
  }
  try {
    if (options.output && *options.output != "-")
      writeFileAtomically(*options.output, text);
    else
      std::fwrite(text.data(), 1, text.size(), stdout);
  } catch (const FileWriteError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

} // namespace ls2c::cli
