//===- ProgramValidate.cpp - the invariants every Program must keep -------===//
//
// Every rule here is listed in docs/bundle-format.md ("Validation"). Errors
// name the field by its manifest JSON path and say "<value>: <rule>".
// Arithmetic on sizes is overflow-checked (__builtin_*_overflow): a program
// whose sizes do not fit 64 bits is rejected, never wrapped.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/ProgramValidate.h"

#include "ls2c/Support/Utf8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <set>

namespace ls2c::runtime {

namespace {

/// Most dynamic shared memory a block may use (sm_90: 227 KiB).
constexpr uint64_t kMaxDynamicSharedBytes = 227 * 1024;

std::string at(const std::string &path, const char *key) {
  return path.empty() ? std::string(key) : path + "." + key;
}
std::string at(const std::string &path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}
std::string quoted(const std::string &s) { return "'" + s + "'"; }
/// A float as its shortest exact-enough decimal ("0.1", "nan").
std::string real(float v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.9g", static_cast<double>(v));
  return buffer;
}

bool isCIdentifier(const std::string &s) {
  if (s.empty())
    return false;
  auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!alpha(s[0]))
    return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return alpha(c) || (c >= '0' && c <= '9');
  });
}

bool isArchName(const std::string &s) {
  if (s.size() < 4 || s.size() > 8 || s.compare(0, 3, "sm_") != 0)
    return false;
  return std::all_of(s.begin() + 3, s.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool validDType(DType t) { return dtypeBytes(t) != 0; }
bool isFloatStorage(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

class Validator {
public:
  Validator(const Program &program, const std::string &name)
      : p(program), name(name) {}

  void run();

private:
  const Program &p;
  const std::string &name;

  // Per function being checked.
  const Function *fn = nullptr;
  std::string fnPath;
  std::vector<uint64_t> argumentBytes, resultBytes;

  [[noreturn]] void fail(const std::string &where,
                         const std::string &detail) const {
    throw BundleError(name, where, detail);
  }

  uint64_t mul(uint64_t a, uint64_t b, const std::string &where) const {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
      fail(where, std::to_string(a) + " * " + std::to_string(b) +
                      " overflows 64 bits");
    return r;
  }
  uint64_t add(uint64_t a, uint64_t b, const std::string &where) const {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r))
      fail(where, std::to_string(a) + " + " + std::to_string(b) +
                      " overflows 64 bits");
    return r;
  }
  void utf8(const std::string &s, const std::string &where) const {
    if (!isValidUtf8(s))
      fail(where, "not valid UTF-8 (manifest strings are JSON text)");
  }
  void dtype(DType t, const std::string &where, bool floatOnly) const {
    if (!validDType(t))
      fail(where, std::to_string(static_cast<unsigned>(t)) + ": not a dtype");
    if (floatOnly && !isFloatStorage(t))
      fail(where, std::string(dtypeName(t)) + ": must be f32, f16 or bf16");
  }

  void checkParameters();
  void checkKernel(size_t index);
  void checkFunction(size_t index);
  void checkTensorStructure(const TensorSpec &t, const std::string &path);
  void checkTensorDims(const TensorSpec &t, const std::string &path);
  void checkDim(const Dim &d, const std::string &path) const;
  void checkFraction(const Dim &d, const std::string &path) const;
  uint64_t bound(const Dim &d) const {
    return static_cast<uint64_t>(dimBound(d, *fn));
  }
  void checkRef(const BufferRef &r, const std::string &path) const;
  void requireBytes(const BufferRef &r, const std::string &path,
                    uint64_t needed, const std::string &why) const;
  uint64_t extent(uint64_t batch, uint64_t stride, uint64_t rows, uint64_t ld,
                  uint64_t cols, unsigned elementBytes,
                  const std::string &where) const;
  void checkLaunch(const Step &s, const std::string &path);
  void checkGemm(const Gemm &g, const std::string &path);
  void checkAttention(const Attention &a, const std::string &path);
  void checkFallback(const Function &f, size_t step, const std::string &path);
  void checkCopy(const Step &s, const std::string &path);
};

void Validator::run() {
  if (p.modelName.empty())
    fail("modelName", "empty: a bundle names its model");
  utf8(p.modelName, "modelName");
  utf8(p.description, "description");
  if (p.computeDType != "f32" && p.computeDType != "f16" &&
      p.computeDType != "bf16")
    fail("computeDType",
         quoted(p.computeDType) + ": must be \"f32\", \"f16\" or \"bf16\"");
  checkParameters();
  if (p.scratchOffset > p.arenaBytes)
    fail("scratchOffset", std::to_string(p.scratchOffset) +
                              ": past the end of the arena (arenaBytes " +
                              std::to_string(p.arenaBytes) + ")");
  std::set<std::string> kernelNames;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    checkKernel(i);
    if (!kernelNames.insert(p.kernels[i].name).second)
      fail(at(at("kernels", i), "name"),
           quoted(p.kernels[i].name) + ": a second kernel of that name");
  }
  std::set<std::string> functionNames;
  for (size_t i = 0; i < p.functions.size(); ++i) {
    checkFunction(i);
    if (!functionNames.insert(p.functions[i].name).second)
      fail(at(at("functions", i), "name"),
           quoted(p.functions[i].name) + ": a second function of that name");
  }
  // Kernel scratch lies after every function's plan.
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    if (p.kernels[k].scratchBytes == 0)
      continue;
    for (size_t f = 0; f < p.functions.size(); ++f)
      if (p.functions[f].arenaBytes > p.scratchOffset)
        fail("scratchOffset",
             std::to_string(p.scratchOffset) + ": kernel " +
                 quoted(p.kernels[k].name) +
                 " uses scratch there, inside the plan of function " +
                 quoted(p.functions[f].name) + " (arenaBytes " +
                 std::to_string(p.functions[f].arenaBytes) + ")");
  }
}

void Validator::checkParameters() {
  std::set<std::string> names;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    const ParameterSlot &s = p.parameters[i];
    std::string path = at("parameters", i);
    if (s.name.empty())
      fail(at(path, "name"), "empty: every parameter has a reference name");
    utf8(s.name, at(path, "name"));
    if (!names.insert(s.name).second)
      fail(at(path, "name"),
           quoted(s.name) + ": a second parameter of that name");
    uint64_t elements = 1;
    for (size_t d = 0; d < s.shape.size(); ++d) {
      std::string dp = at(at(path, "shape"), d);
      if (s.shape[d] < 0)
        fail(dp, std::to_string(s.shape[d]) + ": a size must be >= 0");
      elements = mul(elements, static_cast<uint64_t>(s.shape[d]), dp);
    }
    uint64_t end = add(s.offset, elements, at(path, "offset"));
    if (end > p.workspaceElements)
      fail(at(path, "offset"),
           std::to_string(s.offset) + ": slot [" + std::to_string(s.offset) +
               ", " + std::to_string(end) +
               ") ends past the workspace (workspaceElements " +
               std::to_string(p.workspaceElements) + ")");
    if (elements > 0)
      ranges.push_back({s.offset, end, i});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.begin < b.begin || (a.begin == b.begin && a.index < b.index);
  });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end) {
      const Range &a = ranges[i - 1], &b = ranges[i];
      fail(at(at("parameters", b.index), "offset"),
           std::to_string(b.begin) + ": slot " +
               quoted(p.parameters[b.index].name) + " [" +
               std::to_string(b.begin) + ", " + std::to_string(b.end) +
               ") overlaps parameters[" + std::to_string(a.index) + "] " +
               quoted(p.parameters[a.index].name) + " [" +
               std::to_string(a.begin) + ", " + std::to_string(a.end) + ")");
    }
}

void Validator::checkKernel(size_t index) {
  const Kernel &k = p.kernels[index];
  std::string path = at("kernels", index);
  if (!isCIdentifier(k.name))
    fail(at(path, "name"),
         quoted(k.name) + ": not a C identifier ([A-Za-z_][A-Za-z0-9_]*)");
  std::string sp = at(path, "source");
  if (k.source.empty())
    fail(sp, "missing: every kernel carries its CUDA source");
  if (k.source.find('\0') != std::string::npos)
    fail(sp, "contains a NUL byte (NVRTC takes a C string)");
  if (k.source.find(k.name) == std::string::npos)
    fail(sp, "does not mention the kernel's name " + quoted(k.name));
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i] != ParamKind::Pointer && k.params[i] != ParamKind::Int64)
      fail(at(at(path, "params"), i),
           std::to_string(static_cast<unsigned>(k.params[i])) +
               ": not a parameter kind");
  const LaunchConfig &l = k.launch;
  std::string lp = at(path, "launch");
  if (l.blockThreads < 1 || l.blockThreads > 1024 || l.blockThreads % 32)
    fail(at(lp, "blockThreads"),
         std::to_string(l.blockThreads) +
             ": must be in 1..1024 and a multiple of 32 (whole warps)");
  if (l.dynamicSharedBytes > kMaxDynamicSharedBytes)
    fail(at(lp, "dynamicSharedBytes"),
         std::to_string(l.dynamicSharedBytes) + ": more than the " +
             std::to_string(kMaxDynamicSharedBytes) +
             " bytes (227 KiB) a block may use");
  if (l.maxBlocks < 1)
    fail(at(lp, "maxBlocks"), "0: must be >= 1");
  if (l.workPerBlock < 1)
    fail(at(lp, "workPerBlock"), "0: must be >= 1");
  // A dynamic work dim names an int64 parameter of this kernel (its value at
  // a launch is that launch's argument); the bound is checked per launch
  // (checkLaunch).
  for (size_t i = 0; i < l.work.size(); ++i) {
    const Dim &d = l.work[i];
    std::string dp = at(at(lp, "work"), i);
    if (d.isStatic()) {
      if (d.size < 0)
        fail(dp, std::to_string(d.size) + ": a static size must be >= 0");
      continue;
    }
    if (static_cast<size_t>(d.argument) >= k.params.size())
      fail(at(dp, "argument"),
           std::to_string(d.argument) + ": kernel " + quoted(k.name) + " has " +
               std::to_string(k.params.size()) +
               " parameters (a dynamic work dim names an int64 parameter "
               "of its kernel)");
    if (k.params[static_cast<size_t>(d.argument)] != ParamKind::Int64)
      fail(at(dp, "argument"),
           std::to_string(d.argument) + ": parameter " +
               std::to_string(d.argument) + " of kernel " + quoted(k.name) +
               " is a pointer (a dynamic work dim names an int64 parameter)");
    if (d.axis != 0)
      fail(at(dp, "axis"),
           std::to_string(d.axis) +
               ": must be 0 (a dynamic work dim is the value of an int64 "
               "parameter, a scalar)");
    checkFraction(d, dp);
  }
  uint64_t end = add(p.scratchOffset, k.scratchBytes, at(path, "scratchBytes"));
  if (end > p.arenaBytes)
    fail(at(path, "scratchBytes"),
         std::to_string(k.scratchBytes) + ": scratch [" +
             std::to_string(p.scratchOffset) + ", " + std::to_string(end) +
             ") at scratchOffset ends past the arena (arenaBytes " +
             std::to_string(p.arenaBytes) + ")");
  for (const auto &[arch, image] : k.cubins) {
    std::string cp = at(path, "cubins") + "." + arch;
    if (!isArchName(arch))
      fail(at(path, "cubins"), quoted(arch) +
                                   ": not an arch name (sm_ and 1 to 5 "
                                   "digits, e.g. sm_90)");
    if (image.size() < 4 || image.compare(0, 4,
                                          "\x7f"
                                          "ELF") != 0)
      fail(cp, "not a cubin: does not start with the ELF magic 7f 45 4c 46");
  }
}

void Validator::checkTensorStructure(const TensorSpec &t,
                                     const std::string &path) {
  utf8(t.name, at(path, "name"));
  switch (t.kind) {
  case ArgumentKind::Parameter:
  case ArgumentKind::Input:
  case ArgumentKind::Workspace:
  case ArgumentKind::State:
  case ArgumentKind::Buffer:
  case ArgumentKind::Output:
  case ArgumentKind::Gradient:
  case ArgumentKind::Loss:
    break;
  default:
    fail(at(path, "kind"), std::to_string(static_cast<unsigned>(t.kind)) +
                               ": not an argument kind");
  }
  dtype(t.dtype, at(path, "dtype"), false);
  if (t.maxShape.size() != t.shape.size())
    fail(at(path, "maxShape"), "has " + std::to_string(t.maxShape.size()) +
                                   " dims but shape has " +
                                   std::to_string(t.shape.size()));
  for (size_t i = 0; i < t.maxShape.size(); ++i)
    if (t.maxShape[i] < 0)
      fail(at(at(path, "maxShape"), i),
           std::to_string(t.maxShape[i]) + ": a bound must be >= 0");
}

void Validator::checkTensorDims(const TensorSpec &t, const std::string &path) {
  for (size_t i = 0; i < t.shape.size(); ++i) {
    const Dim &d = t.shape[i];
    std::string dp = at(at(path, "shape"), i);
    checkDim(d, dp);
    int64_t b = dimBound(d, *fn);
    // A static dim is its bound; a dynamic one never exceeds the bound of
    // the argument axis it names (times multiplier / divisor), so storage
    // sized at maxShape must cover that.
    if (d.isStatic() && b != t.maxShape[i])
      fail(at(at(path, "maxShape"), i),
           std::to_string(t.maxShape[i]) + ": differs from shape[" +
               std::to_string(i) + "], the static size " + std::to_string(b));
    if (!d.isStatic() && t.maxShape[i] < b)
      fail(at(at(path, "maxShape"), i),
           std::to_string(t.maxShape[i]) + ": smaller than the bound " +
               std::to_string(b) + " of shape[" + std::to_string(i) +
               "] (from the maxShape of the argument axis it names)");
  }
}

void Validator::checkFraction(const Dim &d, const std::string &path) const {
  if (d.multiplier < 1)
    fail(at(path, "multiplier"),
         std::to_string(d.multiplier) + ": must be >= 1");
  if (d.divisor < 1)
    fail(at(path, "divisor"), std::to_string(d.divisor) + ": must be >= 1");
  if (std::gcd(d.multiplier, d.divisor) != 1)
    fail(at(path, "divisor"),
         std::to_string(d.divisor) + ": not coprime with the multiplier " +
             std::to_string(d.multiplier) + " (write the reduced fraction)");
}

void Validator::checkDim(const Dim &d, const std::string &path) const {
  if (d.isStatic()) {
    if (d.size < 0)
      fail(path, std::to_string(d.size) + ": a static size must be >= 0");
    return;
  }
  const auto &args = fn->arguments;
  if (static_cast<size_t>(d.argument) >= args.size())
    fail(at(path, "argument"), std::to_string(d.argument) + ": function " +
                                   quoted(fn->name) + " has " +
                                   std::to_string(args.size()) + " arguments");
  const TensorSpec &a = args[static_cast<size_t>(d.argument)];
  if (d.axis < 0)
    fail(at(path, "axis"), std::to_string(d.axis) + ": must be >= 0");
  if (static_cast<size_t>(d.axis) >= a.shape.size())
    fail(at(path, "axis"),
         std::to_string(d.axis) + ": argument " + std::to_string(d.argument) +
             " " + quoted(a.name) + " of function " + quoted(fn->name) +
             " has rank " + std::to_string(a.shape.size()));
  checkFraction(d, path);
  // The bound (dimBound) must not overflow.
  uint64_t scaled =
      mul(static_cast<uint64_t>(a.maxShape[static_cast<size_t>(d.axis)]),
          static_cast<uint64_t>(d.multiplier), at(path, "multiplier"));
  if (scaled > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(at(path, "multiplier"), std::to_string(d.multiplier) + ": the bound " +
                                     std::to_string(scaled) +
                                     " (times the argument's maxShape) " +
                                     "overflows 63 bits");
}

void Validator::checkRef(const BufferRef &r, const std::string &path) const {
  uint64_t limit;
  std::string what;
  switch (r.space) {
  case BufferRef::Space::Arena:
    limit = p.arenaBytes;
    what = "the arena (arenaBytes " + std::to_string(p.arenaBytes) + ")";
    break;
  case BufferRef::Space::Argument:
  case BufferRef::Space::Result: {
    bool arg = r.space == BufferRef::Space::Argument;
    const auto &list = arg ? fn->arguments : fn->results;
    if (r.index >= list.size())
      fail(at(path, "index"), std::to_string(r.index) + ": function " +
                                  quoted(fn->name) + " has " +
                                  std::to_string(list.size()) +
                                  (arg ? " arguments" : " results"));
    limit = (arg ? argumentBytes : resultBytes)[r.index];
    what = std::string(arg ? "argument " : "result ") +
           std::to_string(r.index) + " " + quoted(list[r.index].name) + " (" +
           std::to_string(limit) + " bytes at its maxShape)";
    break;
  }
  default:
    fail(at(path, "space"), std::to_string(static_cast<unsigned>(r.space)) +
                                ": not a buffer space");
  }
  if (r.byteOffset > limit)
    fail(at(path, "byteOffset"),
         std::to_string(r.byteOffset) + ": starts past the end of " + what);
  uint64_t end = add(r.byteOffset, r.maxBytes, at(path, "maxBytes"));
  if (end > limit)
    fail(at(path, "maxBytes"), std::to_string(r.maxBytes) + ": range [" +
                                   std::to_string(r.byteOffset) + ", " +
                                   std::to_string(end) +
                                   ") ends past the end of " + what);
}

void Validator::requireBytes(const BufferRef &r, const std::string &path,
                             uint64_t needed, const std::string &why) const {
  checkRef(r, path);
  if (r.maxBytes < needed)
    fail(at(path, "maxBytes"), std::to_string(r.maxBytes) +
                                   ": smaller than the " +
                                   std::to_string(needed) + " bytes " + why +
                                   " needs at the shape bounds");
}

uint64_t Validator::extent(uint64_t batch, uint64_t stride, uint64_t rows,
                           uint64_t ld, uint64_t cols, unsigned elementBytes,
                           const std::string &where) const {
  if (batch == 0 || rows == 0 || cols == 0)
    return 0;
  uint64_t elements =
      add(add(mul(batch - 1, stride, where), mul(rows - 1, ld, where), where),
          cols, where);
  return mul(elements, elementBytes, where);
}

void Validator::checkFunction(size_t index) {
  const Function &f = p.functions[index];
  fn = &f;
  fnPath = at("functions", index);
  if (f.name.empty())
    fail(at(fnPath, "name"), "empty: every function has a name");
  utf8(f.name, at(fnPath, "name"));
  if (f.arenaBytes > p.arenaBytes)
    fail(at(fnPath, "arenaBytes"),
         std::to_string(f.arenaBytes) +
             ": more than the program's arena (arenaBytes " +
             std::to_string(p.arenaBytes) + ")");
  // Structure first: dims may name any argument, so every argument's rank
  // and bounds must be known good before any dim is resolved.
  for (size_t i = 0; i < f.arguments.size(); ++i)
    checkTensorStructure(f.arguments[i], at(at(fnPath, "arguments"), i));
  for (size_t i = 0; i < f.results.size(); ++i)
    checkTensorStructure(f.results[i], at(at(fnPath, "results"), i));
  auto bytesOf = [&](const TensorSpec &t, const std::string &path) {
    uint64_t bytes = dtypeBytes(t.dtype);
    for (int64_t d : t.maxShape)
      bytes = mul(bytes, static_cast<uint64_t>(d), at(path, "maxShape"));
    return bytes;
  };
  argumentBytes.clear();
  resultBytes.clear();
  for (size_t i = 0; i < f.arguments.size(); ++i) {
    std::string path = at(at(fnPath, "arguments"), i);
    checkTensorDims(f.arguments[i], path);
    argumentBytes.push_back(bytesOf(f.arguments[i], path));
  }
  for (size_t i = 0; i < f.results.size(); ++i) {
    std::string path = at(at(fnPath, "results"), i);
    checkTensorDims(f.results[i], path);
    resultBytes.push_back(bytesOf(f.results[i], path));
    const TensorSpec &r = f.results[i];
    if (r.inPlaceOf < 0)
      continue;
    if (static_cast<size_t>(r.inPlaceOf) >= f.arguments.size())
      fail(at(path, "inPlaceOf"), std::to_string(r.inPlaceOf) + ": the function has " +
                                      std::to_string(f.arguments.size()) + " arguments");
    const TensorSpec &a = f.arguments[static_cast<size_t>(r.inPlaceOf)];
    if (a.name != r.name || a.dtype != r.dtype || a.maxShape != r.maxShape)
      fail(at(path, "inPlaceOf"), std::to_string(r.inPlaceOf) + ": argument '" + a.name +
                                      "' differs in name, dtype or shape from the result");
  }
  for (size_t i = 0; i < f.steps.size(); ++i) {
    const Step &s = f.steps[i];
    std::string path = at(at(fnPath, "steps"), i);
    switch (s.kind) {
    case Step::Kind::Launch:
      checkLaunch(s, path);
      break;
    case Step::Kind::Gemm:
      checkGemm(s.gemm, at(path, "gemm"));
      break;
    case Step::Kind::Attention:
      checkAttention(s.attention, at(path, "attention"));
      checkFallback(f, i, at(path, "attention"));
      break;
    case Step::Kind::Copy:
      checkCopy(s, path);
      break;
    default:
      fail(at(path, "kind"),
           std::to_string(static_cast<unsigned>(s.kind)) + ": not a step kind");
    }
  }
  fn = nullptr;
}

void Validator::checkLaunch(const Step &s, const std::string &path) {
  if (s.kernel >= p.kernels.size())
    fail(at(path, "kernel"), std::to_string(s.kernel) + ": the program has " +
                                 std::to_string(p.kernels.size()) + " kernels");
  const Kernel &k = p.kernels[s.kernel];
  std::string kernelText =
      "kernel " + std::to_string(s.kernel) + " " + quoted(k.name);
  if (s.args.size() != k.params.size())
    fail(at(path, "args"), std::to_string(s.args.size()) + " arguments, but " +
                               kernelText + " takes " +
                               std::to_string(k.params.size()) + " parameters");
  for (size_t i = 0; i < s.args.size(); ++i) {
    const KernelArg &a = s.args[i];
    std::string ap = at(at(path, "args"), i);
    if (a.kind != k.params[i])
      fail(at(ap, "kind"),
           std::string(a.kind == ParamKind::Pointer ? "pointer"
                       : a.kind == ParamKind::Int64 ? "int64"
                                                    : "?") +
               ": parameter " + std::to_string(i) + " of " + kernelText +
               " is " +
               (k.params[i] == ParamKind::Pointer ? "a pointer" : "an int64"));
    if (a.kind == ParamKind::Pointer)
      checkRef(a.buffer, at(ap, "buffer"));
    else
      checkDim(a.value, at(ap, "value"));
  }
  // The work at this launch: a dynamic work dim's bound is the bound of
  // the int64 argument it names (checkKernel made sure it names one) times
  // multiplier / divisor; each bound and their product fit 63 bits, so the
  // runtime's grid computation cannot overflow.
  constexpr auto kMax =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  std::string wp = at(at(at("kernels", s.kernel), "launch"), "work");
  uint64_t work = 1;
  for (size_t i = 0; i < k.launch.work.size(); ++i) {
    const Dim &d = k.launch.work[i];
    uint64_t b;
    if (d.isStatic()) {
      b = static_cast<uint64_t>(d.size);
    } else {
      std::string vp =
          at(at(at(path, "args"), static_cast<size_t>(d.argument)), "value");
      uint64_t v = bound(s.args[static_cast<size_t>(d.argument)].value);
      uint64_t scaled;
      if (__builtin_mul_overflow(v, static_cast<uint64_t>(d.multiplier),
                                 &scaled) ||
          scaled > kMax)
        fail(at(at(wp, i), "multiplier"),
             std::to_string(d.multiplier) + ": times the bound " +
                 std::to_string(v) + " of " + vp +
                 " (the launch's int64 argument) overflows 63 bits");
      b = scaled / static_cast<uint64_t>(d.divisor);
    }
    if (__builtin_mul_overflow(work, b, &work) || work > kMax)
      fail(wp, "the product of the work dims' bounds at the launch at " + path +
                   " overflows 63 bits");
  }
}

void Validator::checkGemm(const Gemm &g, const std::string &path) {
  dtype(g.aType, at(path, "aType"), true);
  dtype(g.bType, at(path, "bType"), true);
  dtype(g.cType, at(path, "cType"), true);
  dtype(g.biasType, at(path, "biasType"), true);
  const std::pair<const Dim *, const char *> dims[] = {
      {&g.m, "m"}, {&g.n, "n"}, {&g.k, "k"}, {&g.batch, "batch"}};
  for (const auto &[d, key] : dims) {
    checkDim(*d, at(path, key));
    if (d->isStatic() && d->size < 1)
      fail(at(path, key),
           std::to_string(d->size) + ": a static GEMM dim must be >= 1");
  }
  const std::pair<int64_t, const char *> lds[] = {
      {g.lda, "lda"}, {g.ldb, "ldb"}, {g.ldc, "ldc"}};
  for (const auto &[ld, key] : lds)
    if (ld < 1)
      fail(at(path, key),
           std::to_string(ld) + ": a leading dimension must be >= 1");
  const std::pair<int64_t, const char *> strides[] = {
      {g.strideA, "strideA"}, {g.strideB, "strideB"}, {g.strideC, "strideC"}};
  for (const auto &[stride, key] : strides)
    if (stride < 0)
      fail(at(path, key), std::to_string(stride) +
                              ": a batch stride must be >= 0 (0 shares the "
                              "matrix across the batch)");
  if (static_cast<unsigned>(g.epilogue) >
      static_cast<unsigned>(GemmEpilogue::DGeluBGrad))
    fail(at(path, "epilogue"),
         std::to_string(static_cast<unsigned>(g.epilogue)) +
             ": not an epilogue");
  uint64_t M = bound(g.m), N = bound(g.n), K = bound(g.k), B = bound(g.batch);
  auto U = [](int64_t v) { return static_cast<uint64_t>(v); };
  std::string bounds = "(M " + std::to_string(M) + ", N " + std::to_string(N) +
                       ", K " + std::to_string(K) + ", batch " +
                       std::to_string(B) + ")";
  // A is [M, K], or [K, M] stored when transposed; B is [K, N] or [N, K].
  uint64_t rowsA = g.transposeA ? K : M, colsA = g.transposeA ? M : K;
  uint64_t rowsB = g.transposeB ? N : K, colsB = g.transposeB ? K : N;
  if (U(g.lda) < colsA)
    fail(at(path, "lda"),
         std::to_string(g.lda) + ": less than " + (g.transposeA ? "M " : "K ") +
             std::to_string(colsA) + ", the row length of A (stored " +
             (g.transposeA ? "[K, M], transposed)" : "[M, K])"));
  if (U(g.ldb) < colsB)
    fail(at(path, "ldb"),
         std::to_string(g.ldb) + ": less than " + (g.transposeB ? "K " : "N ") +
             std::to_string(colsB) + ", the row length of B (stored " +
             (g.transposeB ? "[N, K], transposed)" : "[K, N])"));
  if (U(g.ldc) < N)
    fail(at(path, "ldc"), std::to_string(g.ldc) + ": less than N " +
                              std::to_string(N) + ", the row length of C");
  if (B > 1 && M > 0 && U(g.strideC) < mul(M, U(g.ldc), at(path, "strideC")))
    fail(at(path, "strideC"),
         std::to_string(g.strideC) + ": less than M * ldc = " +
             std::to_string(M * U(g.ldc)) + ", so batches of C overlap");
  if (g.epilogue == GemmEpilogue::BiasGradA &&
      (!g.transposeA || !g.batch.isStatic() || g.batch.size != 1))
    fail(at(path, "epilogue"),
         "bias_grad_a: needs a transposed A and batch 1 (the bias gradient "
         "sums A's rows)");
  if (epilogueIsActivation(g.epilogue) &&
      (!g.batch.isStatic() || g.batch.size != 1))
    fail(at(path, "epilogue"),
         std::string(epilogueName(g.epilogue)) +
             ": needs batch 1 (activation epilogues take one matrix)");
  requireBytes(g.a, at(path, "a"),
               extent(B, U(g.strideA), rowsA, U(g.lda), colsA,
                      dtypeBytes(g.aType), at(path, "a")),
               "A " + bounds);
  requireBytes(g.b, at(path, "b"),
               extent(B, U(g.strideB), rowsB, U(g.ldb), colsB,
                      dtypeBytes(g.bType), at(path, "b")),
               "B " + bounds);
  requireBytes(g.c, at(path, "c"),
               extent(B, U(g.strideC), M, U(g.ldc), N, dtypeBytes(g.cType),
                      at(path, "c")),
               "C " + bounds);
  if (epilogueHasBias(g.epilogue))
    requireBytes(g.bias, at(path, "bias"),
                 mul(N, dtypeBytes(g.biasType), at(path, "bias")),
                 "the bias [N] " + bounds);
  if (g.epilogue == GemmEpilogue::BiasGradA)
    requireBytes(g.biasGrad, at(path, "biasGrad"),
                 mul(M, dtypeBytes(g.biasType), at(path, "biasGrad")),
                 "the bias gradient [M] " + bounds);
  if (!epilogueIsActivation(g.epilogue))
    return;
  // Activation epilogues (cuBLASLt's rules): one matrix, the bias and the
  // bias gradient in c's dtype, the aux matrix's leading dimension a
  // multiple of 128 bits (ReLU mask) or 8 elements (GELU input) and >= N.
  const char *name = epilogueName(g.epilogue);
  if ((epilogueHasBias(g.epilogue) || epilogueHasBiasGrad(g.epilogue)) &&
      g.biasType != g.cType)
    fail(at(path, "biasType"),
         std::string(dtypeName(g.biasType)) + ": " + name +
             " needs the bias (gradient) in c's dtype " + dtypeName(g.cType) +
             " (cuBLASLt's rule)");
  if (epilogueHasBiasGrad(g.epilogue))
    requireBytes(g.biasGrad, at(path, "biasGrad"),
                 mul(N, dtypeBytes(g.biasType), at(path, "biasGrad")),
                 "the bias gradient [N] " + bounds);
  if (!epilogueWritesAux(g.epilogue) && !epilogueReadsAux(g.epilogue))
    return;
  bool relu = epilogueIsRelu(g.epilogue);
  int64_t unit = relu ? 128 : 8;
  if (g.auxLd < 1 || g.auxLd % unit != 0 || U(g.auxLd) < N)
    fail(at(path, "auxLd"),
         std::to_string(g.auxLd) + ": " + name + " needs a multiple of " +
             std::to_string(unit) + (relu ? " bits" : " elements") +
             " that is >= N " + std::to_string(N) +
             " (cuBLASLt's CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD rule)");
  uint64_t auxBytes =
      relu ? mul(M, U(g.auxLd) / 8, at(path, "aux"))
           : extent(1, 0, M, U(g.auxLd), N, dtypeBytes(g.cType), at(path, "aux"));
  requireBytes(g.aux, at(path, "aux"), auxBytes,
               std::string(relu ? "the ReLU bit mask [M, auxLd bits] "
                                : "the GELU input [M, auxLd] ") +
                   bounds);
}

// An attention step's fallback is the launches right after it (the
// runtime skips them after cuDNN ran the call, or runs them instead).
void Validator::checkFallback(const Function &f, size_t step, const std::string &path) {
  const Attention &a = f.steps[step].attention;
  if (a.maxSeqLen < 0)
    fail(at(path, "maxSeqLen"), std::to_string(a.maxSeqLen) + ": must be >= 0 (0 = unknown)");
  if (a.fallbackSteps > f.steps.size() - step - 1)
    fail(at(path, "fallbackSteps"),
         std::to_string(a.fallbackSteps) + ": only " + std::to_string(f.steps.size() - step - 1) +
             " steps follow this one");
  for (size_t i = step + 1; i <= step + a.fallbackSteps; ++i)
    if (f.steps[i].kind != Step::Kind::Launch)
      fail(at(path, "fallbackSteps"), std::to_string(a.fallbackSteps) + ": step " +
                                          std::to_string(i) +
                                          " is not a kernel launch (a fallback is launches)");
}

void Validator::checkAttention(const Attention &a, const std::string &path) {
  dtype(a.dtype, at(path, "dtype"), true);
  if (a.heads < 1)
    fail(at(path, "heads"), "0: must be >= 1");
  if (a.kvHeads < 1)
    fail(at(path, "kvHeads"), "0: must be >= 1");
  if (a.heads % a.kvHeads)
    fail(at(path, "kvHeads"), std::to_string(a.kvHeads) +
                                  ": does not divide heads " +
                                  std::to_string(a.heads));
  if (a.headDim < 1)
    fail(at(path, "headDim"), "0: must be >= 1");
  if (!std::isfinite(a.scale) || a.scale <= 0)
    fail(at(path, "scale"), real(a.scale) + ": must be finite and > 0");
  if (!std::isfinite(a.dropoutRate) || a.dropoutRate < 0 || a.dropoutRate >= 1)
    fail(at(path, "dropoutRate"), real(a.dropoutRate) + ": must be in [0, 1)");
  checkDim(a.tokensQ, at(path, "tokensQ"));
  checkDim(a.tokensK, at(path, "tokensK"));
  checkDim(a.batchPlusOne, at(path, "batchPlusOne"));
  if (a.batchPlusOne.isStatic() && a.batchPlusOne.size < 1)
    fail(at(path, "batchPlusOne"),
         std::to_string(a.batchPlusOne.size) + ": must be >= 1 (B + 1)");
  uint64_t Tq = bound(a.tokensQ), Tk = bound(a.tokensK),
           B1 = bound(a.batchPlusOne);
  uint64_t qWidth = uint64_t(a.heads) * a.headDim;
  uint64_t kvWidth = uint64_t(a.kvHeads) * a.headDim;
  unsigned e = dtypeBytes(a.dtype);
  std::string bounds =
      "(Tq " + std::to_string(Tq) + ", Tk " + std::to_string(Tk) + ", heads " +
      std::to_string(a.heads) + ", kvHeads " + std::to_string(a.kvHeads) +
      ", headDim " + std::to_string(a.headDim) + ")";
  auto rows = [&](const BufferRef &ref, const char *key, int64_t stride,
                  const char *strideKey, uint64_t tokens, uint64_t width,
                  const char *what) {
    if (stride < 0 || static_cast<uint64_t>(stride) < width)
      fail(at(path, strideKey),
           std::to_string(stride) + ": less than the row width " +
               std::to_string(width) + " (elements) of " + what);
    requireBytes(ref, at(path, key),
                 extent(1, 0, tokens, static_cast<uint64_t>(stride), width, e,
                        at(path, key)),
                 std::string(what) + " " + bounds);
  };
  rows(a.q, "q", a.strideQ, "strideQ", Tq, qWidth, "q [Tq, heads, headDim]");
  rows(a.k, "k", a.strideK, "strideK", Tk, kvWidth, "k [Tk, kvHeads, headDim]");
  rows(a.v, "v", a.strideV, "strideV", Tk, kvWidth, "v [Tk, kvHeads, headDim]");
  rows(a.out, "out", a.strideO, "strideO", Tq, qWidth,
       "out [Tq, heads, headDim]");
  requireBytes(a.lse, at(path, "lse"),
               mul(mul(Tq, a.heads, at(path, "lse")), 4, at(path, "lse")),
               "lse [Tq, heads] f32 " + bounds);
  requireBytes(a.cuSeqlensQ, at(path, "cuSeqlensQ"),
               mul(B1, 4, at(path, "cuSeqlensQ")), "cu_seqlens_q [B+1] i32");
  requireBytes(a.cuSeqlensK, at(path, "cuSeqlensK"),
               mul(B1, 4, at(path, "cuSeqlensK")), "cu_seqlens_k [B+1] i32");
  if (a.dropoutRate > 0) {
    requireBytes(a.seed, at(path, "seed"), 8, "the dropout seed (i64)");
    requireBytes(a.offset, at(path, "offset"), 8, "the dropout offset (i64)");
  }
  if (a.backward) {
    rows(a.dout, "dout", a.strideDO, "strideDO", Tq, qWidth,
         "dout [Tq, heads, headDim]");
    rows(a.dq, "dq", a.strideDQ, "strideDQ", Tq, qWidth,
         "dq [Tq, heads, headDim]");
    rows(a.dk, "dk", a.strideDK, "strideDK", Tk, kvWidth,
         "dk [Tk, kvHeads, headDim]");
    rows(a.dv, "dv", a.strideDV, "strideDV", Tk, kvWidth,
         "dv [Tk, kvHeads, headDim]");
  }
}

void Validator::checkCopy(const Step &s, const std::string &path) {
  const BufferRef &from = s.copySource, &to = s.copyDestination;
  checkRef(from, at(path, "copySource"));
  requireBytes(to, at(path, "copyDestination"), from.maxBytes,
               "the copy (copySource.maxBytes)");
  // Both ranges are valid, so their ends do not overflow.
  bool sameBuffer =
      from.space == to.space &&
      (from.space == BufferRef::Space::Arena || from.index == to.index);
  if (sameBuffer && from.maxBytes > 0 &&
      from.byteOffset < to.byteOffset + from.maxBytes &&
      to.byteOffset < from.byteOffset + from.maxBytes)
    fail(at(at(path, "copyDestination"), "byteOffset"),
         std::to_string(to.byteOffset) + ": the copy's destination [" +
             std::to_string(to.byteOffset) + ", " +
             std::to_string(to.byteOffset + from.maxBytes) +
             ") overlaps its source [" + std::to_string(from.byteOffset) +
             ", " + std::to_string(from.byteOffset + from.maxBytes) + ")");
}

} // namespace

int64_t dimBound(const Dim &dim, const Function &function) {
  if (dim.isStatic())
    return dim.size;
  // Values are exact quotients of values <= the bound: floor is the bound.
  int64_t argumentBound = function.arguments[static_cast<size_t>(dim.argument)]
                              .maxShape[static_cast<size_t>(dim.axis)];
  return argumentBound * dim.multiplier / dim.divisor;
}

uint64_t tensorMaxBytes(const TensorSpec &tensor) {
  uint64_t bytes = dtypeBytes(tensor.dtype);
  for (int64_t d : tensor.maxShape)
    bytes *= static_cast<uint64_t>(d);
  return bytes;
}

void validateProgram(const Program &program, const std::string &nameForErrors) {
  Validator(program, nameForErrors).run();
}

} // namespace ls2c::runtime
