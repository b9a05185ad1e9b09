//===- GradientCheckOpsTest.cpp - finite-difference checks of every VJP ---===//
//
// For each differentiable op: a tiny module
//   func.func @forward(params..., inputs..., R...) -> tensor<f32>
//     = sum over the op's outputs of reduce_sum(output * R)
// with fixed random weights R (so every output element matters), run
// through ls2-autodiff, and @forward_backward evaluated in F64 mode; every
// gradient element is compared with a central difference of @forward
// (h = 1e-6 relative to the value's scale). Relative L2 error <= 1e-6 per
// parameter. Shapes include sizes 1, 3, 7 and 33; inputs are seeded random
// values (never zeros), kept away from the kinks of max/min/reduce_max.
//
//===----------------------------------------------------------------------===//
#include "ReferenceTestUtil.h"

#include "ls2c/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

constexpr double kGradientTolerance = 1e-6;
constexpr double kRelativeStep = 1e-6;

/// An argument of @forward.
struct Arg {
  std::string name; ///< without the %
  std::string type;
  HostTensor value;
  bool parameter = true; ///< differentiated; otherwise an input
};

/// A result of the op under test, weighted into the loss.
struct Output {
  std::string name; ///< the SSA value, without the %
  std::string type;
  std::vector<int64_t> shape; ///< at run time
};

std::string join(const std::vector<std::string> &parts, const char *sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i)
    s += (i ? sep : "") + parts[i];
  return s;
}

/// ||a - b|| / ||b||, and the element where |a - b| is largest.
struct Comparison {
  double error = 0, norm = 0;
  size_t worst = 0;
};

Comparison compare(const std::vector<double> &actual,
                   const std::vector<double> &expected) {
  Comparison c;
  double diff = 0, norm = 0, worstDiff = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    double d = actual[i] - expected[i];
    diff += d * d;
    norm += expected[i] * expected[i];
    if (std::fabs(d) > worstDiff) {
      worstDiff = std::fabs(d);
      c.worst = i;
    }
  }
  c.norm = std::sqrt(norm);
  c.error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return c;
}

/// Builds the module, differentiates it and compares every parameter's
/// gradient with central differences.
void checkVjp(const std::string &label, std::vector<Arg> args,
              const std::string &body, const std::vector<Output> &outputs,
              std::mt19937 &rng) {
  SCOPED_TRACE(label);
  // Weights R, one per output.
  std::vector<std::string> lines;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::vector<double> r = normal(rng, count(outputs[i].shape), 1.0);
    for (double &x : r)
      x = static_cast<float>(x);
    args.push_back({"r" + std::to_string(i), outputs[i].type,
                    HostTensor::fromFloats(ElementType::F32, outputs[i].shape,
                                           r),
                    false});
  }
  std::vector<std::string> argText;
  for (const Arg &a : args)
    argText.push_back("%" + a.name + ": " + a.type + " {ls2.kind = \"" +
                      (a.parameter ? "parameter" : "input") +
                      "\", ls2.name = \"" + a.name + "\"}");
  std::string text = "func.func @forward(" + join(argText, ", ") +
                     ") -> tensor<f32> {\n" + body + "\n";
  std::string total;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Output &o = outputs[i];
    std::string id = std::to_string(i);
    text += "  %__w" + id + " = ls2.mul %" + o.name + ", %r" + id + " : " +
            o.type + "\n";
    std::string sum = "%__w" + id;
    if (!o.shape.empty()) {
      std::vector<std::string> axes;
      for (size_t d = 0; d < o.shape.size(); ++d)
        axes.push_back(std::to_string(d));
      text += "  %__s" + id + " = ls2.reduce_sum %__w" + id + " [" +
              join(axes, ", ") + "] : " + o.type + " -> tensor<f32>\n";
      sum = "%__s" + id;
    }
    if (total.empty()) {
      total = sum;
    } else {
      text += "  %__t" + id + " = ls2.add " + total + ", " + sum +
              " : tensor<f32>\n";
      total = "%__t" + id;
    }
  }
  text += "  return " + total + " : tensor<f32>\n}\n";

  Program p = parseProgram(text);
  ASSERT_TRUE(p.module) << text;
  mlir::PassManager pm(p.context.get());
  pm.addPass(ls2c::createAutodiff());
  ASSERT_TRUE(mlir::succeeded(pm.run(p.module.get()))) << text;
  mlir::func::FuncOp forward = p.function("forward");
  mlir::func::FuncOp fb = p.function("forward_backward");
  ASSERT_TRUE(forward && fb);

  std::vector<HostTensor> values;
  for (const Arg &a : args)
    values.push_back(a.value);
  std::vector<HostTensor> fbValues = values;
  // The backward's seed, when this version of ls2-autodiff takes it.
  if (fb.getNumArguments() == values.size() + 1) {
    auto name = fb.getArgAttrOfType<mlir::StringAttr>(values.size(), "ls2.name");
    ASSERT_TRUE(name && name.getValue() == "loss_grad");
    fbValues.push_back(HostTensor::scalarFloat(ElementType::F32, 1.0));
  }
  Interpreter f64(Precision::F64);
  std::vector<HostTensor> results = f64.run(fb, fbValues);
  auto loss = [&]() { return f64.run(forward, values)[0].floats[0]; };
  EXPECT_EQ(results[0].floats[0], loss());

  size_t param = 0;
  for (size_t a = 0; a < args.size(); ++a) {
    if (!args[a].parameter)
      continue;
    SCOPED_TRACE("gradient of %" + args[a].name);
    ASSERT_LT(1 + param, results.size());
    const std::vector<double> &grad = results[1 + param++].floats;
    std::vector<double> &x = values[a].floats;
    ASSERT_EQ(grad.size(), x.size());
    double rms = 0;
    for (double v : x)
      rms += v * v;
    rms = x.empty() ? 1.0 : std::sqrt(rms / static_cast<double>(x.size()));
    std::vector<double> fd(x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      double x0 = x[e];
      double h = kRelativeStep * std::max(std::fabs(x0), rms);
      double up = x0 + h, down = x0 - h;
      x[e] = up;
      double fUp = loss();
      x[e] = down;
      double fDown = loss();
      x[e] = x0;
      fd[e] = (fUp - fDown) / (up - down);
    }
    Comparison c = compare(grad, fd);
    if (std::getenv("LS2C_GRADCHECK_VERBOSE"))
      std::printf("  %-50s %-8s %zu elements, relative L2 error %.2e\n",
                  label.c_str(), args[a].name.c_str(), x.size(), c.error);
    EXPECT_LE(c.error, kGradientTolerance)
        << "worst element " << c.worst << ": autodiff " << grad[c.worst]
        << ", finite difference " << fd[c.worst];
    EXPECT_GT(c.norm, 0.0) << "the check is vacuous: a zero gradient";
  }
  EXPECT_EQ(1 + param, results.size());
}

HostTensor uniformTensor(std::mt19937 &rng, std::vector<int64_t> shape,
                         double lo = -1, double hi = 1) {
  return randomF32(rng, std::move(shape), lo, hi);
}

/// Values at least `gap` apart along every line of the tensor (no ties, no
/// tie within a finite-difference step): a shuffled ramp plus jitter.
HostTensor distinctTensor(std::mt19937 &rng, std::vector<int64_t> shape,
                          double gap = 0.05) {
  size_t n = count(shape);
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), rng);
  std::uniform_real_distribution<double> jitter(0, gap / 4);
  for (double &x : v)
    x = static_cast<float>((x - static_cast<double>(n) / 2) * gap + jitter(rng));
  return HostTensor::fromFloats(ElementType::F32, std::move(shape), v);
}

/// `b` as `a` plus or minus at least `gap` elementwise (max/min never tie).
HostTensor awayFrom(std::mt19937 &rng, const HostTensor &a, double gap = 0.05) {
  HostTensor b = a;
  std::uniform_real_distribution<double> step(gap, 0.5);
  std::bernoulli_distribution sign(0.5);
  for (double &x : b.floats)
    x = static_cast<float>(x + (sign(rng) ? step(rng) : -step(rng)));
  return b;
}

HostTensor ints(ElementType type, std::vector<int64_t> shape,
                std::vector<int64_t> values) {
  return HostTensor::fromInts(type, std::move(shape), std::move(values));
}

HostTensor i64Scalar(int64_t v) {
  return HostTensor::scalarInt(ElementType::I64, v);
}

std::string f32Type(const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + "f32>";
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST(GradientCheckOps, Unary) {
  std::mt19937 rng = testRng();
  struct Case {
    std::string op;
    std::vector<int64_t> shape;
    std::string type;
    double lo, hi;
  };
  std::vector<Case> cases = {
      {"neg", {1, 33}, "tensor<1x33xf32>", -1, 1},
      {"exp", {3, 7}, "tensor<?x7xf32>", -1, 1},
      {"log", {7, 3}, "tensor<7x3xf32>", 0.5, 2},
      {"tanh", {33}, "tensor<33xf32>", -2, 2},
      {"erf", {3, 7, 1}, "tensor<3x?x1xf32>", -2, 2},
      {"sqrt", {7}, "tensor<7xf32>", 0.5, 2},
      {"rsqrt", {33, 1}, "tensor<33x1xf32>", 0.5, 2},
      {"sin", {3, 33}, "tensor<3x33xf32>", -3, 3},
      {"cos", {7, 1}, "tensor<?x1xf32>", -3, 3},
  };
  for (const Case &c : cases)
    checkVjp(c.op,
             {{"x", c.type, uniformTensor(rng, c.shape, c.lo, c.hi)}},
             "  %y = ls2." + c.op + " %x : " + c.type,
             {{"y", c.type, c.shape}}, rng);
}

TEST(GradientCheckOps, BinarySameShapeAndRankZeroOperands) {
  std::mt19937 rng = testRng();
  for (std::string op : {"add", "sub", "mul", "div", "max", "min"}) {
    bool chooser = op == "max" || op == "min";
    double lo = op == "div" ? 0.5 : -1, hi = op == "div" ? 2 : 1;
    // Same shape.
    {
      HostTensor a = uniformTensor(rng, {3, 7});
      HostTensor b = chooser ? awayFrom(rng, a) : uniformTensor(rng, {3, 7}, lo, hi);
      checkVjp(op + " same shape",
               {{"a", "tensor<?x7xf32>", a}, {"b", "tensor<?x7xf32>", b}},
               "  %y = ls2." + op + " %a, %b : tensor<?x7xf32>",
               {{"y", "tensor<?x7xf32>", {3, 7}}}, rng);
    }
    // A rank-0 operand on either side (used for every element).
    for (bool scalarLhs : {true, false}) {
      HostTensor s = HostTensor::scalarFloat(ElementType::F32, 0.75);
      HostTensor x = uniformTensor(rng, {7, 33}, lo, hi);
      if (chooser) // keep every element 0.05 away from the scalar
        for (double &v : x.floats)
          if (std::fabs(v - 0.75) < 0.05)
            v = static_cast<float>(v - 0.1);
      std::string types = scalarLhs ? "tensor<f32>, tensor<7x33xf32>"
                                    : "tensor<7x33xf32>, tensor<f32>";
      std::vector<Arg> args = {{"s", "tensor<f32>", s},
                               {"x", "tensor<7x33xf32>", x}};
      checkVjp(op + (scalarLhs ? " scalar lhs" : " scalar rhs"), args,
               "  %y = ls2." + op + (scalarLhs ? " %s, %x : " : " %x, %s : ") +
                   types,
               {{"y", "tensor<7x33xf32>", {7, 33}}}, rng);
    }
  }
}

TEST(GradientCheckOps, SelectWithFullAndRankZeroValues) {
  std::mt19937 rng = testRng();
  std::bernoulli_distribution coin(0.5);
  std::vector<int64_t> bits(3 * 33);
  for (int64_t &b : bits)
    b = coin(rng);
  bits[0] = 1;
  bits[1] = 0;
  HostTensor pred = ints(ElementType::I1, {3, 33}, bits);
  checkVjp("select",
           {{"p", "tensor<3x33xi1>", pred, false},
            {"a", "tensor<3x33xf32>", uniformTensor(rng, {3, 33})},
            {"b", "tensor<3x33xf32>", uniformTensor(rng, {3, 33})}},
           "  %y = ls2.select %p, %a, %b : tensor<3x33xi1>, tensor<3x33xf32>, "
           "tensor<3x33xf32>",
           {{"y", "tensor<3x33xf32>", {3, 33}}}, rng);
  checkVjp("select rank-0 on_true",
           {{"p", "tensor<3x33xi1>", pred, false},
            {"a", "tensor<f32>", HostTensor::scalarFloat(ElementType::F32, -0.5)},
            {"b", "tensor<3x33xf32>", uniformTensor(rng, {3, 33})}},
           "  %y = ls2.select %p, %a, %b : tensor<3x33xi1>, tensor<f32>, "
           "tensor<3x33xf32>",
           {{"y", "tensor<3x33xf32>", {3, 33}}}, rng);
  checkVjp("select rank-0 on_false",
           {{"p", "tensor<3x33xi1>", pred, false},
            {"a", "tensor<3x33xf32>", uniformTensor(rng, {3, 33})},
            {"b", "tensor<f32>", HostTensor::scalarFloat(ElementType::F32, 0.25)}},
           "  %y = ls2.select %p, %a, %b : tensor<3x33xi1>, tensor<3x33xf32>, "
           "tensor<f32>",
           {{"y", "tensor<3x33xf32>", {3, 33}}}, rng);
}

TEST(GradientCheckOps, Cast) {
  std::mt19937 rng = testRng();
  checkVjp("cast f32 to f32", {{"x", "tensor<7x3xf32>", uniformTensor(rng, {7, 3})}},
           "  %y = ls2.cast %x : tensor<7x3xf32> to tensor<7x3xf32>",
           {{"y", "tensor<7x3xf32>", {7, 3}}}, rng);
  // Through a narrower type and back (no rounding in F64 mode).
  checkVjp("cast f32 to bf16 to f32",
           {{"x", "tensor<?x33xf32>", uniformTensor(rng, {1, 33})}},
           "  %h = ls2.cast %x : tensor<?x33xf32> to tensor<?x33xbf16>\n"
           "  %y = ls2.cast %h : tensor<?x33xbf16> to tensor<?x33xf32>",
           {{"y", "tensor<?x33xf32>", {1, 33}}}, rng);
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

TEST(GradientCheckOps, Broadcast) {
  std::mt19937 rng = testRng();
  checkVjp("new leading dim",
           {{"x", "tensor<7xf32>", uniformTensor(rng, {7})}},
           "  %y = ls2.broadcast %x [] {dims = array<i64: 1>} : tensor<7xf32> "
           "-> tensor<3x7xf32>",
           {{"y", "tensor<3x7xf32>", {3, 7}}}, rng);
  checkVjp("expanded from 1 and a new trailing dim",
           {{"x", "tensor<3x1xf32>", uniformTensor(rng, {3, 1})}},
           "  %y = ls2.broadcast %x [] {dims = array<i64: 0, 1>} : "
           "tensor<3x1xf32> -> tensor<3x7x33xf32>",
           {{"y", "tensor<3x7x33xf32>", {3, 7, 33}}}, rng);
  checkVjp("rank 0",
           {{"x", "tensor<f32>", HostTensor::scalarFloat(ElementType::F32, 0.3)}},
           "  %y = ls2.broadcast %x [] {dims = array<i64>} : tensor<f32> -> "
           "tensor<7x3xf32>",
           {{"y", "tensor<7x3xf32>", {7, 3}}}, rng);
  checkVjp("dynamic size",
           {{"x", "tensor<1x7xf32>", uniformTensor(rng, {1, 7})},
            {"z", "tensor<?x7xf32>", uniformTensor(rng, {33, 7})}},
           "  %t = ls2.dim %z[0] : tensor<?x7xf32>\n"
           "  %b = ls2.broadcast %x [%t] {dims = array<i64: 0, 1>} : "
           "tensor<1x7xf32> -> tensor<?x7xf32>\n"
           "  %y = ls2.mul %b, %z : tensor<?x7xf32>",
           {{"y", "tensor<?x7xf32>", {33, 7}}}, rng);
}

TEST(GradientCheckOps, ReshapeAndTranspose) {
  std::mt19937 rng = testRng();
  checkVjp("reshape", {{"x", "tensor<3x7xf32>", uniformTensor(rng, {3, 7})}},
           "  %y = ls2.reshape %x : tensor<3x7xf32> -> tensor<21xf32>",
           {{"y", "tensor<21xf32>", {21}}}, rng);
  checkVjp("reshape dynamic",
           {{"x", "tensor<?x7x3xf32>", uniformTensor(rng, {1, 7, 3})}},
           "  %y = ls2.reshape %x : tensor<?x7x3xf32> -> tensor<?x3xf32>",
           {{"y", "tensor<?x3xf32>", {7, 3}}}, rng);
  checkVjp("transpose 3d",
           {{"x", "tensor<3x7x1xf32>", uniformTensor(rng, {3, 7, 1})}},
           "  %y = ls2.transpose %x [2, 0, 1] : tensor<3x7x1xf32> -> "
           "tensor<1x3x7xf32>",
           {{"y", "tensor<1x3x7xf32>", {1, 3, 7}}}, rng);
  checkVjp("transpose dynamic",
           {{"x", "tensor<?x33xf32>", uniformTensor(rng, {3, 33})}},
           "  %y = ls2.transpose %x [1, 0] : tensor<?x33xf32> -> "
           "tensor<33x?xf32>",
           {{"y", "tensor<33x?xf32>", {33, 3}}}, rng);
}

TEST(GradientCheckOps, SliceAndConcat) {
  std::mt19937 rng = testRng();
  checkVjp("slice", {{"x", "tensor<3x7xf32>", uniformTensor(rng, {3, 7})}},
           "  %y = ls2.slice %x {axis = 1 : i64, start = 2 : i64, limit = 5 : "
           "i64} : tensor<3x7xf32> -> tensor<3x3xf32>",
           {{"y", "tensor<3x3xf32>", {3, 3}}}, rng);
  // Slices that tile with a gap (joined with zeros) and overlapping slices
  // (padded and added), on a dynamic leading dim.
  checkVjp("tiling slices with a gap",
           {{"x", "tensor<?x33xf32>", uniformTensor(rng, {7, 33})}},
           "  %a = ls2.slice %x {axis = 1 : i64, start = 0 : i64, limit = 7 : "
           "i64} : tensor<?x33xf32> -> tensor<?x7xf32>\n"
           "  %b = ls2.slice %x {axis = 1 : i64, start = 10 : i64, limit = 33 : "
           "i64} : tensor<?x33xf32> -> tensor<?x23xf32>",
           {{"a", "tensor<?x7xf32>", {7, 7}}, {"b", "tensor<?x23xf32>", {7, 23}}},
           rng);
  checkVjp("overlapping slices",
           {{"x", "tensor<7x3xf32>", uniformTensor(rng, {7, 3})}},
           "  %a = ls2.slice %x {axis = 0 : i64, start = 0 : i64, limit = 5 : "
           "i64} : tensor<7x3xf32> -> tensor<5x3xf32>\n"
           "  %b = ls2.slice %x {axis = 0 : i64, start = 3 : i64, limit = 7 : "
           "i64} : tensor<7x3xf32> -> tensor<4x3xf32>",
           {{"a", "tensor<5x3xf32>", {5, 3}}, {"b", "tensor<4x3xf32>", {4, 3}}},
           rng);
  checkVjp("concat",
           {{"a", "tensor<?x1xf32>", uniformTensor(rng, {3, 1})},
            {"b", "tensor<?x7xf32>", uniformTensor(rng, {3, 7})},
            {"c", "tensor<?x33xf32>", uniformTensor(rng, {3, 33})}},
           "  %y = ls2.concat %a, %b, %c {axis = 1 : i64} : (tensor<?x1xf32>, "
           "tensor<?x7xf32>, tensor<?x33xf32>) -> tensor<?x41xf32>",
           {{"y", "tensor<?x41xf32>", {3, 41}}}, rng);
  checkVjp("concat axis 0",
           {{"a", "tensor<1x7xf32>", uniformTensor(rng, {1, 7})},
            {"b", "tensor<3x7xf32>", uniformTensor(rng, {3, 7})}},
           "  %y = ls2.concat %a, %b {axis = 0 : i64} : (tensor<1x7xf32>, "
           "tensor<3x7xf32>) -> tensor<4x7xf32>",
           {{"y", "tensor<4x7xf32>", {4, 7}}}, rng);
}

//===----------------------------------------------------------------------===//
// Reductions, matmul, embedding
//===----------------------------------------------------------------------===//

TEST(GradientCheckOps, ReduceSum) {
  std::mt19937 rng = testRng();
  checkVjp("axis 1", {{"x", "tensor<3x7x33xf32>", uniformTensor(rng, {3, 7, 33})}},
           "  %y = ls2.reduce_sum %x [1] : tensor<3x7x33xf32> -> "
           "tensor<3x33xf32>",
           {{"y", "tensor<3x33xf32>", {3, 33}}}, rng);
  checkVjp("axes 0, 2 kept",
           {{"x", "tensor<3x7x33xf32>", uniformTensor(rng, {3, 7, 33})}},
           "  %y = ls2.reduce_sum %x [0, 2] {keep_dims} : tensor<3x7x33xf32> -> "
           "tensor<1x7x1xf32>",
           {{"y", "tensor<1x7x1xf32>", {1, 7, 1}}}, rng);
  checkVjp("dynamic axis",
           {{"x", "tensor<?x7xf32>", uniformTensor(rng, {33, 7})}},
           "  %y = ls2.reduce_sum %x [0] : tensor<?x7xf32> -> tensor<7xf32>",
           {{"y", "tensor<7xf32>", {7}}}, rng);
}

TEST(GradientCheckOps, ReduceMaxWithoutTies) {
  std::mt19937 rng = testRng();
  checkVjp("axis 1", {{"x", "tensor<3x33xf32>", distinctTensor(rng, {3, 33})}},
           "  %y = ls2.reduce_max %x [1] : tensor<3x33xf32> -> tensor<3xf32>",
           {{"y", "tensor<3xf32>", {3}}}, rng);
  checkVjp("axes 0, 2 kept",
           {{"x", "tensor<7x3x7xf32>", distinctTensor(rng, {7, 3, 7})}},
           "  %y = ls2.reduce_max %x [0, 2] {keep_dims} : tensor<7x3x7xf32> -> "
           "tensor<1x3x1xf32>",
           {{"y", "tensor<1x3x1xf32>", {1, 3, 1}}}, rng);
  checkVjp("all axes, dynamic",
           {{"x", "tensor<?x1xf32>", distinctTensor(rng, {33, 1})}},
           "  %y = ls2.reduce_max %x [0, 1] : tensor<?x1xf32> -> tensor<f32>",
           {{"y", "tensor<f32>", {}}}, rng);
}

TEST(GradientCheckOps, MatmulTransposeFlagsBatchedAndSharedB) {
  std::mt19937 rng = testRng();
  struct Case {
    std::string name;
    std::vector<int64_t> a, b, y;
    std::vector<int64_t> aType, bType, yType; ///< -1: dynamic
    std::string attrs;
  };
  std::vector<Case> cases = {
      {"plain", {3, 7}, {7, 33}, {3, 33}, {-1, 7}, {7, 33}, {-1, 33}, ""},
      {"transpose_a", {7, 3}, {7, 1}, {3, 1}, {7, 3}, {7, 1}, {3, 1},
       "{transpose_a}"},
      {"transpose_b", {3, 7}, {33, 7}, {3, 33}, {3, 7}, {33, 7}, {3, 33},
       "{transpose_b}"},
      {"both", {7, 1}, {3, 7}, {1, 3}, {7, 1}, {3, 7}, {1, 3},
       "{transpose_a, transpose_b}"},
      {"batched", {2, 3, 7}, {2, 7, 1}, {2, 3, 1}, {2, 3, 7}, {2, 7, 1},
       {2, 3, 1}, ""},
      {"batched both", {3, 7, 1}, {3, 33, 7}, {3, 1, 33}, {3, 7, 1},
       {3, 33, 7}, {3, 1, 33}, "{transpose_a, transpose_b}"},
      {"batched transpose_b dynamic", {3, 7, 3}, {3, 1, 3}, {3, 7, 1},
       {-1, 7, 3}, {-1, 1, 3}, {-1, 7, 1}, "{transpose_b}"},
      {"shared b", {2, 3, 7}, {7, 33}, {2, 3, 33}, {-1, 3, 7}, {7, 33},
       {-1, 3, 33}, ""},
      {"shared b transpose_b", {3, 7, 3}, {1, 3}, {3, 7, 1}, {3, -1, 3},
       {1, 3}, {3, -1, 1}, "{transpose_b}"},
      {"shared b transpose_a", {2, 7, 3}, {7, 33}, {2, 3, 33}, {2, 7, 3},
       {7, 33}, {2, 3, 33}, "{transpose_a}"},
      {"shared b both dynamic", {3, 7, 1}, {3, 7}, {3, 1, 3}, {-1, 7, 1},
       {3, 7}, {-1, 1, 3}, "{transpose_a, transpose_b}"},
  };
  for (const Case &c : cases) {
    std::string at = f32Type(c.aType), bt = f32Type(c.bType),
                yt = f32Type(c.yType);
    checkVjp("matmul " + c.name,
             {{"a", at, uniformTensor(rng, c.a)}, {"b", bt, uniformTensor(rng, c.b)}},
             "  %y = ls2.matmul %a, %b " + c.attrs + " : " + at + ", " + bt +
                 " -> " + yt,
             {{"y", yt, c.y}}, rng);
  }
}

TEST(GradientCheckOps, GatherTableAndScatterAdd) {
  std::mt19937 rng = testRng();
  checkVjp("gather with repeated ids",
           {{"t", "tensor<7x3xf32>", uniformTensor(rng, {7, 3})},
            {"ids", "tensor<?xi32>",
             ints(ElementType::I32, {33},
                  [&] {
                    std::vector<int64_t> v(33);
                    for (size_t i = 0; i < v.size(); ++i)
                      v[i] = static_cast<int64_t>((i * 5) % 7);
                    return v;
                  }()),
             false}},
           "  %y = ls2.gather %t[%ids] : tensor<7x3xf32>, tensor<?xi32> -> "
           "tensor<?x3xf32>",
           {{"y", "tensor<?x3xf32>", {33, 3}}}, rng);
  checkVjp("gather rank-2 ids, rank-1 table",
           {{"t", "tensor<33xf32>", uniformTensor(rng, {33})},
            {"ids", "tensor<3x7xi64>",
             ints(ElementType::I64, {3, 7},
                  {0, 32, 5, 5, 7, 1, 2, 3, 3, 3, 9, 10, 11, 12, 13, 14, 15,
                   16, 17, 0, 32}),
             false}},
           "  %y = ls2.gather %t[%ids] : tensor<33xf32>, tensor<3x7xi64> -> "
           "tensor<3x7xf32>",
           {{"y", "tensor<3x7xf32>", {3, 7}}}, rng);
  // Rows of an activation (a dynamic row count): the gradient is a
  // scatter_add sized by the table's ls2.dim.
  checkVjp("gather from a dynamic row count",
           {{"t", "tensor<?x3xf32>", uniformTensor(rng, {9, 3})},
            {"ids", "tensor<4xi32>", ints(ElementType::I32, {4}, {8, 0, 3, 0}), false}},
           "  %y = ls2.gather %t[%ids] : tensor<?x3xf32>, tensor<4xi32> -> tensor<4x3xf32>",
           {{"y", "tensor<4x3xf32>", {4, 3}}}, rng);
  checkVjp("gather with a fill value",
           {{"t", "tensor<?x3xf32>", uniformTensor(rng, {5, 3})},
            {"ids", "tensor<6xi32>", ints(ElementType::I32, {6}, {4, -1, 0, 7, 0, 2}), false}},
           "  %y = ls2.gather %t[%ids] {fill_value = 0.25 : f64} : tensor<?x3xf32>, "
           "tensor<6xi32> -> tensor<6x3xf32>",
           {{"y", "tensor<6x3xf32>", {6, 3}}}, rng);
  checkVjp("scatter_add dropping out-of-range ids",
           {{"u", "tensor<4x3xf32>", uniformTensor(rng, {4, 3})},
            {"ids", "tensor<4xi32>", ints(ElementType::I32, {4}, {5, -1, 9, 0}), false}},
           "  %y = ls2.scatter_add %u, %ids {drop_out_of_range} : tensor<4x3xf32>, "
           "tensor<4xi32> -> tensor<6x3xf32>",
           {{"y", "tensor<6x3xf32>", {6, 3}}}, rng);
  checkVjp("scatter_add into a dynamic row count",
           {{"u", "tensor<4x3xf32>", uniformTensor(rng, {4, 3})},
            {"ids", "tensor<4xi32>", ints(ElementType::I32, {4}, {5, 1, 5, 0}), false},
            {"like", "tensor<?xf32>", uniformTensor(rng, {6}), false}},
           "  %n = ls2.dim %like[0] : tensor<?xf32>\n"
           "  %y = ls2.scatter_add %u, %ids[%n] : tensor<4x3xf32>, tensor<4xi32> -> "
           "tensor<?x3xf32>",
           {{"y", "tensor<?x3xf32>", {6, 3}}}, rng);
  HostTensor ids = ints(ElementType::I32, {7}, {0, 2, 2, 6, 1, 2, 0});
  checkVjp("scatter_add",
           {{"u", "tensor<?x3xf32>", uniformTensor(rng, {7, 3})},
            {"ids", "tensor<?xi32>", ids, false}},
           "  %y = ls2.scatter_add %u, %ids : tensor<?x3xf32>, tensor<?xi32> -> "
           "tensor<7x3xf32>",
           {{"y", "tensor<7x3xf32>", {7, 3}}}, rng);
  checkVjp("scatter_add padding_idx",
           {{"u", "tensor<7x3xf32>", uniformTensor(rng, {7, 3})},
            {"ids", "tensor<7xi32>", ids, false}},
           "  %y = ls2.scatter_add %u, %ids {padding_idx = 2 : i64} : "
           "tensor<7x3xf32>, tensor<7xi32> -> tensor<7x3xf32>",
           {{"y", "tensor<7x3xf32>", {7, 3}}}, rng);
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

TEST(GradientCheckOps, DropoutWithAFixedSeed) {
  std::mt19937 rng = testRng();
  checkVjp("dropout",
           {{"x", "tensor<?x33xf32>", uniformTensor(rng, {7, 33})},
            {"seed", "tensor<i64>", i64Scalar(20240601), false},
            {"offset", "tensor<i64>", i64Scalar(3), false}},
           "  %y = ls2.dropout %x, %seed, %offset {rate = 3.000000e-01 : f32, "
           "stream = 4 : i64} : tensor<?x33xf32>",
           {{"y", "tensor<?x33xf32>", {7, 33}}}, rng);
}

TEST(GradientCheckOps, GeluBothForms) {
  std::mt19937 rng = testRng();
  checkVjp("gelu",
           {{"x", "tensor<?x33xf32>", uniformTensor(rng, {3, 33}, -3, 3)}},
           "  %y = ls2.gelu %x : tensor<?x33xf32>",
           {{"y", "tensor<?x33xf32>", {3, 33}}}, rng);
  checkVjp("gelu tanh",
           {{"x", "tensor<7x1xf32>", uniformTensor(rng, {7, 1}, -3, 3)}},
           "  %y = ls2.gelu %x {approximate = #ls2<gelu_approximation tanh>} : "
           "tensor<7x1xf32>",
           {{"y", "tensor<7x1xf32>", {7, 1}}}, rng);
}

TEST(GradientCheckOps, LayerNormThroughOutputMeanAndRstd) {
  std::mt19937 rng = testRng();
  struct Case {
    std::vector<int64_t> x;
    std::string xType, statsType;
    std::vector<int64_t> stats;
  };
  std::vector<Case> cases = {
      {{7, 33}, "tensor<?x33xf32>", "tensor<?xf32>", {7}},
      {{1, 7}, "tensor<1x7xf32>", "tensor<1xf32>", {1}},
      {{3, 1, 3}, "tensor<3x?x3xf32>", "tensor<3x?xf32>", {3, 1}},
  };
  for (const Case &c : cases) {
    int64_t h = c.x.back();
    std::string g = "tensor<" + std::to_string(h) + "xf32>";
    std::vector<Arg> args = {{"x", c.xType, uniformTensor(rng, c.x, -2, 2)},
                             {"g", g, uniformTensor(rng, {h}, 0.5, 1.5)},
                             {"b", g, uniformTensor(rng, {h})}};
    std::string body = "  %y, %mean, %rstd = ls2.layer_norm %x, %g, %b "
                       "{epsilon = 1.000000e-05 : f32} : " +
                       c.xType + ", " + g + ", " + g;
    checkVjp("layer_norm " + c.xType + " output only", args, body,
             {{"y", c.xType, c.x}}, rng);
    checkVjp("layer_norm " + c.xType + " with mean and rstd", args, body,
             {{"y", c.xType, c.x},
              {"mean", c.statsType, c.stats},
              {"rstd", c.statsType, c.stats}},
             rng);
  }
  // Only the statistics reach the loss: gamma and beta then have no
  // gradient (zeros), so they are inputs here.
  checkVjp("layer_norm statistics only",
           {{"x", "tensor<3x33xf32>", uniformTensor(rng, {3, 33}, -2, 2)},
            {"g", "tensor<33xf32>", uniformTensor(rng, {33}), false},
            {"b", "tensor<33xf32>", uniformTensor(rng, {33}), false}},
           "  %y, %mean, %rstd = ls2.layer_norm %x, %g, %b {epsilon = "
           "1.000000e-05 : f32} : tensor<3x33xf32>, tensor<33xf32>, "
           "tensor<33xf32>",
           {{"mean", "tensor<3xf32>", {3}}, {"rstd", "tensor<3xf32>", {3}}}, rng);
}

TEST(GradientCheckOps, SoftmaxMaskCausalScale) {
  std::mt19937 rng = testRng();
  checkVjp("additive mask broadcast over dim 0, scale",
           {{"x", "tensor<3x7x33xf32>", uniformTensor(rng, {3, 7, 33}, -2, 2)},
            {"m", "tensor<1x7x33xf32>", uniformTensor(rng, {1, 7, 33}, -1, 1)}},
           "  %y = ls2.softmax %x mask %m : tensor<1x7x33xf32> {scale = "
           "2.500000e-01 : f32} : tensor<3x7x33xf32> -> tensor<3x7x33xf32>",
           {{"y", "tensor<3x7x33xf32>", {3, 7, 33}}}, rng);
  // Causal with more queries than keys: the first 26 rows see no key.
  std::vector<int64_t> keep = {1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
  checkVjp("i1 mask, causal, rows with no visible key",
           {{"x", "tensor<2x33x7xf32>", uniformTensor(rng, {2, 33, 7}, -2, 2)},
            {"k", "tensor<2x1x7xi1>", ints(ElementType::I1, {2, 1, 7}, keep),
             false}},
           "  %y = ls2.softmax %x mask %k : tensor<2x1x7xi1> {causal, scale = "
           "1.500000e+00 : f32} : tensor<2x33x7xf32> -> tensor<2x33x7xf32>",
           {{"y", "tensor<2x33x7xf32>", {2, 33, 7}}}, rng);
  checkVjp("additive full mask, causal, dynamic",
           {{"x", "tensor<?x3x3xf32>", uniformTensor(rng, {7, 3, 3}, -2, 2)},
            {"m", "tensor<?x3x3xf32>", uniformTensor(rng, {7, 3, 3}, -1, 1)}},
           "  %y = ls2.softmax %x mask %m : tensor<?x3x3xf32> {causal} : "
           "tensor<?x3x3xf32> -> tensor<?x3x3xf32>",
           {{"y", "tensor<?x3x3xf32>", {7, 3, 3}}}, rng);
  checkVjp("rank 1",
           {{"x", "tensor<33xf32>", uniformTensor(rng, {33}, -2, 2)}},
           "  %y = ls2.softmax %x : tensor<33xf32> -> tensor<33xf32>",
           {{"y", "tensor<33xf32>", {33}}}, rng);
}

namespace {

std::vector<int64_t> offsets(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> cu = {0};
  for (int64_t l : lengths)
    cu.push_back(cu.back() + l);
  return cu;
}

void checkAttention(const std::string &label, std::mt19937 &rng, int64_t hq,
                    int64_t hkv, int64_t d, std::vector<int64_t> lq,
                    std::vector<int64_t> lk, const std::string &attrs,
                    bool dropout) {
  std::vector<int64_t> cuq = offsets(lq), cuk = offsets(lk);
  std::string qt = "tensor<?x" + std::to_string(hq) + "x" + std::to_string(d) +
                   "xf32>";
  std::string kt = "tensor<?x" + std::to_string(hkv) + "x" +
                   std::to_string(d) + "xf32>";
  std::string lt = "tensor<?x" + std::to_string(hq) + "xf32>";
  std::vector<Arg> args = {
      {"q", qt, uniformTensor(rng, {cuq.back(), hq, d})},
      {"k", kt, uniformTensor(rng, {cuk.back(), hkv, d})},
      {"v", kt, uniformTensor(rng, {cuk.back(), hkv, d})},
      {"cuq", "tensor<?xi32>",
       ints(ElementType::I32, {static_cast<int64_t>(cuq.size())}, cuq), false},
      {"cuk", "tensor<?xi32>",
       ints(ElementType::I32, {static_cast<int64_t>(cuk.size())}, cuk), false}};
  if (dropout) {
    args.push_back({"seed", "tensor<i64>", i64Scalar(0x5eed5eed5eedLL), false});
    args.push_back({"offset", "tensor<i64>", i64Scalar(11), false});
  }
  checkVjp(label, args,
           "  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk" +
               std::string(dropout ? " dropout(%seed, %offset)" : "") + " " +
               attrs + " : " + qt + ", " + kt + ", " + kt +
               ", tensor<?xi32>, tensor<?xi32> -> " + qt + ", " + lt,
           {{"o", qt, {cuq.back(), hq, d}}}, rng);
}

} // namespace

TEST(GradientCheckOps, AttentionCausalGqaVarlenDropout) {
  std::mt19937 rng = testRng();
  // Sequences of length 1, 3 and 7 (and 33 keys), GQA and MQA.
  checkAttention("causal gqa varlen", rng, 4, 2, 7, {1, 3, 7}, {1, 3, 7},
                 "{causal}", false);
  checkAttention("mqa lq != lk, scale", rng, 3, 1, 3, {3, 1, 7}, {7, 1, 33},
                 "{scale = 3.000000e-01 : f32}", false);
  // Bottom-right causal with Lq > Lk: rows that see no key (and a sequence
  // with no keys at all) have zero output and add nothing.
  checkAttention("causal lq > lk, rows with no key", rng, 2, 2, 3, {7, 1, 3},
                 {3, 1, 0}, "{causal}", false);
  checkAttention("dropout with a fixed seed", rng, 4, 2, 7, {3, 1, 7},
                 {7, 1, 3},
                 "{causal, dropout_rate = 2.000000e-01 : f32, stream = 5 : i64}",
                 true);
}

TEST(GradientCheckOps, CrossEntropySmoothingIgnoreIndexReductions) {
  std::mt19937 rng = testRng();
  HostTensor targets = ints(ElementType::I32, {7}, {0, 3, 32, 3, 5, 17, 1});
  for (std::string reduction : {"none", "sum", "mean"}) {
    bool none = reduction == "none";
    std::string result = none ? "tensor<?xf32>" : "tensor<f32>";
    std::vector<int64_t> shape = none ? std::vector<int64_t>{7}
                                      : std::vector<int64_t>{};
    checkVjp("cross_entropy " + reduction,
             {{"x", "tensor<?x33xf32>", uniformTensor(rng, {7, 33}, -3, 3)},
              {"t", "tensor<?xi32>", targets, false}},
             "  %y = ls2.cross_entropy %x, %t {label_smoothing = 1.000000e-01 "
             ": f32, ignore_index = 3 : i64, reduction = #ls2<loss_reduction " +
                 reduction + ">} : tensor<?x33xf32>, tensor<?xi32> -> " +
                 result,
             {{"y", result, shape}}, rng);
  }
  checkVjp("cross_entropy one row, 3 classes, i64 targets",
           {{"x", "tensor<1x3xf32>", uniformTensor(rng, {1, 3}, -3, 3)},
            {"t", "tensor<1xi64>", ints(ElementType::I64, {1}, {2}), false}},
           "  %y = ls2.cross_entropy %x, %t : tensor<1x3xf32>, tensor<1xi64> "
           "-> tensor<f32>",
           {{"y", "tensor<f32>", {}}}, rng);
}

namespace {

/// `t` stored as `type` (F64 mode computes on the values as they are, so a
/// half-typed program is differentiated exactly: this checks the VJPs'
/// casts and f32 islands).
HostTensor as(HostTensor t, ElementType type) {
  t.type = type;
  return t;
}

} // namespace

TEST(GradientCheckOps, HalfTypedProgramsInF64Mode) {
  std::mt19937 rng = testRng();
  const ElementType bf16 = ElementType::BF16, f16 = ElementType::F16;
  checkVjp("matmul bf16 operands, f32 result, shared b transpose_a",
           {{"a", "tensor<2x7x3xbf16>", as(uniformTensor(rng, {2, 7, 3}), bf16)},
            {"b", "tensor<7x33xbf16>", as(uniformTensor(rng, {7, 33}), bf16)}},
           "  %y = ls2.matmul %a, %b {transpose_a} : tensor<2x7x3xbf16>, "
           "tensor<7x33xbf16> -> tensor<2x3x33xf32>",
           {{"y", "tensor<2x3x33xf32>", {2, 3, 33}}}, rng);
  checkVjp("tanh, div, max in f16",
           {{"a", "tensor<?x7xf16>", as(uniformTensor(rng, {3, 7}), f16)},
            {"b", "tensor<?x7xf16>", as(uniformTensor(rng, {3, 7}, 0.5, 2), f16)}},
           "  %t = ls2.tanh %a : tensor<?x7xf16>\n"
           "  %d = ls2.div %t, %b : tensor<?x7xf16>\n"
           "  %m = ls2.max %d, %b : tensor<?x7xf16>\n"
           "  %s = ls2.add %m, %d : tensor<?x7xf16>\n"
           "  %y = ls2.cast %s : tensor<?x7xf16> to tensor<?x7xf32>",
           {{"y", "tensor<?x7xf32>", {3, 7}}}, rng);
  checkVjp("layer_norm f16 with mean and rstd",
           {{"x", "tensor<?x33xf16>", as(uniformTensor(rng, {7, 33}, -2, 2), f16)},
            {"g", "tensor<33xf16>", as(uniformTensor(rng, {33}, 0.5, 1.5), f16)},
            {"b", "tensor<33xf16>", as(uniformTensor(rng, {33}), f16)}},
           "  %h, %mean, %rstd = ls2.layer_norm %x, %g, %b {epsilon = "
           "1.000000e-05 : f32} : tensor<?x33xf16>, tensor<33xf16>, "
           "tensor<33xf16>\n"
           "  %y = ls2.cast %h : tensor<?x33xf16> to tensor<?x33xf32>",
           {{"y", "tensor<?x33xf32>", {7, 33}},
            {"mean", "tensor<?xf32>", {7}},
            {"rstd", "tensor<?xf32>", {7}}},
           rng);
  checkVjp("softmax f16 to f32 with an f16 additive mask",
           {{"x", "tensor<3x7x7xf16>", as(uniformTensor(rng, {3, 7, 7}, -2, 2), f16)},
            {"m", "tensor<3x1x7xf16>", as(uniformTensor(rng, {3, 1, 7}), f16)}},
           "  %y = ls2.softmax %x mask %m : tensor<3x1x7xf16> {causal, scale = "
           "5.000000e-01 : f32} : tensor<3x7x7xf16> -> tensor<3x7x7xf32>",
           {{"y", "tensor<3x7x7xf32>", {3, 7, 7}}}, rng);
  checkVjp("gelu and reduce_max in bf16",
           {{"x", "tensor<7x33xbf16>", as(distinctTensor(rng, {7, 33}, 0.01), bf16)}},
           "  %g = ls2.gelu %x {approximate = #ls2<gelu_approximation tanh>} : "
           "tensor<7x33xbf16>\n"
           "  %r = ls2.reduce_max %x [1] : tensor<7x33xbf16> -> tensor<7xbf16>\n"
           "  %gc = ls2.cast %g : tensor<7x33xbf16> to tensor<7x33xf32>\n"
           "  %y = ls2.cast %r : tensor<7xbf16> to tensor<7xf32>",
           {{"gc", "tensor<7x33xf32>", {7, 33}}, {"y", "tensor<7xf32>", {7}}},
           rng);
  std::vector<int64_t> cu = {0, 1, 4, 11};
  checkVjp("attention f16, gqa causal",
           {{"q", "tensor<?x4x7xf16>", as(uniformTensor(rng, {11, 4, 7}), f16)},
            {"k", "tensor<?x2x7xf16>", as(uniformTensor(rng, {11, 2, 7}), f16)},
            {"v", "tensor<?x2x7xf16>", as(uniformTensor(rng, {11, 2, 7}), f16)},
            {"cu", "tensor<4xi32>", ints(ElementType::I32, {4}, cu), false}},
           "  %o, %lse = ls2.attention %q, %k, %v, %cu, %cu {causal} : "
           "tensor<?x4x7xf16>, tensor<?x2x7xf16>, tensor<?x2x7xf16>, "
           "tensor<4xi32>, tensor<4xi32> -> tensor<?x4x7xf16>, tensor<?x4xf32>\n"
           "  %y = ls2.cast %o : tensor<?x4x7xf16> to tensor<?x4x7xf32>",
           {{"y", "tensor<?x4x7xf32>", {11, 4, 7}}}, rng);
  checkVjp("cross_entropy bf16 logits, none",
           {{"x", "tensor<?x33xbf16>", as(uniformTensor(rng, {7, 33}, -3, 3), bf16)},
            {"t", "tensor<?xi64>",
             ints(ElementType::I64, {7}, {0, 3, 32, -100, 5, 17, 1}), false}},
           "  %y = ls2.cross_entropy %x, %t {label_smoothing = 2.000000e-01 : "
           "f32, reduction = #ls2<loss_reduction none>} : tensor<?x33xbf16>, "
           "tensor<?xi64> -> tensor<?xf32>",
           {{"y", "tensor<?xf32>", {7}}}, rng);
  checkVjp("gather bf16 table, dropout f16",
           {{"t", "tensor<7x33xbf16>", as(uniformTensor(rng, {7, 33}), bf16)},
            {"ids", "tensor<3xi32>", ints(ElementType::I32, {3}, {6, 0, 6}), false},
            {"seed", "tensor<i64>", i64Scalar(99), false},
            {"offset", "tensor<i64>", i64Scalar(1), false}},
           "  %e = ls2.gather %t[%ids] : tensor<7x33xbf16>, tensor<3xi32> -> "
           "tensor<3x33xbf16>\n"
           "  %h = ls2.cast %e : tensor<3x33xbf16> to tensor<3x33xf16>\n"
           "  %d = ls2.dropout %h, %seed, %offset {rate = 5.000000e-01 : f32, "
           "stream = 1 : i64} : tensor<3x33xf16>\n"
           "  %y = ls2.cast %d : tensor<3x33xf16> to tensor<3x33xf32>",
           {{"y", "tensor<3x33xf32>", {3, 33}}}, rng);
}
