//===- BuildSequenceParallel.cpp - the sequence-parallel attention module --===//
//
// Written as ls2 assembly and parsed: the functions are a handful of ops
// each, and the text is what `ls2c compile --emit=mlir` shows.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Frontend/SequenceParallelModule.h"

#include "ls2c/Frontend/Frontend.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <string>

namespace ls2c {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

/// "tensor<?xAxBxE>".
std::string tensor(const std::vector<int64_t> &staticDims, const std::string &element) {
  std::string t = "tensor<?x";
  for (int64_t d : staticDims)
    t += str(d) + "x";
  return t + element + ">";
}

/// An argument's attribute dict: input named `name`, bounded by `rows` x
/// the static dims.
std::string input(const std::string &name, int64_t rows, const std::vector<int64_t> &dims) {
  std::string bound = str(rows);
  for (int64_t d : dims)
    bound += ", " + str(d);
  return "{ls2.kind = \"input\", ls2.name = \"" + name + "\", ls2.max_shape = array<i64: " +
         bound + ">}";
}

std::string output(const std::string &name) {
  return "{ls2.kind = \"output\", ls2.name = \"" + name + "\"}";
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> buildSequenceParallelModule(mlir::MLIRContext &context,
                                                              const ModelDescription &desc) {
  loadFrontendDialects(context);
  const std::string e = desc.dtype == DType::F16    ? "f16"
                        : desc.dtype == DType::BF16 ? "bf16"
                                                    : "f32";
  const int64_t h = desc.heads, hkv = desc.kv_heads, d = desc.headDim();
  const int64_t tokens = desc.max_batch_tokens;
  const bool causal = isCausalLM(desc.architecture);
  const std::string q = tensor({h, d}, e), kv = tensor({hkv, d}, e), lse = tensor({h}, "f32");
  const std::string q32 = tensor({h, d}, "f32"), cu = "tensor<?xi32>";
  const std::string flat = tensor({}, "f32"), flatE = tensor({}, e);
  auto cuNamed = [&](const std::string &name) {
    return "%" + name + ": " + cu + " " + input(name, tokens + 1, {});
  };
  const std::string cuArg = cuNamed("cu_seqlens");
  const std::string qkv = "%q: " + q + " " + input("q", tokens, {h, d}) + ", %k: " + kv + " " +
                          input("k", tokens, {hkv, d}) + ", %v: " + kv + " " +
                          input("v", tokens, {hkv, d});
  const std::string attnTypes = q + ", " + kv + ", " + kv + ", " + cu + ", " + cu;
  const std::string fwdResults =
      "(" + q + " " + output("out") + ", " + lse + " " + output("lse") + ")";
  const std::string gradResults = "(" + q + " " + output("dq") + ", " + kv + " " +
                                  output("dk") + ", " + kv + " " + output("dv") + ")";
  const std::string gradArgs = "%dout: " + q + " " + input("dout", tokens, {h, d}) + ", " + qkv +
                               ", %out: " + q + " " + input("out", tokens, {h, d}) +
                               ", %lse: " + lse + " " + input("lse", tokens, {h});
  const std::string gradTypes = q + ", " + kv + ", " + lse + ", " + cu + ", " + cu;
  // Without a causal mask a diagonal block is like any other.
  const std::string mask = causal ? " {causal}" : "";

  std::string text = "module attributes {ls2.differentiated} {\n";
  text += "func.func @attention_block_diagonal(" + qkv + ", " + cuArg + ") -> " + fwdResults +
          " {\n  %o, %l = ls2.attention %q, %k, %v, %cu_seqlens, %cu_seqlens" + mask + " : " +
          attnTypes + " -> " + q + ", " + lse + "\n  return %o, %l : " + q + ", " + lse + "\n}\n";
  text += "func.func @attention_block(" + qkv + ", " + cuNamed("cu_seqlens_q") + ", " +
          cuNamed("cu_seqlens_k") + ") -> " + fwdResults +
          " {\n  %o, %l = ls2.attention %q, %k, %v, %cu_seqlens_q, %cu_seqlens_k : " + attnTypes +
          " -> " + q + ", " + lse + "\n  return %o, %l : " + q + ", " + lse + "\n}\n";
  text += "func.func @attention_block_grad_diagonal(" + gradArgs + ", " + cuArg + ") -> " +
          gradResults +
          " {\n  %dq, %dk, %dv = ls2.attention_grad %dout, %q, %k, %v, %out, %lse, "
          "%cu_seqlens, %cu_seqlens" +
          mask + " : " + gradTypes + "\n  return %dq, %dk, %dv : " + q + ", " + kv + ", " + kv +
          "\n}\n";
  text += "func.func @attention_block_grad(" + gradArgs + ", " + cuNamed("cu_seqlens_q") + ", " +
          cuNamed("cu_seqlens_k") + ") -> " + gradResults +
          " {\n  %dq, %dk, %dv = ls2.attention_grad %dout, %q, %k, %v, %out, %lse, "
          "%cu_seqlens_q, %cu_seqlens_k : " +
          gradTypes + "\n  return %dq, %dk, %dv : " + q + ", " + kv + ", " + kv + "\n}\n";

  // The merge, in f32. s = sigmoid(lse_b - lse) = 1 / (1 + exp(lse - lse_b))
  // is 1 when lse is -inf and 0 when lse_b is; where lse_b is -inf (both
  // -inf included, where s would be NaN) it is set to 0, so out stays.
  // logsigmoid(x) = min(x, 0) - log(1 + exp(-|x|)) never overflows.
  const std::string castB = e == "f32" ? "  %ob = ls2.add %out_b, %zero : " + q32 + ", tensor<f32>\n"
                                       : "  %ob = ls2.cast %out_b : " + q + " to " + q32 + "\n";
  text += "func.func @merge_attention(%out_acc: " + q32 + " " + input("out_acc", tokens, {h, d}) +
          ", %lse_acc: " + lse + " " + input("lse_acc", tokens, {h}) + ", %out_b: " + q + " " +
          input("out_b", tokens, {h, d}) + ", %lse_b: " + lse + " " +
          input("lse_b", tokens, {h}) + ") -> (" + q32 + " " + output("out_acc") + ", " + lse +
          " " + output("lse_acc") + ") {\n";
  text += "  %zero = ls2.constant dense<0.0> : tensor<f32>\n"
          "  %one = ls2.constant dense<1.0> : tensor<f32>\n"
          "  %ninf = ls2.constant dense<0xFF800000> : tensor<f32>\n"
          "  %x = ls2.sub %lse_acc, %lse_b : " + lse + "\n"
          "  %ex = ls2.exp %x : " + lse + "\n"
          "  %den = ls2.add %ex, %one : " + lse + ", tensor<f32>\n"
          "  %sig = ls2.div %one, %den : tensor<f32>, " + lse + "\n"
          "  %empty_b = ls2.compare eq, %lse_b, %ninf : " + lse + ", tensor<f32>\n"
          "  %s = ls2.select %empty_b, %zero, %sig : tensor<?x" + str(h) +
          "xi1>, tensor<f32>, " + lse + "\n"
          "  %negx = ls2.neg %x : " + lse + "\n"
          "  %absx = ls2.max %x, %negx : " + lse + "\n"
          "  %nabs = ls2.neg %absx : " + lse + "\n"
          "  %e2 = ls2.exp %nabs : " + lse + "\n"
          "  %l1p = ls2.add %e2, %one : " + lse + ", tensor<f32>\n"
          "  %lg = ls2.log %l1p : " + lse + "\n"
          "  %minx = ls2.min %x, %zero : " + lse + ", tensor<f32>\n"
          "  %logsig = ls2.sub %minx, %lg : " + lse + "\n"
          "  %merged = ls2.sub %lse_acc, %logsig : " + lse + "\n"
          "  %empty_a = ls2.compare eq, %lse_acc, %ninf : " + lse + ", tensor<f32>\n"
          "  %l1 = ls2.select %empty_a, %lse_b, %merged : tensor<?x" + str(h) + "xi1>, " + lse +
          ", " + lse + "\n"
          "  %lse_new = ls2.select %empty_b, %lse_acc, %l1 : tensor<?x" + str(h) + "xi1>, " +
          lse + ", " + lse + "\n"
          "  %t = ls2.dim %out_acc[0] : " + q32 + "\n"
          "  %sb = ls2.broadcast %s[%t] {dims = array<i64: 0, 1>} : " + lse + " -> " + q32 +
          "\n" + castB +
          "  %diff = ls2.sub %out_acc, %ob : " + q32 + "\n"
          "  %sd = ls2.mul %sb, %diff : " + q32 + "\n"
          "  %out_new = ls2.sub %out_acc, %sd : " + q32 + "\n"
          "  return %out_new, %lse_new : " + q32 + ", " + lse + "\n}\n";

  const int64_t flatBound = tokens * h * d;
  const std::string partF32 =
      e == "f32" ? "" : "  %p32 = ls2.cast %part : " + flatE + " to " + flat + "\n";
  text += "func.func @accumulate(%acc: " + flat + " " + input("acc", flatBound, {}) +
          ", %part: " + flatE + " " + input("part", flatBound, {}) + ") -> (" + flat + " " +
          output("acc") + ") {\n" + partF32 + "  %sum = ls2.add %acc, " +
          (e == "f32" ? "%part" : "%p32") + " : " + flat + "\n  return %sum : " + flat + "\n}\n";
  const std::string rounded = e == "f32" ? "  %r = ls2.mul %acc, %one : " + flat + ", tensor<f32>\n"
                                         : "  %r = ls2.cast %acc : " + flat + " to " + flatE + "\n";
  text += "func.func @round(%acc: " + flat + " " + input("acc", flatBound, {}) + ") -> (" +
          flatE + " " + output("rounded") + ") {\n" +
          (e == "f32" ? "  %one = ls2.constant dense<1.0> : tensor<f32>\n" : "") + rounded +
          "  return %r : " + flatE + "\n}\n";
  text += "}\n";

  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(
      text, mlir::ParserConfig(&context));
  if (!module || failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

} // namespace ls2c
