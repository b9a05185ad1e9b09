//===- ProgressReporter.cpp - progress line and metrics -------------------===//
#include "ProgressReporter.h"

#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Trainer/Trainer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace ls2c {

namespace {
/// The records of `path` whose step is at most `lastStep` (malformed lines
/// are dropped).
std::string recordsUpTo(const std::string &path, int64_t lastStep) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.contains("step") &&
        record["step"].is_number_integer() &&
        record["step"].get<int64_t>() <= lastStep)
      kept += line + "\n";
  }
  return kept;
}
} // namespace

ProgressReporter::ProgressReporter(const std::string &metricsPath,
                                   int64_t resumeAfter, bool progress,
                                   int64_t totalSteps)
    : progress(progress), terminal(::isatty(STDERR_FILENO)),
      totalSteps(totalSteps), start(std::chrono::steady_clock::now()) {
  if (resumeAfter >= 0) {
    // Replaced atomically: a run killed now keeps the records it had.
    try {
      writeFileAtomically(metricsPath, recordsUpTo(metricsPath, resumeAfter));
    } catch (const FileWriteError &e) {
      throw TrainError(e.what());
    }
    metrics.open(metricsPath, std::ios::app);
  } else {
    metrics.open(metricsPath, std::ios::trunc);
  }
  if (!metrics)
    throw TrainError("cannot write metrics file '" + metricsPath + "'");
}

double ProgressReporter::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

void ProgressReporter::step(int64_t step, double loss, double lr,
                            double gradNorm, double tokensPerSecond,
                            bool finite, int64_t droppedLabels, double lossScale) {
  nlohmann::json line = {{"step", step},
                         {"loss", loss},
                         {"lr", lr},
                         {"grad_norm", std::isfinite(gradNorm) ? gradNorm : -1.0},
                         {"tokens_per_second", tokensPerSecond},
                         {"finite", finite},
                         {"elapsed_seconds", elapsed()}};
  if (droppedLabels >= 0)
    line["dropped_labels"] = droppedLabels;
  metrics << line.dump() << '\n' << std::flush;
  // Printed with or without the progress line, as validation lines are.
  if (!finite) {
    std::fprintf(stderr, "%sstep %lld: skipped, gradients not finite",
                 progress && terminal ? "\r\033[K" : "", static_cast<long long>(step));
    if (lossScale > 0)
      std::fprintf(stderr, ", fp16 loss scale lowered to %g", lossScale);
    std::fputc('\n', stderr);
  }
  if (!progress)
    return;
  if (firstStep < 0)
    firstStep = step - 1;
  smoothedTokens = smoothedTokens == 0 ? tokensPerSecond
                                       : 0.9 * smoothedTokens + 0.1 * tokensPerSecond;
  int64_t done = step - firstStep, left = totalSteps - step;
  double eta = done > 0 ? elapsed() / static_cast<double>(done) * left : 0;
  bool print = terminal || step == totalSteps ||
               step % std::max<int64_t>(totalSteps / 20, 1) == 0;
  if (!print)
    return;
  char bar[11];
  int filled = static_cast<int>(10 * step / std::max<int64_t>(totalSteps, 1));
  for (int i = 0; i < 10; ++i)
    bar[i] = i < filled ? '#' : '-';
  bar[10] = 0;
  std::fprintf(stderr, "%sstep %lld/%lld [%s] loss %.4f lr %.2e %.0f tok/s ETA %dm%02ds%s",
               terminal ? "\r" : "", static_cast<long long>(step),
               static_cast<long long>(totalSteps), bar, loss, lr, smoothedTokens,
               static_cast<int>(eta) / 60, static_cast<int>(eta) % 60,
               terminal ? "\033[K" : "\n");
  std::fflush(stderr);
}

void ProgressReporter::validation(int64_t step, double validLoss,
                                  const std::map<std::string, double> &extra) {
  nlohmann::json line = {{"step", step},
                         {"valid_loss", validLoss},
                         {"elapsed_seconds", elapsed()}};
  for (const auto &[key, value] : extra)
    line[key] = value;
  metrics << line.dump() << '\n' << std::flush;
  // Printed with or without the progress line: --no-progress hides only
  // that (a redrawn line is cleared first).
  std::fprintf(stderr, "%sstep %lld: validation loss %.4f",
               progress && terminal ? "\r\033[K" : "", static_cast<long long>(step), validLoss);
  if (auto it = extra.find("valid_accuracy"); it != extra.end())
    std::fprintf(stderr, ", accuracy %.4f", it->second);
  std::fputc('\n', stderr);
}

void ProgressReporter::finish() {
  if (progress && terminal)
    std::fputc('\n', stderr);
}

} // namespace ls2c
