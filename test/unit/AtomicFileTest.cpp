//===- AtomicFileTest.cpp - writeFileAtomically ---------------------------===//
#include "ls2c/Support/AtomicFile.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

namespace {

class AtomicFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ls2c-atomic-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    DIR *d = opendir(dir.c_str());
    if (!d)
      return;
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..")
        unlink((dir + "/" + name).c_str());
    }
    closedir(d);
    rmdir(dir.c_str());
  }
  std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  int entries() {
    int n = 0;
    DIR *d = opendir(dir.c_str());
    while (dirent *e = readdir(d))
      n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    closedir(d);
    return n;
  }
  std::string dir;
};

TEST_F(AtomicFileTest, WritesRandomBytesExactly) {
  std::mt19937 rng(std::random_device{}());
  std::string data(1 << 20, '\0');
  for (char &c : data)
    c = static_cast<char>(rng());
  std::string path = dir + "/out.bin";
  ls2c::writeFileAtomically(path, data);
  EXPECT_EQ(read(path), data);
  EXPECT_EQ(entries(), 1) << "the temporary file must be gone";
}

TEST_F(AtomicFileTest, ReplacesAnExistingFileWhole) {
  std::string path = dir + "/out.txt";
  ls2c::writeFileAtomically(path, std::string(5000, 'a'));
  ls2c::writeFileAtomically(path, "short");
  EXPECT_EQ(read(path), "short");
  EXPECT_EQ(entries(), 1);
}

TEST_F(AtomicFileTest, MissingDirectoryThrowsAndLeavesNothing) {
  std::string path = dir + "/no/such/dir/out.txt";
  try {
    ls2c::writeFileAtomically(path, "x");
    FAIL() << "expected FileWriteError";
  } catch (const ls2c::FileWriteError &e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(entries(), 0);
}

TEST_F(AtomicFileTest, TargetIsADirectoryKeepsItAndCleansUp) {
  std::string path = dir + "/sub";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  EXPECT_THROW(ls2c::writeFileAtomically(path, "x"), ls2c::FileWriteError);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(entries(), 1) << "only the directory itself remains";
  rmdir(path.c_str());
}

TEST_F(AtomicFileTest, WritesThroughSymbolicLinks) {
  std::string real = dir + "/real.txt", link = dir + "/link.txt";
  ls2c::writeFileAtomically(real, "old");
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  ls2c::writeFileAtomically(link, "new");
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link itself must stay";
  EXPECT_EQ(read(real), "new");
  EXPECT_EQ(entries(), 2);
}

TEST_F(AtomicFileTest, KeepsAnExistingFilesPermissions) {
  std::string path = dir + "/private.txt";
  ls2c::writeFileAtomically(path, "a");
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  ls2c::writeFileAtomically(path, "b");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(AtomicFileTest, ThreadsWritingAtOnceKeepTheUmask) {
  // The kernel cache writes from several threads; reading the umask by
  // setting it (umask(2)) in each write could leave the process's at 0 and
  // later files world-writable. New files get 0666 & ~umask, and the umask
  // stays. (Read here before any thread runs.)
  const mode_t mask = ::umask(0);
  ::umask(mask);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i)
        ls2c::writeFileAtomically(dir + "/t" + std::to_string(t) + "-" + std::to_string(i),
                                  "x");
    });
  for (std::thread &t : threads)
    t.join();
  const mode_t after = ::umask(mask);
  EXPECT_EQ(after, mask);
  for (int t = 0; t < 8; ++t)
    for (int i = 0; i < 40; ++i) {
      struct stat st;
      std::string path = dir + "/t" + std::to_string(t) + "-" + std::to_string(i);
      ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
      EXPECT_EQ(st.st_mode & 07777, 0666u & ~mask) << path;
    }
}

TEST_F(AtomicFileTest, DevicesAreWrittenInPlaceNotReplaced) {
  ls2c::writeFileAtomically("/dev/null", "discarded");
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null must remain a device";
}

TEST_F(AtomicFileTest, FifosAreWrittenInPlace) {
  std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ls2c::writeFileAtomically(fifo, "through the pipe");
  char buf[64] = {};
  ssize_t n = ::read(reader, buf, sizeof buf - 1);
  close(reader);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "through the pipe");
  struct stat st;
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

} // namespace
