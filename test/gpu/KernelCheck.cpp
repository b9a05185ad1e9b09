//===- KernelCheck.cpp - run generated kernels against reference results --===//
//
// ls2c-kernel-check CASEDIR...
//
// Each CASEDIR/<kernel>/case.json (written by ls2c-kernel-cases) names a
// cubin, its launch config and its parameters in order:
//   {"kind": "pointer", "role": "input",   "file": F, "bytes": N}
//   {"kind": "pointer", "role": "output",  "file": F (expected), "bytes": N,
//    "dtype": "f32"|"f16"|"bf16"|"i32"|"i64"|"i1", "tolerance": T}
//   {"kind": "pointer", "role": "scratch", "bytes": N, "counter_bytes": C
//    [, "file": F]}
// Scratch is shared by all kernels of a program, so it starts as the
// executor's would after other kernels ran: the first C bytes (the counters,
// kScratchCounterBytes) zero, then F's bytes (what an earlier kernel leaves
// for this one, such as attention's D_i for dk/dv), the rest 0xFF; after
// each run the counters must be zero again.
//   {"kind": "int64", "value": V}
// A case may name kernels to run after its own with the same parameters
// ("then": [{"kernel", "cubin", "grid", "block", "shared_bytes"}], a row
// reduction's column sums, a sorted scatter_add's sums). Outputs start as 0xFF bytes (NaN) so an element
// never written fails. The kernels run twice; the second run must give the
// same bits (fixed-order reductions). Floats pass with relative L2 error <=
// T and NaN exactly where the reference has NaN; integers must be equal. No
// MLIR: this runs on the GPU machine. Exit 0 when every case passes.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string readFile(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr, *text = nullptr;
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &text);
    throw std::runtime_error(std::string(what) + ": " + (name ? name : "?") + " (" +
                             (text ? text : "") + ")");
  }
}

/// Lets `fn` launch with `dynamic` bytes of dynamic shared memory: the 48 KiB
/// limit without the opt-in counts static __shared__ arrays too (Executor.cpp).
void allowDynamicShared(CUfunction fn, unsigned dynamic) {
  int staticShared = 0;
  check(cuFuncGetAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
        "cuFuncGetAttribute");
  if (dynamic > 0 && dynamic + static_cast<unsigned>(staticShared) > 48 * 1024)
    check(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(dynamic)),
          "cuFuncSetAttribute");
}

double f16ToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v;
  if (exp == 0)
    v = std::ldexp(man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(man + 1024, exp - 25);
  return sign ? -v : v;
}

double bf16ToDouble(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<double> decode(const std::string &bytes, const std::string &dtype) {
  std::vector<double> out;
  auto get = [&](size_t i, auto tag) {
    decltype(tag) x;
    std::memcpy(&x, bytes.data() + i * sizeof(x), sizeof(x));
    return x;
  };
  if (dtype == "f32")
    for (size_t i = 0; i < bytes.size() / 4; ++i)
      out.push_back(get(i, float{}));
  else if (dtype == "f16")
    for (size_t i = 0; i < bytes.size() / 2; ++i)
      out.push_back(f16ToDouble(get(i, uint16_t{})));
  else if (dtype == "bf16")
    for (size_t i = 0; i < bytes.size() / 2; ++i)
      out.push_back(bf16ToDouble(get(i, uint16_t{})));
  else if (dtype == "i32")
    for (size_t i = 0; i < bytes.size() / 4; ++i)
      out.push_back(get(i, int32_t{}));
  else if (dtype == "i64")
    for (size_t i = 0; i < bytes.size() / 8; ++i)
      out.push_back(static_cast<double>(get(i, int64_t{})));
  else if (dtype == "i1")
    for (size_t i = 0; i < bytes.size(); ++i)
      out.push_back(static_cast<uint8_t>(bytes[i]) != 0);
  else
    throw std::runtime_error("unknown dtype " + dtype);
  return out;
}

struct Result {
  bool pass = true;
  std::string detail;
};

Result runCase(const std::filesystem::path &dir) {
  nlohmann::json c = nlohmann::json::parse(readFile(dir / "case.json"));
  std::string cubin = readFile(dir / c["cubin"].get<std::string>());
  CUmodule module;
  check(cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  CUfunction fn;
  std::string name = c["kernel"];
  check(cuModuleGetFunction(&fn, module, name.c_str()), "cuModuleGetFunction");
  unsigned shared = c["shared_bytes"];
  allowDynamicShared(fn, shared);

  struct Param {
    std::string kind, role, file, dtype;
    size_t bytes = 0, counterBytes = 0;
    double tolerance = 0;
    long long value = 0;
    CUdeviceptr ptr = 0;
  };
  std::vector<Param> params;
  for (const auto &p : c["params"]) {
    Param q;
    q.kind = p["kind"];
    if (q.kind == "int64") {
      q.value = p["value"];
    } else {
      q.role = p["role"];
      q.bytes = p["bytes"];
      if (p.contains("file"))
        q.file = p["file"];
      if (q.role == "output") {
        q.dtype = p["dtype"];
        q.tolerance = p["tolerance"];
      }
      check(cuMemAlloc(&q.ptr, std::max<size_t>(q.bytes, 16)), "cuMemAlloc");
      if (q.role == "input") {
        std::string data = readFile(dir / q.file);
        check(cuMemcpyHtoD(q.ptr, data.data(), data.size()), "cuMemcpyHtoD");
      } else if (q.role == "scratch") {
        q.counterBytes = std::min<size_t>(p.value("counter_bytes", q.bytes), q.bytes);
        check(cuMemsetD8(q.ptr, 0xFF, q.bytes), "cuMemsetD8");
        check(cuMemsetD8(q.ptr, 0, q.counterBytes), "cuMemsetD8");
        if (!q.file.empty()) {
          // What earlier kernels of the program leave past the counters.
          std::string data = readFile(dir / q.file);
          if (q.counterBytes + data.size() > q.bytes)
            throw std::runtime_error(q.file + " is larger than the scratch after its counters");
          check(cuMemcpyHtoD(q.ptr + q.counterBytes, data.data(), data.size()), "cuMemcpyHtoD");
        }
      } else {
        check(cuMemsetD8(q.ptr, 0xFF, q.bytes), "cuMemsetD8");
      }
    }
    params.push_back(q);
  }
  std::vector<void *> args;
  for (Param &q : params)
    args.push_back(q.kind == "int64" ? static_cast<void *>(&q.value)
                                     : static_cast<void *>(&q.ptr));
  // The kernels in launch order: the case's, then those of "then" (a row
  // reduction's column sums), each with the same parameters.
  struct Launch {
    CUfunction fn;
    unsigned grid, block, shared;
  };
  std::vector<Launch> launches{{fn, c["grid"], c["block"], shared}};
  std::vector<CUmodule> modules;
  for (const auto &t : c.value("then", nlohmann::json::array())) {
    std::string image = readFile(dir / t["cubin"].get<std::string>());
    CUmodule m;
    check(cuModuleLoadData(&m, image.data()), "cuModuleLoadData");
    modules.push_back(m);
    CUfunction f;
    check(cuModuleGetFunction(&f, m, t["kernel"].get<std::string>().c_str()),
          "cuModuleGetFunction");
    unsigned thenShared = t["shared_bytes"];
    allowDynamicShared(f, thenShared);
    launches.push_back({f, t["grid"], t["block"], thenShared});
  }
  auto launch = [&] {
    for (const Launch &l : launches) {
      if (l.grid == 0)
        continue;
      check(cuLaunchKernel(l.fn, l.grid, 1, 1, l.block, 1, 1, l.shared, nullptr, args.data(),
                           nullptr),
            "cuLaunchKernel");
    }
    check(cuCtxSynchronize(), "kernel execution");
    for (Param &q : params)
      if (q.role == "scratch" && q.counterBytes) {
        std::string counters(q.counterBytes, '\0');
        check(cuMemcpyDtoH(counters.data(), q.ptr, q.counterBytes), "cuMemcpyDtoH");
        if (counters.find_first_not_of('\0') != std::string::npos)
          throw std::runtime_error("the kernel left a scratch counter non-zero");
      }
  };
  launch();
  std::vector<std::string> first;
  for (Param &q : params)
    if (q.role == "output") {
      std::string got(q.bytes, '\0');
      check(cuMemcpyDtoH(got.data(), q.ptr, q.bytes), "cuMemcpyDtoH");
      first.push_back(got);
    }
  launch();

  Result r;
  size_t k = 0;
  for (Param &q : params) {
    if (q.role != "output")
      continue;
    std::string got(q.bytes, '\0');
    check(cuMemcpyDtoH(got.data(), q.ptr, q.bytes), "cuMemcpyDtoH");
    if (got != first[k++]) {
      r.pass = false;
      r.detail += " " + q.file + ": second run differs;";
    }
    std::vector<double> a = decode(got, q.dtype), e = decode(readFile(dir / q.file), q.dtype);
    double num = 0, den = 0;
    size_t nanMismatch = 0, worst = 0;
    double worstErr = -1;
    for (size_t i = 0; i < e.size(); ++i) {
      if (std::isnan(e[i]) || std::isnan(a[i])) {
        nanMismatch += std::isnan(e[i]) != std::isnan(a[i]);
        continue;
      }
      if (a[i] == e[i])
        continue; // equal infinities (an lse of -inf) are no error
      double d = a[i] - e[i];
      num += d * d;
      den += e[i] * e[i];
      if (std::fabs(d) > worstErr) {
        worstErr = std::fabs(d);
        worst = i;
      }
    }
    bool integer = q.dtype[0] == 'i';
    double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    bool ok = nanMismatch == 0 && (integer ? num == 0 : rel <= q.tolerance);
    char buf[256];
    std::snprintf(buf, sizeof buf, " %s: rel %.2e (tol %.0e)%s;", q.file.c_str(), rel,
                  q.tolerance, nanMismatch ? " NaN mismatch" : "");
    r.detail += buf;
    if (!ok) {
      r.pass = false;
      std::snprintf(buf, sizeof buf, " worst at %zu: got %.9g want %.9g;", worst,
                    worst < a.size() ? a[worst] : 0.0, worst < e.size() ? e[worst] : 0.0);
      r.detail += buf;
    }
  }
  for (Param &q : params)
    if (q.ptr)
      cuMemFree(q.ptr);
  cuModuleUnload(module);
  for (CUmodule m : modules)
    cuModuleUnload(m);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ls2c-kernel-check CASEDIR...\n");
    return 2;
  }
  try {
    check(cuInit(0), "cuInit");
    CUdevice dev;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CUcontext ctx;
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c-kernel-check: %s\n", e.what());
    return 2;
  }
  int passed = 0, failed = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> cases;
    for (const auto &entry : std::filesystem::directory_iterator(argv[i]))
      if (std::filesystem::exists(entry.path() / "case.json"))
        cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    for (const auto &dir : cases) {
      Result r;
      try {
        r = runCase(dir);
      } catch (const std::exception &e) {
        r.pass = false;
        r.detail = std::string(" error: ") + e.what();
      }
      (r.pass ? passed : failed)++;
      std::printf("%s %s:%s\n", r.pass ? "PASS" : "FAIL", dir.string().c_str(), r.detail.c_str());
      if (!r.pass) {
        // A failed kernel may have left the context unusable; start over.
        CUcontext ctx;
        CUdevice dev;
        cuCtxGetDevice(&dev);
        cuCtxSynchronize();
        (void)ctx;
      }
    }
  }
  std::printf("kernel check: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
