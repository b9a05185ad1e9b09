//===- JITTest.cpp - NVRTC compilation and the program cache --------------===//
//
// Compiles real kernels with NVRTC (no GPU needed), and checks the memory and
// disk caches, their corruption handling, error reports and concurrency
// between processes. One test runs the compiled cubin, only where a CUDA
// device is present.
//
//===----------------------------------------------------------------------===//
#include "Sha256.h"
#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/JIT/ProgramCache.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace {

using namespace ls2c::jit;
namespace fs = std::filesystem;

/// fp16 loads and stores through cuda_fp16.h; `tag` makes the source unique.
KernelSource saxpyF16(const std::string &name, const std::string &tag = "") {
  return {name, "// " + tag + "\n"
                "#include <cuda_fp16.h>\n"
                "extern \"C\" __global__ void " + name +
                    "(int n, float a, const __half *x, const __half *y, __half *out) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n)\n"
                    "    out[i] = __float2half(a * __half2float(x[i]) + __half2float(y[i]));\n"
                    "}\n"};
}

/// bf16 through cuda_bf16.h, with an fp32 accumulation.
KernelSource rowSumBf16(const std::string &name, const std::string &tag = "") {
  return {name, "// " + tag + "\n"
                "#include <cuda_bf16.h>\n"
                "extern \"C\" __global__ void " + name +
                    "(int rows, int cols, const __nv_bfloat16 *x, float *sums) {\n"
                    "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (r >= rows) return;\n"
                    "  float acc = 0.0f;\n"
                    "  for (int c = 0; c < cols; ++c)\n"
                    "    acc += __bfloat162float(x[r * cols + c]);\n"
                    "  sums[r] = acc;\n"
                    "}\n"};
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

bool isElf(const std::string &cubin) {
  return cubin.size() > 64 && cubin.compare(0, 4, "\x7f" "ELF") == 0;
}

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

class JITTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ls2c-jit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    cacheDir = dir + "/cache";
    MemoryProgramCache::global().clear();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
    MemoryProgramCache::global().clear();
  }

  CompileOptions options(const std::string &arch = "sm_90") const {
    CompileOptions o;
    o.arch = arch;
    o.cacheDir = cacheDir;
    return o;
  }

  /// The key compileKernels uses for `kernel` under `o`.
  std::string keyOf(const KernelSource &kernel, const CompileOptions &o) const {
    return programCacheKey(kernel.name, kernel.source, nvrtcOptionsFor(o.arch, o), o.arch,
                           nvrtcVersionString());
  }

  /// Regular files under the cache directory: entries and temporaries.
  std::vector<std::string> cacheFiles() const {
    std::vector<std::string> files;
    std::error_code ec;
    if (!fs::exists(cacheDir, ec))
      return files;
    for (const auto &e : fs::recursive_directory_iterator(cacheDir))
      if (e.is_regular_file())
        files.push_back(e.path().string());
    return files;
  }

  std::string dir, cacheDir;
};

TEST(Sha256Test, MatchesKnownDigests) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 incremental;
  incremental.update("a");
  incremental.update("");
  incremental.update("bc");
  EXPECT_EQ(toHex(incremental.finish()), sha256Hex("abc"));
}

TEST_F(JITTest, CompilesFp16AndBf16KernelsToCubinsForSm80AndSm90) {
  std::map<std::string, std::string> saxpyByArch;
  for (std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    std::vector<CompiledKernel> out =
        compileKernels({saxpyF16("saxpy_f16"), rowSumBf16("row_sum_bf16")}, options(arch));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].name, "saxpy_f16");
    EXPECT_EQ(out[1].name, "row_sum_bf16");
    for (const CompiledKernel &k : out) {
      EXPECT_EQ(k.arch, arch);
      EXPECT_FALSE(k.fromCache);
      ASSERT_TRUE(isElf(k.cubin)) << k.name;
      // e_machine (offset 18, little-endian) is EM_CUDA = 190.
      EXPECT_EQ(static_cast<uint8_t>(k.cubin[18]) | static_cast<uint8_t>(k.cubin[19]) << 8,
                190);
      // The extern "C" symbol is in the cubin's string table, unmangled.
      EXPECT_NE(k.cubin.find(k.name), std::string::npos) << k.name;
      EXPECT_GE(k.compileSeconds, 0.0);
    }
    saxpyByArch[arch] = out[0].cubin;
  }
  EXPECT_NE(saxpyByArch["sm_80"], saxpyByArch["sm_90"]);
}

TEST_F(JITTest, SecondCompileIsServedFromMemoryThenFromDisk) {
  std::vector<KernelSource> kernels = {saxpyF16("saxpy_f16"), rowSumBf16("row_sum_bf16")};
  std::vector<CompiledKernel> first = compileKernels(kernels, options());
  ASSERT_EQ(first.size(), 2u);
  EXPECT_FALSE(first[0].fromCache);
  EXPECT_FALSE(first[1].fromCache);

  std::vector<CompiledKernel> fromMemory = compileKernels(kernels, options());
  // Now the memory cache is gone: the entries on disk serve the third call.
  MemoryProgramCache::global().clear();
  std::vector<CompiledKernel> fromDisk = compileKernels(kernels, options());
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_TRUE(fromMemory[i].fromCache);
    EXPECT_TRUE(fromDisk[i].fromCache);
    EXPECT_EQ(fromMemory[i].cubin, first[i].cubin);
    EXPECT_EQ(fromDisk[i].cubin, first[i].cubin);
    EXPECT_EQ(fromDisk[i].name, kernels[i].name);
    EXPECT_EQ(fromDisk[i].arch, "sm_90");

    // The entry is where the layout says, with the documented header.
    DiskProgramCache disk(cacheDir);
    std::string key = keyOf(kernels[i], options());
    std::string path = disk.entryPath(key);
    EXPECT_EQ(path, cacheDir + "/" + key.substr(0, 2) + "/" + key + ".cubin");
    std::string bytes = readFile(path);
    ASSERT_EQ(bytes.size(), kProgramCacheHeaderBytes + first[i].cubin.size());
    EXPECT_EQ(bytes.substr(0, 8), "LS2CCUBN");
    EXPECT_EQ(bytes.substr(24, 64), key);
    EXPECT_EQ(bytes.substr(kProgramCacheHeaderBytes), first[i].cubin);
    EXPECT_EQ(bytes.substr(88, 32), std::string(reinterpret_cast<const char *>(
                                                    sha256(first[i].cubin).data()),
                                                32));
  }
  EXPECT_EQ(cacheFiles().size(), 2u);

  // Without the disk cache and with an empty memory cache, NVRTC runs again
  // and nothing is written.
  MemoryProgramCache::global().clear();
  CompileOptions noDisk = options();
  noDisk.useDiskCache = false;
  noDisk.cacheDir = dir + "/unused";
  std::vector<CompiledKernel> again = compileKernels(kernels, noDisk);
  EXPECT_FALSE(again[0].fromCache);
  EXPECT_EQ(again[0].cubin, first[0].cubin);
  EXPECT_FALSE(fs::exists(dir + "/unused"));
}

TEST_F(JITTest, CorruptAndTruncatedEntriesAreReportedAndRebuilt) {
  std::vector<KernelSource> kernels = {saxpyF16("saxpy_f16"), rowSumBf16("row_sum_bf16"),
                                       saxpyF16("saxpy_other")};
  std::vector<CompiledKernel> original = compileKernels(kernels, options());
  DiskProgramCache disk(cacheDir);
  std::string flipped = disk.entryPath(keyOf(kernels[0], options()));
  std::string truncated = disk.entryPath(keyOf(kernels[1], options()));
  std::string intact = disk.entryPath(keyOf(kernels[2], options()));

  std::string bytes = readFile(flipped);
  bytes[kProgramCacheHeaderBytes + 100] ^= 0x20; // one bit of the payload
  writeFile(flipped, bytes);
  bytes = readFile(truncated);
  bytes.resize(kProgramCacheHeaderBytes + (bytes.size() - kProgramCacheHeaderBytes) / 2);
  writeFile(truncated, bytes);
  EXPECT_EQ(disk.lookup(keyOf(kernels[0], options())).status,
            DiskProgramCache::Lookup::Corrupt);

  MemoryProgramCache::global().clear();
  testing::internal::CaptureStderr();
  std::vector<CompiledKernel> rebuilt = compileKernels(kernels, options());
  std::string warnings = testing::internal::GetCapturedStderr();

  EXPECT_FALSE(rebuilt[0].fromCache);
  EXPECT_FALSE(rebuilt[1].fromCache);
  EXPECT_TRUE(rebuilt[2].fromCache);
  for (size_t i = 0; i < kernels.size(); ++i)
    EXPECT_EQ(rebuilt[i].cubin, original[i].cubin) << kernels[i].name;
  // One warning per damaged entry, naming its file and what is wrong.
  EXPECT_EQ(count(warnings, "warning"), 2) << warnings;
  EXPECT_EQ(count(warnings, flipped), 1) << warnings;
  EXPECT_EQ(count(warnings, truncated), 1) << warnings;
  EXPECT_EQ(count(warnings, intact), 0) << warnings;
  EXPECT_NE(warnings.find("checksum mismatch"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("truncated"), std::string::npos) << warnings;

  // The rewritten entries are whole again: the disk serves them silently.
  MemoryProgramCache::global().clear();
  testing::internal::CaptureStderr();
  std::vector<CompiledKernel> served = compileKernels(kernels, options());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_TRUE(served[i].fromCache);
    EXPECT_EQ(served[i].cubin, original[i].cubin);
  }
}

TEST_F(JITTest, DecodeRejectsEveryKindOfDamage) {
  std::string key = sha256Hex("some key");
  std::string payload = "\x7f" "ELF and some cubin bytes";
  std::string entry = encodeProgramCacheEntry(key, payload);
  ASSERT_EQ(entry.size(), kProgramCacheHeaderBytes + payload.size());
  std::string out;
  ASSERT_EQ(decodeProgramCacheEntry(entry, key, out), "");
  EXPECT_EQ(out, payload);

  auto problem = [&](std::string bytes) {
    std::string ignored;
    return decodeProgramCacheEntry(bytes, key, ignored);
  };
  std::string badMagic = entry;
  badMagic[0] = 'X';
  EXPECT_NE(problem(badMagic).find("bad magic"), std::string::npos);
  EXPECT_NE(problem("").find("bad magic"), std::string::npos);
  EXPECT_NE(problem(entry.substr(0, 40)).find("truncated"), std::string::npos);
  std::string version = entry;
  version[8] = 7;
  EXPECT_NE(problem(version).find("format version 7"), std::string::npos);
  EXPECT_NE(problem(entry.substr(0, entry.size() - 1)).find("truncated"), std::string::npos);
  EXPECT_NE(problem(entry + "x").find("size mismatch"), std::string::npos);
  std::string flipped = entry;
  flipped.back() ^= 1;
  EXPECT_EQ(problem(flipped), "payload checksum mismatch");
  std::string otherKey;
  EXPECT_NE(decodeProgramCacheEntry(entry, sha256Hex("another key"), otherKey)
                .find("another key"),
            std::string::npos);
  EXPECT_THROW(encodeProgramCacheEntry("not-a-key", payload), std::invalid_argument);
  EXPECT_THROW(DiskProgramCache(cacheDir).entryPath("ABC"), std::invalid_argument);
}

TEST_F(JITTest, SyntaxErrorQuotesTheGeneratedSourceLine) {
  KernelSource bad = {"bad_kernel", "#include <cuda_fp16.h>\n"
                                    "extern \"C\" __global__ void bad_kernel(float *out) {\n"
                                    "  int i = threadIdx.x;\n"
                                    "  float x = undefined_value * 2.0f;\n"
                                    "  out[i] = x\n"
                                    "}\n"};
  try {
    compileKernels({bad}, options());
    FAIL() << "expected a CompileError";
  } catch (const CompileError &e) {
    std::string message = e.what();
    EXPECT_EQ(e.kernels(), std::vector<std::string>{"bad_kernel"});
    EXPECT_NE(message.find("kernel 'bad_kernel'"), std::string::npos) << message;
    EXPECT_NE(message.find("sm_90"), std::string::npos) << message;
    // NVRTC's diagnostics for lines 4 and 6, each followed by that line.
    EXPECT_NE(message.find("bad_kernel.cu(4): error"), std::string::npos) << message;
    EXPECT_NE(message.find("undefined_value"), std::string::npos) << message;
    EXPECT_NE(message.find("     4 |   float x = undefined_value * 2.0f;\n"), std::string::npos)
        << message;
    EXPECT_NE(message.find("     6 | }\n"), std::string::npos) << message;
    size_t diag = message.find("bad_kernel.cu(4): error");
    size_t quote = message.find("     4 |   float x");
    EXPECT_LT(diag, quote);
    // The full log follows.
    EXPECT_NE(message.find("NVRTC log:\n"), std::string::npos) << message;
    EXPECT_NE(message.find("errors detected in the compilation of \"bad_kernel.cu\""),
              std::string::npos)
        << message;
  }
  EXPECT_TRUE(cacheFiles().empty());
}

TEST_F(JITTest, EveryKernelIsAttemptedAndEveryFailureReported) {
  auto broken = [](const std::string &name, const std::string &line) {
    return KernelSource{name, "extern \"C\" __global__ void " + name + "(int *p) {\n" + line +
                                  "\n}\n"};
  };
  std::vector<KernelSource> kernels = {
      saxpyF16("good_first"), broken("bad_first", "  p[0] = missing_a;"),
      rowSumBf16("good_second"), broken("bad_second", "  p[0] = (missing_b;")};
  CompileOptions o = options();
  o.jobs = 4;
  try {
    compileKernels(kernels, o);
    FAIL() << "expected a CompileError";
  } catch (const CompileError &e) {
    std::string message = e.what();
    EXPECT_EQ(e.kernels(), (std::vector<std::string>{"bad_first", "bad_second"}));
    EXPECT_NE(message.find("2 of 4 kernel(s) failed"), std::string::npos) << message;
    EXPECT_NE(message.find("     2 |   p[0] = missing_a;"), std::string::npos) << message;
    EXPECT_NE(message.find("     2 |   p[0] = (missing_b;"), std::string::npos) << message;
    EXPECT_LT(message.find("kernel 'bad_first'"), message.find("kernel 'bad_second'"));
  }
  // The good kernels were compiled and cached although the call threw.
  MemoryProgramCache::global().clear();
  std::vector<CompiledKernel> good = compileKernels({kernels[0], kernels[2]}, o);
  EXPECT_TRUE(good[0].fromCache);
  EXPECT_TRUE(good[1].fromCache);
  EXPECT_EQ(cacheFiles().size(), 2u);
}

TEST_F(JITTest, ParallelResultsKeepRequestOrder) {
  std::vector<KernelSource> kernels;
  for (int i = 0; i < 8; ++i) {
    std::string name = "k_" + std::string(1, static_cast<char>('a' + i)) + "_kernel";
    kernels.push_back(i % 2 ? rowSumBf16(name) : saxpyF16(name));
  }
  kernels.push_back(kernels[3]); // a duplicate request: compiled once
  CompileOptions o = options();
  o.jobs = 4;
  std::vector<CompiledKernel> out = compileKernels(kernels, o);
  ASSERT_EQ(out.size(), kernels.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].name, kernels[i].name);
    ASSERT_TRUE(isElf(out[i].cubin));
    for (size_t j = 0; j < 8; ++j)
      EXPECT_EQ(out[i].cubin.find(kernels[j].name) != std::string::npos,
                kernels[j].name == kernels[i].name)
          << out[i].name << " vs " << kernels[j].name;
  }
  EXPECT_EQ(out[8].cubin, out[3].cubin);
  EXPECT_EQ(cacheFiles().size(), 8u);
}

TEST_F(JITTest, ArchOptionsSourceAndVersionAllChangeTheKey) {
  std::vector<std::string> opts = {"--gpu-architecture=sm_90", "-std=c++17"};
  std::string base = programCacheKey("k", "src", opts, "sm_90", "13.0");
  EXPECT_TRUE(std::regex_match(base, std::regex("[0-9a-f]{64}")));
  EXPECT_EQ(programCacheKey("k", "src", opts, "sm_90", "13.0"), base);
  EXPECT_NE(programCacheKey("k", "src", opts, "sm_80", "13.0"), base);
  EXPECT_NE(programCacheKey("k", "src", opts, "sm_90", "13.1"), base);
  EXPECT_NE(programCacheKey("k", "src2", opts, "sm_90", "13.0"), base);
  EXPECT_NE(programCacheKey("k2", "src", opts, "sm_90", "13.0"), base);
  EXPECT_NE(programCacheKey("k", "src", {opts[1], opts[0]}, "sm_90", "13.0"), base);
  EXPECT_NE(programCacheKey("k", "src", {opts[0]}, "sm_90", "13.0"), base);
  // Fields are delimited: moving bytes between them changes the key.
  EXPECT_NE(programCacheKey("k", "src", {"ab", "c"}, "sm_90", "13.0"),
            programCacheKey("k", "src", {"a", "bc"}, "sm_90", "13.0"));

  // Through the compiler: each variant is a miss with its own entry.
  KernelSource kernel = saxpyF16("saxpy_f16");
  CompileOptions sm80 = options("sm_80"), sm90 = options("sm_90"),
                 defined = options("sm_90"), reordered = options("sm_90");
  defined.extraOptions = {"-DLS2C_A=1", "-DLS2C_B=2"};
  reordered.extraOptions = {"-DLS2C_B=2", "-DLS2C_A=1"};
  std::set<std::string> keys;
  for (const CompileOptions *o : {&sm80, &sm90, &defined, &reordered}) {
    EXPECT_FALSE(compileKernels({kernel}, *o)[0].fromCache);
    keys.insert(keyOf(kernel, *o));
  }
  EXPECT_EQ(keys.size(), 4u);
  EXPECT_EQ(cacheFiles().size(), 4u);
  EXPECT_TRUE(compileKernels({kernel}, defined)[0].fromCache);
}

TEST_F(JITTest, UnwritableCacheDirectoryWarnsOnceAndStillCompiles) {
  // A directory below a regular file cannot be created, even by root.
  writeFile(dir + "/file", "not a directory");
  cacheDir = dir + "/file/cache";
  testing::internal::CaptureStderr();
  std::vector<CompiledKernel> out =
      compileKernels({saxpyF16("saxpy_f16"), rowSumBf16("row_sum_bf16")}, options());
  std::string warnings = testing::internal::GetCapturedStderr();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(isElf(out[0].cubin));
  EXPECT_TRUE(isElf(out[1].cubin));
  EXPECT_FALSE(out[0].fromCache);
  EXPECT_EQ(count(warnings, "warning"), 1) << warnings;
  EXPECT_NE(warnings.find("'" + cacheDir + "' is not writable; 2 compiled kernel(s)"),
            std::string::npos)
      << warnings;
  // The memory cache still serves the next call.
  EXPECT_TRUE(compileKernels({saxpyF16("saxpy_f16")}, options())[0].fromCache);
}

TEST_F(JITTest, TwoProcessesShareOneCacheDirectory) {
  // Fresh sources (the tag), so neither process finds them in any cache.
  std::string tag = "pid " + std::to_string(getpid()) + " " + dir;
  std::vector<KernelSource> kernels;
  for (int i = 0; i < 6; ++i) {
    std::string name = "shared_" + std::to_string(i);
    kernels.push_back(i % 2 ? rowSumBf16(name, tag) : saxpyF16(name, tag));
  }
  CompileOptions o = options();
  o.jobs = 3;

  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(gate[1]);
      char byte;
      while (read(gate[0], &byte, 1) > 0) {
      } // both start when the parent closes the pipe
      int status = 0;
      try {
        for (const CompiledKernel &k : compileKernels(kernels, o))
          status |= isElf(k.cubin) ? 0 : 2;
      } catch (const std::exception &e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        status = 1;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }

  // Six whole entries, no temporaries left behind.
  std::vector<std::string> files = cacheFiles();
  EXPECT_EQ(files.size(), 6u);
  for (const std::string &f : files)
    EXPECT_EQ(fs::path(f).extension(), ".cubin") << f;
  DiskProgramCache disk(cacheDir);
  for (const KernelSource &k : kernels) {
    DiskProgramCache::Lookup found = disk.lookup(keyOf(k, o));
    EXPECT_EQ(found.status, DiskProgramCache::Lookup::Hit) << found.problem;
    EXPECT_TRUE(isElf(found.payload));
  }
  // This process (whose memory cache never saw them) is served from disk.
  std::vector<CompiledKernel> served = compileKernels(kernels, o);
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_TRUE(served[i].fromCache);
    EXPECT_EQ(served[i].name, kernels[i].name);
  }
}

/// Sets an environment variable for one scope, restoring it after.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { saved ? setenv(name, saved->c_str(), 1) : unsetenv(name); }

private:
  const char *name;
  std::optional<std::string> saved;
};

TEST_F(JITTest, CacheDirectoryComesFromTheEnvironment) {
  {
    ScopedEnv cache("LS2C_CACHE_DIR", nullptr), xdg("XDG_CACHE_HOME", nullptr),
        home("HOME", "/home/someone");
    EXPECT_EQ(defaultProgramCacheDir(), "/home/someone/.cache/ls2c");
    {
      ScopedEnv relative("XDG_CACHE_HOME", "relative/dir"); // ignored, per XDG
      EXPECT_EQ(defaultProgramCacheDir(), "/home/someone/.cache/ls2c");
    }
    ScopedEnv xdgSet("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(defaultProgramCacheDir(), "/xdg/ls2c");
    ScopedEnv cacheSet("LS2C_CACHE_DIR", "/explicit");
    EXPECT_EQ(defaultProgramCacheDir(), "/explicit");
  }
  // compileKernels without options.cacheDir writes to $LS2C_CACHE_DIR.
  ScopedEnv cache("LS2C_CACHE_DIR", cacheDir.c_str());
  CompileOptions o = options();
  o.cacheDir.clear();
  compileKernels({saxpyF16("saxpy_f16")}, o);
  EXPECT_TRUE(fs::exists(DiskProgramCache(cacheDir).entryPath(
      keyOf(saxpyF16("saxpy_f16"), options()))));
}

TEST_F(JITTest, OptionsAndIncludePath) {
  CompileOptions o = options();
  o.extraOptions = {"-lineinfo", "-DX=1"};
  std::vector<std::string> opts = nvrtcOptionsFor("sm_80", o);
  ASSERT_EQ(opts.size(), 6u);
  EXPECT_EQ(opts[0], "--gpu-architecture=sm_80");
  EXPECT_EQ(opts[1], "-std=c++17");
  EXPECT_EQ(opts[2], "-default-device");
  EXPECT_EQ(opts[3], "--include-path=" + cudaIncludeDir());
  EXPECT_EQ(opts[4], "-lineinfo");
  EXPECT_EQ(opts[5], "-DX=1");
  for (const std::string &opt : opts)
    EXPECT_EQ(opt.find("fast_math"), std::string::npos) << opt;
  EXPECT_TRUE(fs::exists(cudaIncludeDir() + "/cuda_fp16.h"));
  EXPECT_TRUE(fs::exists(cudaIncludeDir() + "/cuda_bf16.h"));
  EXPECT_TRUE(std::regex_match(nvrtcVersionString(), std::regex("[0-9]+\\.[0-9]+")));

  // A wrong include directory: cuda_fp16.h is not found, and the error says
  // which variable to set.
  ScopedEnv include("LS2C_CUDA_INCLUDE", (dir + "/no-such-include").c_str());
  EXPECT_EQ(cudaIncludeDir(), dir + "/no-such-include");
  try {
    compileKernels({saxpyF16("saxpy_f16")}, options());
    FAIL() << "expected a CompileError";
  } catch (const CompileError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("cuda_fp16.h"), std::string::npos) << message;
    EXPECT_NE(message.find("LS2C_CUDA_INCLUDE"), std::string::npos) << message;
    EXPECT_NE(message.find("     2 | #include <cuda_fp16.h>"), std::string::npos) << message;
  }
}

TEST_F(JITTest, InvalidArchitecturesAndNamesAreRefused) {
  auto refusal = [&](const std::string &arch, const std::string &name) {
    try {
      compileKernels({saxpyF16(name)}, options(arch));
    } catch (const std::invalid_argument &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal("compute_90", "k").find("virtual architecture"), std::string::npos);
  EXPECT_NE(refusal("sm90", "k").find("expected sm_<version>"), std::string::npos);
  EXPECT_NE(refusal("sm_", "k").find("invalid CUDA architecture 'sm_'"), std::string::npos);
  EXPECT_NE(refusal("sm_12", "k").find("not supported by NVRTC"), std::string::npos);
  EXPECT_NE(refusal("sm_90", "not-an-identifier").find("not a C identifier"),
            std::string::npos);
  EXPECT_NE(refusal("sm_90", "9lives").find("not a C identifier"), std::string::npos);
  EXPECT_EQ(refusal("sm_90a", "k"), "no error");
  EXPECT_TRUE(compileKernels({}, options("bogus")).empty());
}

TEST_F(JITTest, CurrentDeviceArchNamesTheDeviceOrSaysThereIsNone) {
  std::string arch;
  try {
    arch = currentDeviceArch();
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "no CUDA device: pass an explicit arch such as sm_90 (", 0),
              0u)
        << e.what();
    // An empty arch means the current device's: the same error.
    CompileOptions o = options("");
    EXPECT_THROW(compileKernels({saxpyF16("saxpy_f16")}, o), std::runtime_error);
    return;
  }
  EXPECT_TRUE(std::regex_match(arch, std::regex("sm_[0-9]+"))) << arch;
  std::vector<CompiledKernel> out = compileKernels({saxpyF16("saxpy_f16")}, options(""));
  EXPECT_EQ(out[0].arch, arch);
}

//===----------------------------------------------------------------------===//
// On a machine with a GPU: the cubin loads and computes the right numbers.
//===----------------------------------------------------------------------===//

/// IEEE binary16 bits of a float that fp16 represents exactly (or zero).
uint16_t halfBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffff) == 0)
    return static_cast<uint16_t>(bits >> 16);
  uint32_t sign = bits >> 31, exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  return static_cast<uint16_t>(sign << 15 | (exponent - 127 + 15) << 10 | mantissa >> 13);
}

float halfValue(uint16_t half) {
  uint32_t sign = half >> 15, exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
  uint32_t bits = exponent == 0 ? sign << 31
                                : sign << 31 | (exponent - 15 + 127) << 23 | mantissa << 13;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

TEST_F(JITTest, CubinRunsOnTheDevice) {
  std::string arch;
  try {
    arch = currentDeviceArch();
  } catch (const std::runtime_error &e) {
    GTEST_SKIP() << e.what();
  }
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr);
#define LOAD(fn, symbol)                                                              \
  auto fn = reinterpret_cast<decltype(&::fn)>(dlsym(driver, symbol));                 \
  ASSERT_NE(fn, nullptr) << symbol
  LOAD(cuDeviceGet, "cuDeviceGet");
  LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(cuModuleLoadData, "cuModuleLoadData");
  LOAD(cuModuleGetFunction, "cuModuleGetFunction");
  LOAD(cuModuleUnload, "cuModuleUnload");
  LOAD(cuMemAlloc, "cuMemAlloc_v2");
  LOAD(cuMemFree, "cuMemFree_v2");
  LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  LOAD(cuLaunchKernel, "cuLaunchKernel");
  LOAD(cuCtxSynchronize, "cuCtxSynchronize");
#undef LOAD
  CUdevice device;
  CUcontext context;
  ASSERT_EQ(cuDeviceGet(&device, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, device), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);

  CompiledKernel kernel = compileKernels({saxpyF16("saxpy_f16")}, options(""))[0];
  EXPECT_EQ(kernel.arch, arch);
  CUmodule module;
  ASSERT_EQ(cuModuleLoadData(&module, kernel.cubin.data()), CUDA_SUCCESS);
  CUfunction function;
  ASSERT_EQ(cuModuleGetFunction(&function, module, "saxpy_f16"), CUDA_SUCCESS);

  int n = 1000;
  float a = 2.0f;
  std::vector<uint16_t> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = halfBits(static_cast<float>(i % 32) - 16.0f);
    y[i] = halfBits(static_cast<float>(i % 7) * 0.25f);
  }
  size_t bytes = n * sizeof(uint16_t);
  CUdeviceptr dx, dy, dout;
  ASSERT_EQ(cuMemAlloc(&dx, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&dy, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&dout, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(dx, x.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(dy, y.data(), bytes), CUDA_SUCCESS);
  void *args[] = {&n, &a, &dx, &dy, &dout};
  ASSERT_EQ(cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args,
                           nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), dout, bytes), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) // every value is exact in fp16
    ASSERT_EQ(halfValue(out[i]), a * halfValue(x[i]) + halfValue(y[i])) << i;
  cuMemFree(dx);
  cuMemFree(dy);
  cuMemFree(dout);
  cuModuleUnload(module);
}

} // namespace
