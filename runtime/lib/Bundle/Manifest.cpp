//===- Manifest.cpp - a Program as bundle sections ------------------------===//
//
// docs/bundle-format.md ("Manifest") specifies the JSON. Reading is strict:
// every key is required, unknown keys are refused, every number has the
// JSON type and range its field needs, and nlohmann's own exceptions never
// escape (they become BundleErrors naming the path being read).
//
//===----------------------------------------------------------------------===//
#include "Manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace ls2c::runtime::detail {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

/// Nesting deeper than any manifest needs is refused before it is built.
constexpr size_t kMaxJsonDepth = 32;

//===----------------------------------------------------------------------===//
// Enum spellings
//===----------------------------------------------------------------------===//

template <typename E> struct Spelling {
  E value;
  const char *name;
};

constexpr Spelling<BufferRef::Space> kSpaces[] = {
    {BufferRef::Space::Arena, "arena"},
    {BufferRef::Space::Argument, "argument"},
    {BufferRef::Space::Result, "result"}};
constexpr Spelling<ArgumentKind> kArgumentKinds[] = {
    {ArgumentKind::Parameter, "parameter"}, {ArgumentKind::Input, "input"},
    {ArgumentKind::Workspace, "workspace"}, {ArgumentKind::State, "state"},
    {ArgumentKind::Buffer, "buffer"},       {ArgumentKind::Output, "output"},
    {ArgumentKind::Gradient, "gradient"},   {ArgumentKind::Loss, "loss"}};
constexpr Spelling<ParamKind> kParamKinds[] = {{ParamKind::Pointer, "pointer"},
                                               {ParamKind::Int64, "int64"}};
constexpr Spelling<Step::Kind> kStepKinds[] = {
    {Step::Kind::Launch, "launch"},
    {Step::Kind::Gemm, "gemm"},
    {Step::Kind::Attention, "attention"},
    {Step::Kind::Copy, "copy"}};
constexpr Spelling<GemmEpilogue> kEpilogues[] = {
    {GemmEpilogue::None, "none"},
    {GemmEpilogue::Bias, "bias"},
    {GemmEpilogue::BiasGradA, "bias_grad_a"},
    {GemmEpilogue::Relu, "relu"},
    {GemmEpilogue::ReluAux, "relu_aux"},
    {GemmEpilogue::ReluBias, "relu_bias"},
    {GemmEpilogue::ReluAuxBias, "relu_aux_bias"},
    {GemmEpilogue::Gelu, "gelu"},
    {GemmEpilogue::GeluAux, "gelu_aux"},
    {GemmEpilogue::GeluBias, "gelu_bias"},
    {GemmEpilogue::GeluAuxBias, "gelu_aux_bias"},
    {GemmEpilogue::DRelu, "drelu"},
    {GemmEpilogue::DReluBGrad, "drelu_bgrad"},
    {GemmEpilogue::DGelu, "dgelu"},
    {GemmEpilogue::DGeluBGrad, "dgelu_bgrad"}};
/// Format version 1 knew only these.
constexpr Spelling<GemmEpilogue> kEpiloguesV1[] = {
    {GemmEpilogue::None, "none"},
    {GemmEpilogue::Bias, "bias"},
    {GemmEpilogue::BiasGradA, "bias_grad_a"}};

template <typename E, size_t N>
const char *spell(const Spelling<E> (&table)[N], E value) {
  for (const auto &s : table)
    if (s.value == value)
      return s.name;
  return "?"; // unreachable for a validated program
}

template <typename E, size_t N>
std::string spellings(const Spelling<E> (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i)
    out += std::string(i ? (i + 1 == N ? " or \"" : ", \"") : "\"") +
           table[i].name + "\"";
  return out;
}

std::string at(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}
std::string at(const std::string &path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

ojson dimJson(const Dim &d) {
  if (d.isStatic())
    return d.size;
  ojson j = ojson::object();
  j["argument"] = d.argument;
  j["axis"] = d.axis;
  if (d.multiplier != 1) // optional keys: 1 when absent
    j["multiplier"] = d.multiplier;
  if (d.divisor != 1)
    j["divisor"] = d.divisor;
  return j;
}

ojson dimsJson(const std::vector<Dim> &dims) {
  ojson j = ojson::array();
  for (const Dim &d : dims)
    j.push_back(dimJson(d));
  return j;
}

ojson intsJson(const std::vector<int64_t> &values) {
  ojson j = ojson::array();
  for (int64_t v : values)
    j.push_back(v);
  return j;
}

ojson refJson(const BufferRef &r) {
  ojson j = ojson::object();
  j["space"] = spell(kSpaces, r.space);
  j["index"] = r.index;
  j["byteOffset"] = r.byteOffset;
  j["maxBytes"] = r.maxBytes;
  return j;
}

ojson tensorJson(const TensorSpec &t) {
  ojson j = ojson::object();
  j["name"] = t.name;
  j["kind"] = spell(kArgumentKinds, t.kind);
  j["dtype"] = dtypeName(t.dtype);
  j["shape"] = dimsJson(t.shape);
  j["maxShape"] = intsJson(t.maxShape);
  if (t.inPlaceOf >= 0) // optional: -1 when absent
    j["inPlaceOf"] = t.inPlaceOf;
  return j;
}

ojson gemmJson(const Gemm &g) {
  ojson j = ojson::object();
  j["a"] = refJson(g.a);
  j["b"] = refJson(g.b);
  j["c"] = refJson(g.c);
  j["bias"] = refJson(g.bias);
  j["biasGrad"] = refJson(g.biasGrad);
  j["aType"] = dtypeName(g.aType);
  j["bType"] = dtypeName(g.bType);
  j["cType"] = dtypeName(g.cType);
  j["biasType"] = dtypeName(g.biasType);
  j["transposeA"] = g.transposeA;
  j["transposeB"] = g.transposeB;
  j["m"] = dimJson(g.m);
  j["n"] = dimJson(g.n);
  j["k"] = dimJson(g.k);
  j["batch"] = dimJson(g.batch);
  j["lda"] = g.lda;
  j["ldb"] = g.ldb;
  j["ldc"] = g.ldc;
  j["strideA"] = g.strideA;
  j["strideB"] = g.strideB;
  j["strideC"] = g.strideC;
  j["epilogue"] = spell(kEpilogues, g.epilogue);
  j["aux"] = refJson(g.aux);
  j["auxLd"] = g.auxLd;
  return j;
}

ojson attentionJson(const Attention &a) {
  ojson j = ojson::object();
  j["backward"] = a.backward;
  j["dtype"] = dtypeName(a.dtype);
  j["heads"] = a.heads;
  j["kvHeads"] = a.kvHeads;
  j["headDim"] = a.headDim;
  j["causal"] = a.causal;
  // float -> double -> shortest decimal -> double -> float is exact.
  j["scale"] = static_cast<double>(a.scale);
  j["dropoutRate"] = static_cast<double>(a.dropoutRate);
  j["stream"] = a.stream;
  j["tokensQ"] = dimJson(a.tokensQ);
  j["tokensK"] = dimJson(a.tokensK);
  j["batchPlusOne"] = dimJson(a.batchPlusOne);
  j["strideQ"] = a.strideQ;
  j["strideK"] = a.strideK;
  j["strideV"] = a.strideV;
  j["strideO"] = a.strideO;
  j["q"] = refJson(a.q);
  j["k"] = refJson(a.k);
  j["v"] = refJson(a.v);
  j["out"] = refJson(a.out);
  j["lse"] = refJson(a.lse);
  j["cuSeqlensQ"] = refJson(a.cuSeqlensQ);
  j["cuSeqlensK"] = refJson(a.cuSeqlensK);
  j["seed"] = refJson(a.seed);
  j["offset"] = refJson(a.offset);
  j["dout"] = refJson(a.dout);
  j["dq"] = refJson(a.dq);
  j["dk"] = refJson(a.dk);
  j["dv"] = refJson(a.dv);
  j["strideDO"] = a.strideDO;
  j["strideDQ"] = a.strideDQ;
  j["strideDK"] = a.strideDK;
  j["strideDV"] = a.strideDV;
  j["fallbackSteps"] = a.fallbackSteps;
  j["maxSeqLen"] = a.maxSeqLen;
  return j;
}

ojson stepJson(const Step &s) {
  ojson j = ojson::object();
  j["kind"] = spell(kStepKinds, s.kind);
  switch (s.kind) {
  case Step::Kind::Launch: {
    j["kernel"] = s.kernel;
    ojson args = ojson::array();
    for (const KernelArg &a : s.args) {
      ojson aj = ojson::object();
      aj["kind"] = spell(kParamKinds, a.kind);
      if (a.kind == ParamKind::Pointer)
        aj["buffer"] = refJson(a.buffer);
      else
        aj["value"] = dimJson(a.value);
      args.push_back(std::move(aj));
    }
    j["args"] = std::move(args);
    break;
  }
  case Step::Kind::Gemm:
    j["gemm"] = gemmJson(s.gemm);
    break;
  case Step::Kind::Attention:
    j["attention"] = attentionJson(s.attention);
    break;
  case Step::Kind::Copy:
    j["copySource"] = refJson(s.copySource);
    j["copyDestination"] = refJson(s.copyDestination);
    break;
  }
  return j;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// The deepest nesting of arrays and objects in JSON text (a scan that skips
/// strings; malformed text is left to the parser).
size_t nestingDepth(const std::string &text) {
  size_t depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

class Reader {
public:
  Reader(const std::vector<BundleSection> &sections, const std::string &file,
         uint32_t version)
      : sections(sections), file(file), used(sections.size(), false),
        version(version) {}

  Program read();

  /// Paths are the manifest's JSON paths; the root object is "manifest".
  [[noreturn]] void fail(const std::string &where,
                         const std::string &detail) const {
    throw BundleError(file, where.empty() ? "manifest" : where, detail);
  }

  /// The value's text for messages: scalars dumped (shortened), containers
  /// by type.
  static std::string show(const json &v) {
    if (v.is_object() || v.is_array())
      return std::string("an ") + (v.is_object() ? "object" : "array");
    std::string s = v.dump();
    if (s.size() > 40)
      s = s.substr(0, 37) + "...";
    return s;
  }

  [[noreturn]] void typeError(const json &v, const std::string &path,
                              const char *expected) const {
    fail(path, show(v) + ": expected " + expected + ", found " +
                   (v.is_number_float() ? "a fractional number"
                    : v.is_number()     ? "an integer"
                    : v.is_string()     ? "a string"
                    : v.is_boolean()    ? "a boolean"
                    : v.is_null()       ? "null"
                    : v.is_object()     ? "an object"
                                        : "an array"));
  }

  uint64_t u64(const json &v, const std::string &path,
               uint64_t max = std::numeric_limits<uint64_t>::max()) const {
    uint64_t r;
    if (v.is_number_unsigned()) {
      r = v.get<uint64_t>();
    } else if (v.is_number_integer()) {
      int64_t s = v.get<int64_t>();
      if (s < 0)
        fail(path, std::to_string(s) + ": must be >= 0 (an unsigned field)");
      r = static_cast<uint64_t>(s);
    } else {
      typeError(v, path, "an unsigned integer");
    }
    if (r > max)
      fail(path, std::to_string(r) + ": out of range (at most " +
                     std::to_string(max) + ")");
    return r;
  }
  int64_t i64(const json &v, const std::string &path,
              int64_t min = std::numeric_limits<int64_t>::min(),
              int64_t max = std::numeric_limits<int64_t>::max()) const {
    int64_t r;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(max))
        fail(path, std::to_string(u) + ": out of range (at most " +
                       std::to_string(max) + ")");
      r = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      r = v.get<int64_t>();
    } else {
      typeError(v, path, "an integer");
    }
    if (r < min || r > max)
      fail(path, std::to_string(r) + ": out of range (" + std::to_string(min) +
                     " to " + std::to_string(max) + ")");
    return r;
  }
  uint32_t u32(const json &v, const std::string &path) const {
    return static_cast<uint32_t>(
        u64(v, path, std::numeric_limits<uint32_t>::max()));
  }
  bool boolean(const json &v, const std::string &path) const {
    if (!v.is_boolean())
      typeError(v, path, "true or false");
    return v.get<bool>();
  }
  float real(const json &v, const std::string &path) const {
    if (!v.is_number())
      typeError(v, path, "a number");
    double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > FLT_MAX)
      fail(path, show(v) + ": outside the range of a 32-bit float");
    return static_cast<float>(d);
  }
  std::string string(const json &v, const std::string &path) const {
    if (!v.is_string())
      typeError(v, path, "a string");
    return v.get<std::string>();
  }
  const json &array(const json &v, const std::string &path) const {
    if (!v.is_array())
      typeError(v, path, "an array");
    return v;
  }
  template <typename E, size_t N>
  E enumeration(const json &v, const std::string &path,
                const Spelling<E> (&table)[N]) const {
    std::string s = string(v, path);
    for (const auto &e : table)
      if (s == e.name)
        return e.value;
    fail(path, show(v) + ": expected " + spellings(table));
  }
  DType dtype(const json &v, const std::string &path) const {
    DType t;
    if (!parseDType(string(v, path), t))
      fail(path, show(v) + ": expected \"f32\", \"f16\", \"bf16\", \"f64\", "
                           "\"i32\", \"i64\" or \"i1\"");
    return t;
  }

  /// A JSON object whose keys are all required and must all be known.
  class Object {
  public:
    Object(const Reader &r, const json &j, std::string path)
        : r(r), j(j), path(std::move(path)) {
      if (!j.is_object())
        r.typeError(j, this->path, "an object");
    }
    /// The value of `key` and its path (the key is then known).
    const json &operator[](const char *key) {
      known.push_back(key);
      auto it = j.find(key);
      if (it == j.end())
        r.fail(at(path, key), "missing (a required key)");
      return *it;
    }
    std::string pathOf(const char *key) const { return at(path, key); }
    const std::string &where() const { return path; }
    /// Refuses keys that were never asked for.
    void finish() const {
      for (auto it = j.begin(); it != j.end(); ++it)
        if (std::find(known.begin(), known.end(), it.key()) == known.end())
          r.fail(at(path, it.key()), "unknown key (format version " +
                                         std::to_string(r.version) +
                                         " has no such field)");
    }

    uint64_t u64(const char *key) { return r.u64((*this)[key], pathOf(key)); }
    int64_t i64(const char *key) { return r.i64((*this)[key], pathOf(key)); }
    uint32_t u32(const char *key) { return r.u32((*this)[key], pathOf(key)); }
    bool boolean(const char *key) {
      return r.boolean((*this)[key], pathOf(key));
    }
    float real(const char *key) { return r.real((*this)[key], pathOf(key)); }
    std::string string(const char *key) {
      return r.string((*this)[key], pathOf(key));
    }
    DType dtype(const char *key) { return r.dtype((*this)[key], pathOf(key)); }
    const json &array(const char *key) {
      return r.array((*this)[key], pathOf(key));
    }
    template <typename E, size_t N>
    E enumeration(const char *key, const Spelling<E> (&table)[N]) {
      return r.enumeration((*this)[key], pathOf(key), table);
    }
    Dim dim(const char *key) { return r.dim((*this)[key], pathOf(key)); }
    BufferRef ref(const char *key) { return r.ref((*this)[key], pathOf(key)); }

  private:
    const Reader &r;
    const json &j;
    std::string path;
    std::vector<std::string> known;
  };

  Dim dim(const json &v, const std::string &path) const {
    Dim d;
    if (v.is_number()) {
      d.size = i64(v, path);
      return d;
    }
    if (!v.is_object())
      typeError(v, path,
                "a dim (an integer size, or {\"argument\", \"axis\"})");
    Object o(*this, v, path);
    d.argument =
        static_cast<int32_t>(i64(o["argument"], o.pathOf("argument"), 0,
                                 std::numeric_limits<int32_t>::max()));
    d.axis = static_cast<int32_t>(i64(o["axis"], o.pathOf("axis"),
                                      std::numeric_limits<int32_t>::min(),
                                      std::numeric_limits<int32_t>::max()));
    // Optional; written only when not 1.
    if (v.contains("multiplier"))
      d.multiplier = i64(o["multiplier"], o.pathOf("multiplier"));
    if (v.contains("divisor"))
      d.divisor = i64(o["divisor"], o.pathOf("divisor"));
    o.finish();
    return d;
  }
  std::vector<Dim> dims(const json &v, const std::string &path) const {
    std::vector<Dim> out;
    for (size_t i = 0; i < array(v, path).size(); ++i)
      out.push_back(dim(v[i], at(path, i)));
    return out;
  }
  BufferRef ref(const json &v, const std::string &path) const {
    Object o(*this, v, path);
    BufferRef r;
    r.space = o.enumeration("space", kSpaces);
    r.index = o.u32("index");
    r.byteOffset = o.u64("byteOffset");
    r.maxBytes = o.u64("maxBytes");
    o.finish();
    return r;
  }

private:
  const std::vector<BundleSection> &sections;
  const std::string &file;
  std::vector<bool> used;
  uint32_t version; ///< the container's format version

  const std::string &section(const json &v, const std::string &path,
                             SectionKind kind);
  ParameterSlot parameter(const json &v, const std::string &path) const;
  Kernel kernel(const json &v, const std::string &path);
  TensorSpec tensor(const json &v, const std::string &path) const;
  Step step(const json &v, const std::string &path) const;
  Gemm gemm(const json &v, const std::string &path) const;
  Attention attention(const json &v, const std::string &path) const;
  Function function(const json &v, const std::string &path) const;
};

const std::string &Reader::section(const json &v, const std::string &path,
                                   SectionKind kind) {
  uint64_t index = u64(v, path);
  const char *want =
      kind == SectionKind::Source ? "a source (kind 2)" : "a cubin (kind 3)";
  if (index >= sections.size())
    fail(path, std::to_string(index) + ": the bundle has " +
                   std::to_string(sections.size()) + " sections");
  const BundleSection &s = sections[index];
  if (s.kind != kind)
    fail(path, std::to_string(index) + ": section " + std::to_string(index) +
                   " has kind " +
                   std::to_string(static_cast<uint32_t>(s.kind)) +
                   ", expected " + want);
  if (used[index])
    fail(path, std::to_string(index) + ": section " + std::to_string(index) +
                   " is already referenced (each section belongs to one "
                   "place)");
  used[index] = true;
  return s.payload;
}

ParameterSlot Reader::parameter(const json &v, const std::string &path) const {
  Object o(*this, v, path);
  ParameterSlot s;
  s.name = o.string("name");
  const json &shape = o.array("shape");
  for (size_t i = 0; i < shape.size(); ++i)
    s.shape.push_back(i64(shape[i], at(o.pathOf("shape"), i)));
  s.offset = o.u64("offset");
  s.weightDecay = o.boolean("weightDecay");
  o.finish();
  return s;
}

Kernel Reader::kernel(const json &v, const std::string &path) {
  Object o(*this, v, path);
  Kernel k;
  k.name = o.string("name");
  k.source = section(o["source"], o.pathOf("source"), SectionKind::Source);
  const json &params = o.array("params");
  for (size_t i = 0; i < params.size(); ++i)
    k.params.push_back(
        enumeration(params[i], at(o.pathOf("params"), i), kParamKinds));
  {
    Object l(*this, o["launch"], o.pathOf("launch"));
    k.launch.blockThreads = l.u32("blockThreads");
    k.launch.dynamicSharedBytes = l.u32("dynamicSharedBytes");
    k.launch.work = dims(l["work"], l.pathOf("work"));
    k.launch.workPerBlock = l.u64("workPerBlock");
    k.launch.maxBlocks = l.u32("maxBlocks");
    l.finish();
  }
  k.scratchBytes = o.u64("scratchBytes");
  const json &cubins = o["cubins"];
  if (!cubins.is_object())
    typeError(cubins, o.pathOf("cubins"),
              "an object (arch name -> section index)");
  for (auto it = cubins.begin(); it != cubins.end(); ++it)
    k.cubins[it.key()] = section(it.value(), at(o.pathOf("cubins"), it.key()),
                                 SectionKind::Cubin);
  o.finish();
  return k;
}

TensorSpec Reader::tensor(const json &v, const std::string &path) const {
  Object o(*this, v, path);
  TensorSpec t;
  t.name = o.string("name");
  t.kind = o.enumeration("kind", kArgumentKinds);
  t.dtype = o.dtype("dtype");
  t.shape = dims(o["shape"], o.pathOf("shape"));
  const json &maxShape = o.array("maxShape");
  for (size_t i = 0; i < maxShape.size(); ++i)
    t.maxShape.push_back(i64(maxShape[i], at(o.pathOf("maxShape"), i)));
  if (v.contains("inPlaceOf")) {
    int64_t a = i64(o["inPlaceOf"], o.pathOf("inPlaceOf"));
    if (a < 0 || a > INT32_MAX)
      fail(o.pathOf("inPlaceOf"), std::to_string(a) + ": must be an argument index");
    t.inPlaceOf = static_cast<int32_t>(a);
  }
  o.finish();
  return t;
}

Gemm Reader::gemm(const json &v, const std::string &path) const {
  Object o(*this, v, path);
  Gemm g;
  g.a = o.ref("a");
  g.b = o.ref("b");
  g.c = o.ref("c");
  g.bias = o.ref("bias");
  g.biasGrad = o.ref("biasGrad");
  g.aType = o.dtype("aType");
  g.bType = o.dtype("bType");
  g.cType = o.dtype("cType");
  g.biasType = o.dtype("biasType");
  g.transposeA = o.boolean("transposeA");
  g.transposeB = o.boolean("transposeB");
  g.m = o.dim("m");
  g.n = o.dim("n");
  g.k = o.dim("k");
  g.batch = o.dim("batch");
  g.lda = o.i64("lda");
  g.ldb = o.i64("ldb");
  g.ldc = o.i64("ldc");
  g.strideA = o.i64("strideA");
  g.strideB = o.i64("strideB");
  g.strideC = o.i64("strideC");
  if (version >= 2) {
    g.epilogue = o.enumeration("epilogue", kEpilogues);
    g.aux = o.ref("aux");
    g.auxLd = o.i64("auxLd");
  } else {
    g.epilogue = o.enumeration("epilogue", kEpiloguesV1);
  }
  o.finish();
  return g;
}

Attention Reader::attention(const json &v, const std::string &path) const {
  Object o(*this, v, path);
  Attention a;
  a.backward = o.boolean("backward");
  a.dtype = o.dtype("dtype");
  a.heads = o.u32("heads");
  a.kvHeads = o.u32("kvHeads");
  a.headDim = o.u32("headDim");
  a.causal = o.boolean("causal");
  a.scale = o.real("scale");
  a.dropoutRate = o.real("dropoutRate");
  a.stream = o.u32("stream");
  a.tokensQ = o.dim("tokensQ");
  a.tokensK = o.dim("tokensK");
  a.batchPlusOne = o.dim("batchPlusOne");
  a.strideQ = o.i64("strideQ");
  a.strideK = o.i64("strideK");
  a.strideV = o.i64("strideV");
  a.strideO = o.i64("strideO");
  a.q = o.ref("q");
  a.k = o.ref("k");
  a.v = o.ref("v");
  a.out = o.ref("out");
  a.lse = o.ref("lse");
  a.cuSeqlensQ = o.ref("cuSeqlensQ");
  a.cuSeqlensK = o.ref("cuSeqlensK");
  a.seed = o.ref("seed");
  a.offset = o.ref("offset");
  a.dout = o.ref("dout");
  a.dq = o.ref("dq");
  a.dk = o.ref("dk");
  a.dv = o.ref("dv");
  a.strideDO = o.i64("strideDO");
  a.strideDQ = o.i64("strideDQ");
  a.strideDK = o.i64("strideDK");
  a.strideDV = o.i64("strideDV");
  if (version >= 3) {
    a.fallbackSteps = o.u32("fallbackSteps");
    a.maxSeqLen = o.i64("maxSeqLen");
  }
  o.finish();
  return a;
}

Step Reader::step(const json &v, const std::string &path) const {
  Object o(*this, v, path);
  Step s;
  s.kind = o.enumeration("kind", kStepKinds);
  switch (s.kind) {
  case Step::Kind::Launch: {
    s.kernel = o.u32("kernel");
    const json &args = o.array("args");
    for (size_t i = 0; i < args.size(); ++i) {
      Object a(*this, args[i], at(o.pathOf("args"), i));
      KernelArg arg;
      arg.kind = a.enumeration("kind", kParamKinds);
      if (arg.kind == ParamKind::Pointer)
        arg.buffer = a.ref("buffer");
      else
        arg.value = a.dim("value");
      a.finish();
      s.args.push_back(arg);
    }
    break;
  }
  case Step::Kind::Gemm:
    s.gemm = gemm(o["gemm"], o.pathOf("gemm"));
    break;
  case Step::Kind::Attention:
    s.attention = attention(o["attention"], o.pathOf("attention"));
    break;
  case Step::Kind::Copy:
    s.copySource = o.ref("copySource");
    s.copyDestination = o.ref("copyDestination");
    break;
  }
  o.finish();
  return s;
}

Function Reader::function(const json &v, const std::string &path) const {
  Object o(*this, v, path);
  Function f;
  f.name = o.string("name");
  const json &arguments = o.array("arguments");
  for (size_t i = 0; i < arguments.size(); ++i)
    f.arguments.push_back(tensor(arguments[i], at(o.pathOf("arguments"), i)));
  const json &results = o.array("results");
  for (size_t i = 0; i < results.size(); ++i)
    f.results.push_back(tensor(results[i], at(o.pathOf("results"), i)));
  f.arenaBytes = o.u64("arenaBytes");
  const json &steps = o.array("steps");
  for (size_t i = 0; i < steps.size(); ++i)
    f.steps.push_back(step(steps[i], at(o.pathOf("steps"), i)));
  o.finish();
  return f;
}

Program Reader::read() {
  // splitBundle guarantees section 0 is the only manifest.
  const std::string &text = sections.at(0).payload;
  if (nestingDepth(text) > kMaxJsonDepth)
    fail("sections[0]", "manifest JSON nests deeper than " +
                            std::to_string(kMaxJsonDepth) + " levels");
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    fail("sections[0]", std::string("manifest is not valid JSON: ") + e.what());
  }
  Object o(*this, root, "");
  uint64_t formatVersion = o.u64("formatVersion");
  if (formatVersion != version)
    fail("formatVersion", std::to_string(formatVersion) +
                              ": differs from the header's format version " +
                              std::to_string(version));
  Program p;
  p.modelName = o.string("modelName");
  p.description = o.string("description");
  p.computeDType = o.string("computeDType");
  p.workspaceElements = o.u64("workspaceElements");
  const json &parameters = o.array("parameters");
  for (size_t i = 0; i < parameters.size(); ++i)
    p.parameters.push_back(parameter(parameters[i], at("parameters", i)));
  p.arenaBytes = o.u64("arenaBytes");
  p.scratchOffset = o.u64("scratchOffset");
  const json &kernels = o.array("kernels");
  for (size_t i = 0; i < kernels.size(); ++i)
    p.kernels.push_back(kernel(kernels[i], at("kernels", i)));
  const json &functions = o.array("functions");
  for (size_t i = 0; i < functions.size(); ++i)
    p.functions.push_back(function(functions[i], at("functions", i)));
  o.finish();
  for (size_t i = 1; i < sections.size(); ++i)
    if (!used[i])
      fail("sections[" + std::to_string(i) + "]",
           "not referenced by any kernel (every section belongs to one "
           "kernel's source or cubins)");
  return p;
}

} // namespace

std::vector<BundleSection> programToSections(const Program &p) {
  std::vector<BundleSection> sections(1); // [0] is the manifest, filled last
  ojson root = ojson::object();
  root["formatVersion"] = kBundleFormatVersion;
  root["modelName"] = p.modelName;
  root["description"] = p.description;
  root["computeDType"] = p.computeDType;
  root["workspaceElements"] = p.workspaceElements;
  ojson parameters = ojson::array();
  for (const ParameterSlot &s : p.parameters) {
    ojson j = ojson::object();
    j["name"] = s.name;
    j["shape"] = intsJson(s.shape);
    j["offset"] = s.offset;
    j["weightDecay"] = s.weightDecay;
    parameters.push_back(std::move(j));
  }
  root["parameters"] = std::move(parameters);
  root["arenaBytes"] = p.arenaBytes;
  root["scratchOffset"] = p.scratchOffset;
  ojson kernels = ojson::array();
  for (const Kernel &k : p.kernels) {
    ojson j = ojson::object();
    j["name"] = k.name;
    j["source"] = sections.size();
    sections.push_back({SectionKind::Source, k.source});
    ojson params = ojson::array();
    for (ParamKind kind : k.params)
      params.push_back(spell(kParamKinds, kind));
    j["params"] = std::move(params);
    ojson launch = ojson::object();
    launch["blockThreads"] = k.launch.blockThreads;
    launch["dynamicSharedBytes"] = k.launch.dynamicSharedBytes;
    launch["work"] = dimsJson(k.launch.work);
    launch["workPerBlock"] = k.launch.workPerBlock;
    launch["maxBlocks"] = k.launch.maxBlocks;
    j["launch"] = std::move(launch);
    j["scratchBytes"] = k.scratchBytes;
    ojson cubins = ojson::object();
    for (const auto &[arch, image] : k.cubins) {
      cubins[arch] = sections.size();
      sections.push_back({SectionKind::Cubin, image});
    }
    j["cubins"] = std::move(cubins);
    kernels.push_back(std::move(j));
  }
  root["kernels"] = std::move(kernels);
  ojson functions = ojson::array();
  for (const Function &f : p.functions) {
    ojson j = ojson::object();
    j["name"] = f.name;
    ojson arguments = ojson::array(), results = ojson::array(),
          steps = ojson::array();
    for (const TensorSpec &t : f.arguments)
      arguments.push_back(tensorJson(t));
    for (const TensorSpec &t : f.results)
      results.push_back(tensorJson(t));
    j["arguments"] = std::move(arguments);
    j["results"] = std::move(results);
    j["arenaBytes"] = f.arenaBytes;
    for (const Step &s : f.steps)
      steps.push_back(stepJson(s));
    j["steps"] = std::move(steps);
    functions.push_back(std::move(j));
  }
  root["functions"] = std::move(functions);
  sections[0] = {SectionKind::Manifest, root.dump()};
  return sections;
}

Program sectionsToProgram(const std::vector<BundleSection> &sections,
                          const std::string &nameForErrors, uint32_t version) {
  Reader reader(sections, nameForErrors, version);
  try {
    return reader.read();
  } catch (const json::exception &e) {
    // The typed accessors check before every get<>(), so this is a bug
    // guard: still a clean refusal, never a foreign exception.
    throw BundleError(nameForErrors, "sections[0]",
                      std::string("manifest could not be read: ") + e.what());
  }
}

} // namespace ls2c::runtime::detail
