//===- GemmChoiceTest.cpp - cuBLASLt algorithms chosen by timing ----------===//
//
// GemmChoice.h's bookkeeping (no GPU): a later decision replaces an earlier one;
// decisions, failed candidates' infinite times included, survive a save and
// a load into a directory that does not exist yet; a malformed file is
// refused whole, naming the file and the field.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/GemmChoice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

using namespace ls2c::runtime;

std::string tempDir() {
  std::string pattern = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                        std::string("/ls2c-gemm-choices-XXXXXX");
  char *made = mkdtemp(pattern.data());
  EXPECT_TRUE(made);
  return made ? made : "";
}

/// A cublasLtMatmulAlgo_t's 64 bytes in hex, all `c`.
std::string algo(char c) { return std::string(128, c); }

TEST(GemmChoice, ALaterDecisionReplacesAnEarlierOne) {
  GemmChoices c;
  EXPECT_FALSE(c.find("g"));
  c.decide({"g", algo('a'), 2, 8, {50.3, 50.9, 46.8, 75.4, 56.6, 76.1, 56.4, 48.9}});
  ASSERT_TRUE(c.find("g"));
  EXPECT_EQ(c.find("g")->candidate, 2);
  EXPECT_EQ(c.find("g")->algo, algo('a'));
  EXPECT_DOUBLE_EQ(c.find("g")->us[2], 46.8);
  c.decide({"g", algo('b'), 5, 8, {}}); // timed again: the algorithm was gone
  EXPECT_EQ(c.find("g")->candidate, 5);
  EXPECT_EQ(c.find("g")->algo, algo('b'));
  EXPECT_EQ(c.decisions().size(), 1u);
}

TEST(GemmChoice, DecisionsSurviveASaveAndALoad) {
  std::string dir = tempDir(), path = dir + "/cache/gemm-choices.json";
  GemmChoices c;
  EXPECT_EQ(c.loadFile(path), 0u); // no file yet
  c.decide({"NVIDIA H200 gemm m=16384 n=1024 k=1024", algo('3'), 3, 4,
            {31.3, INFINITY, 44.2, 25.7}});
  c.decide({"NVIDIA H200 gemm m=768 n=768 k=16384", algo('0'), 0, 1, {}});
  c.saveFile(path);

  GemmChoices d;
  d.decide({"NVIDIA H200 gemm m=768 n=768 k=16384", algo('1'), 1, 2, {2.0, 1.0}}); // kept
  EXPECT_EQ(d.loadFile(path), 1u);
  auto a = d.find("NVIDIA H200 gemm m=16384 n=1024 k=1024");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->algo, algo('3'));
  EXPECT_EQ(a->candidate, 3);
  EXPECT_EQ(a->candidates, 4);
  ASSERT_EQ(a->us.size(), 4u);
  EXPECT_TRUE(std::isinf(a->us[1]));
  EXPECT_DOUBLE_EQ(a->us[3], 25.7);
  EXPECT_EQ(d.find("NVIDIA H200 gemm m=768 n=768 k=16384")->candidate, 1);
  EXPECT_EQ(d.decisions().size(), 2u);
  std::remove(path.c_str());
  rmdir((dir + "/cache").c_str());
  rmdir(dir.c_str());
}

TEST(GemmChoice, MalformedFilesAreRefusedWhole) {
  std::string dir = tempDir(), path = dir + "/gemm-choices.json";
  // ALGO in `text` stands for a well-formed algorithm.
  auto refused = [&](std::string text, const std::string &what) {
    for (size_t at; (at = text.find("ALGO")) != std::string::npos;)
      text.replace(at, 4, "\"" + algo('a') + "\"");
    std::ofstream(path, std::ios::binary) << text;
    GemmChoices c;
    try {
      c.loadFile(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_TRUE(c.decisions().empty());
  };
  refused("{\"version\": 1, \"choices\": [", "not valid JSON");
  refused("{\"version\": 2, \"choices\": []}", "version: must be 1");
  refused("{\"version\": 1}", "choices: must be an array");
  refused("{\"version\": 1, \"choices\": [{\"key\": 3}]}", "choices[0].key");
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"candidate\": 0}]}",
          "choices[0].algo");
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"algo\": \"xyz\"}]}",
          "choices[0].algo");
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"algo\": ALGO, \"candidate\": 0}]}",
          "choices[0].candidates");
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"algo\": ALGO, \"candidate\": 8, "
          "\"candidates\": 8}]}",
          "choices[0].candidate");
  // The first choice is good, the second is not: nothing is added.
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"algo\": ALGO, \"candidate\": 0, "
          "\"candidates\": 1}, {\"key\": \"b\", \"algo\": ALGO, \"candidate\": 1, "
          "\"candidates\": 2, \"us\": [1, \"x\"]}]}",
          "choices[1].us");
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

} // namespace
