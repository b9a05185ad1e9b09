//===- AtomicWriteKillTest.cpp - a process killed while writing -----------===//
//
// A child process is killed (SIGKILL, through the LS2C_TEST_KILL_DURING_WRITE
// hook of AtomicFile.cpp) half-way through replacing a file, as a crash or
// `kill -9` during a checkpoint would: the file keeps its old contents, whole,
// and a safetensors checkpoint stays readable.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Safetensors.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

class AtomicWriteKillTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ls2c-kill-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    for (const std::string &name : entries())
      unlink((dir + "/" + name).c_str());
    rmdir(dir.c_str());
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());
    if (!d)
      return out;
    while (dirent *e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        out.push_back(e->d_name);
    closedir(d);
    return out;
  }
  static std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  /// Runs `write` in a child whose `n`-th atomic write kills it; returns the
  /// signal that ended the child (0 if it exited).
  static int killedChild(int n, const std::function<void()> &write) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("LS2C_TEST_KILL_DURING_WRITE", std::to_string(n).c_str(), 1);
      try {
        write();
      } catch (...) {
        _exit(3);
      }
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  std::string dir;
};

TEST_F(AtomicWriteKillTest, KilledWhileReplacingKeepsTheOldFile) {
  std::string path = dir + "/checkpoint.bin";
  std::string old(1 << 16, 'o'), fresh(1 << 20, 'n');
  ls2c::writeFileAtomically(path, old);
  // The second write of the child dies half-way; its first completes.
  std::string first = dir + "/first.bin";
  EXPECT_EQ(killedChild(2,
                        [&] {
                          ls2c::writeFileAtomically(first, "done");
                          ls2c::writeFileAtomically(path, fresh);
                        }),
            SIGKILL);
  EXPECT_EQ(read(path), old) << "the saved file must be intact";
  EXPECT_EQ(read(first), "done");
  // What the killed write leaves: its temporary file, holding half the data.
  int temporaries = 0;
  for (const std::string &name : entries())
    if (name.rfind(".ls2c-tmp-", 0) == 0) {
      ++temporaries;
      EXPECT_EQ(read(dir + "/" + name).size(), fresh.size() / 2);
    }
  EXPECT_EQ(temporaries, 1);
  // The next write replaces the file as usual.
  ls2c::writeFileAtomically(path, fresh);
  EXPECT_EQ(read(path), fresh);
}

TEST_F(AtomicWriteKillTest, KilledCheckpointStaysReadable) {
  std::string path = dir + "/checkpoint.safetensors";
  auto checkpoint = [](double value, const std::string &step) {
    ls2c::SafetensorsFile f;
    std::vector<double> values(4096, value);
    f.tensors["w"] = ls2c::floatTensor("F32", {4096}, values.data(), values.size());
    f.metadata = {{"ls2c.step", step}};
    return f;
  };
  ls2c::writeSafetensors(path, checkpoint(1.5, "2"));
  EXPECT_EQ(killedChild(1, [&] { ls2c::writeSafetensors(path, checkpoint(2.5, "4")); }),
            SIGKILL);
  ls2c::SafetensorsFile back = ls2c::readSafetensors(path);
  EXPECT_EQ(back.metadata.at("ls2c.step"), "2");
  EXPECT_EQ(ls2c::floatValues(back.tensors.at("w"), "w")[4095], 1.5);
}

TEST_F(AtomicWriteKillTest, WithoutTheHookNothingDies) {
  std::string path = dir + "/x";
  EXPECT_EQ(killedChild(0, [&] { ls2c::writeFileAtomically(path, "x"); }), 0);
  EXPECT_EQ(read(path), "x");
}

} // namespace
