//===- RendezvousTest.cpp - torchrun's environment and the TCP rendezvous -===//
//
// runtime/include/ls2c/Runtime/Rendezvous.h: every missing or invalid
// variable named; 2 to 4 forked processes on localhost (a free port each
// test) receiving rank 0's bytes, rank 0 starting last, a stray connection
// ignored; and the failures every rank must report instead of hanging:
// connection refused after N attempts, a WORLD_SIZE that differs, a RANK
// used twice, a rank that never comes (timeout), a blob size that differs,
// two processes both rank 0. No GPU.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/Rendezvous.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>

namespace {

using namespace ls2c::runtime;
using namespace std::chrono_literals;

//===----------------------------------------------------------------------===//
// Environment
//===----------------------------------------------------------------------===//

EnvLookup from(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::map<std::string, std::string> torchrun() {
  return {{"RANK", "3"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "3"},
          {"MASTER_ADDR", "node0.example"},
          {"MASTER_PORT", "29500"}};
}

std::string envError(std::map<std::string, std::string> vars) {
  try {
    parseDistributedEnv(from(std::move(vars)));
  } catch (const DistributedError &e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(DistributedEnv, Torchrun) {
  DistributedEnv env = parseDistributedEnv(from(torchrun()));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.worldSize, 8);
  EXPECT_EQ(env.localRank, 3);
  EXPECT_EQ(env.masterAddr, "node0.example");
  EXPECT_EQ(env.masterPort, 29500);
}

TEST(DistributedEnv, SingleProcessNeedsOnlyRankAndWorldSize) {
  DistributedEnv env = parseDistributedEnv(from({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  EXPECT_EQ(env.worldSize, 1);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_EQ(env.masterAddr, "127.0.0.1");
  EXPECT_EQ(env.masterPort, 29500);
}

TEST(DistributedEnv, EveryMissingVariableIsNamed) {
  for (const char *name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    auto vars = torchrun();
    vars.erase(name);
    EXPECT_EQ(envError(vars), std::string(name) +
                                  " is not set (torchrun sets RANK, WORLD_SIZE, "
                                  "LOCAL_RANK, MASTER_ADDR and MASTER_PORT)");
  }
}

TEST(DistributedEnv, InvalidValuesAreNamed) {
  struct Case {
    const char *name, *value, *error;
  } cases[] = {
      {"RANK", "abc", "RANK='abc': not a decimal integer without sign or spaces"},
      {"RANK", "", "RANK='': not a decimal integer without sign or spaces"},
      {"RANK", "-1", "RANK='-1': not a decimal integer without sign or spaces"},
      {"RANK", " 1", "RANK=' 1': not a decimal integer without sign or spaces"},
      {"RANK", "8", "RANK=8: must be less than WORLD_SIZE=8"},
      {"WORLD_SIZE", "0", "WORLD_SIZE=0: must be at least 1"},
      {"WORLD_SIZE", "4x", "WORLD_SIZE='4x': not a decimal integer without sign or spaces"},
      {"WORLD_SIZE", "99999999999999999999",
       "WORLD_SIZE='99999999999999999999': not a decimal integer without sign or spaces"},
      {"WORLD_SIZE", "2", "RANK=3: must be less than WORLD_SIZE=2"},
      {"LOCAL_RANK", "9", "LOCAL_RANK=9: must be less than WORLD_SIZE=8"},
      {"MASTER_ADDR", "", "MASTER_ADDR is empty: must name rank 0's host"},
      {"MASTER_PORT", "0", "MASTER_PORT=0: must be a TCP port in 1..65535"},
      {"MASTER_PORT", "65536", "MASTER_PORT=65536: must be a TCP port in 1..65535"},
      {"MASTER_PORT", "http", "MASTER_PORT='http': not a decimal integer without sign or spaces"},
  };
  for (const Case &c : cases) {
    auto vars = torchrun();
    vars[c.name] = c.value;
    EXPECT_EQ(envError(vars), c.error) << c.name << "=" << c.value;
  }
}

//===----------------------------------------------------------------------===//
// Processes
//===----------------------------------------------------------------------===//

/// A TCP port on 127.0.0.1 that was free a moment ago.
uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
    ADD_FAILURE() << "no free port: " << std::strerror(errno);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

struct Outcome {
  bool ok = false;
  std::string text; ///< the blob, or the error message
};

/// Runs each function in its own forked process (all at once) and returns
/// what each returned or threw. A process still running after `limit` is
/// killed and reported as hung.
std::vector<Outcome> runProcesses(const std::vector<std::function<std::string()>> &fns,
                                  std::chrono::milliseconds limit = 30s) {
  struct Child {
    pid_t pid = -1;
    int fd = -1;
    bool done = false;
    std::string out;
  };
  std::vector<Child> children(fns.size());
  for (size_t i = 0; i < fns.size(); ++i) {
    int p[2];
    if (::pipe(p) != 0) {
      ADD_FAILURE() << "pipe: " << std::strerror(errno);
      return {};
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      std::string msg;
      try {
        msg = "O" + fns[i]();
      } catch (const std::exception &e) {
        msg = std::string("E") + e.what();
      }
      size_t at = 0;
      while (at < msg.size()) {
        ssize_t n = ::write(p[1], msg.data() + at, msg.size() - at);
        if (n <= 0)
          break;
        at += size_t(n);
      }
      ::_exit(0);
    }
    ::close(p[1]);
    children[i].pid = pid;
    children[i].fd = p[0];
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  size_t open = children.size();
  while (open > 0) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < children.size(); ++i)
      if (!children[i].done) {
        fds.push_back({children[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0 || ::poll(fds.data(), fds.size(), int(left)) <= 0)
      break;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents)
        continue;
      Child &c = children[which[k]];
      char buf[4096];
      ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0)
        c.out.append(buf, size_t(n));
      else {
        c.done = true;
        --open;
      }
    }
  }
  std::vector<Outcome> outcomes;
  for (Child &c : children) {
    if (!c.done)
      ::kill(c.pid, SIGKILL);
    ::waitpid(c.pid, nullptr, 0);
    ::close(c.fd);
    Outcome o;
    if (!c.done)
      o.text = "(hung: killed)";
    else if (c.out.empty())
      o.text = "(died without a result)";
    else {
      o.ok = c.out[0] == 'O';
      o.text = c.out.substr(1);
    }
    outcomes.push_back(o);
  }
  return outcomes;
}

DistributedEnv envOf(int rank, int world, uint16_t port) {
  DistributedEnv env;
  env.rank = rank;
  env.worldSize = world;
  env.localRank = rank;
  env.masterAddr = "127.0.0.1";
  env.masterPort = port;
  return env;
}

std::string randomBlob(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string b(n, '\0');
  for (char &c : b)
    c = char(rng() & 0xff);
  b[0] = '\0'; // zeros and high bytes travel as they are
  b[1] = char(0xff);
  return b;
}

RendezvousOptions fast(std::chrono::milliseconds timeout = 10s) {
  RendezvousOptions o;
  o.timeout = timeout;
  o.retryInterval = 20ms;
  o.connectAttempts = 1000;
  return o;
}

/// The job: rank r's function.
std::function<std::string()> rankFn(DistributedEnv env, std::string blob, size_t bytes,
                                    RendezvousOptions options,
                                    std::chrono::milliseconds startAfter = 0ms) {
  return [=] {
    std::this_thread::sleep_for(startAfter);
    return rendezvous(env, blob, bytes, options);
  };
}

bool contains(const std::string &s, const std::string &needle) {
  return s.find(needle) != std::string::npos;
}

class RendezvousWorld : public ::testing::TestWithParam<int> {};

TEST_P(RendezvousWorld, EveryRankGetsRankZerosBytes) {
  const int world = GetParam();
  uint16_t port = freePort();
  std::string blob = randomBlob(128, uint64_t(world));
  std::vector<std::function<std::string()>> fns;
  for (int r = 0; r < world; ++r)
    // Rank 0 comes last: the others retry while the connection is refused.
    fns.push_back(rankFn(envOf(r, world, port), r == 0 ? blob : "", 128, fast(),
                         r == 0 ? 300ms : 0ms));
  std::vector<Outcome> out = runProcesses(fns);
  ASSERT_EQ(out.size(), size_t(world));
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(out[r].ok) << "rank " << r << ": " << out[r].text;
    EXPECT_EQ(out[r].text, blob) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(TwoToFour, RendezvousWorld, ::testing::Values(2, 3, 4));

TEST(Rendezvous, WorldSizeOneNeedsNoNetwork) {
  DistributedEnv env = envOf(0, 1, 0);
  EXPECT_EQ(rendezvous(env, "abc", 3), "abc");
}

TEST(Rendezvous, StrayConnectionIsIgnored) {
  uint16_t port = freePort();
  std::string blob = randomBlob(128, 7);
  auto stray = [port]() -> std::string {
    for (int i = 0; i < 500; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) {
        const char req[] = "GET / HTTP/1.0\r\n\r\n";
        (void)!::write(fd, req, sizeof req - 1);
        ::close(fd);
        return "sent";
      }
      ::close(fd);
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("never connected");
  };
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 2, port), blob, 128, fast()), stray,
                    rankFn(envOf(1, 2, port), "", 128, fast(), 500ms)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].ok) << out[0].text;
  EXPECT_EQ(out[0].text, blob);
  EXPECT_EQ(out[1].text, "sent");
  EXPECT_TRUE(out[2].ok) << out[2].text;
  EXPECT_EQ(out[2].text, blob);
}

TEST(Rendezvous, ConnectionRefusedAfterNAttempts) {
  uint16_t port = freePort();
  RendezvousOptions o = fast();
  o.connectAttempts = 3;
  std::vector<Outcome> out = runProcesses({rankFn(envOf(1, 2, port), "", 128, o)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  std::string expected = "rank 1: cannot connect to rank 0 at MASTER_ADDR:MASTER_PORT=127.0.0.1:" +
                         std::to_string(port) + " after 3 attempts over ";
  EXPECT_TRUE(contains(out[0].text, expected)) << out[0].text;
  EXPECT_TRUE(contains(out[0].text, "Connection refused")) << out[0].text;
  EXPECT_TRUE(contains(out[0].text, "is rank 0 running")) << out[0].text;
}

TEST(Rendezvous, WrongWorldSizeFailsEveryRank) {
  uint16_t port = freePort();
  std::string blob = randomBlob(128, 1);
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 3, port), blob, 128, fast()),
                    rankFn(envOf(1, 3, port), "", 128, fast()),
                    rankFn(envOf(2, 5, port), "", 128, fast(), 200ms)});
  ASSERT_EQ(out.size(), 3u);
  const std::string rule =
      "has WORLD_SIZE=5 but rank 0 has WORLD_SIZE=3: every rank must use the same WORLD_SIZE";
  EXPECT_FALSE(out[0].ok);
  EXPECT_TRUE(contains(out[0].text, "rank 0: rank 2 (from 127.0.0.1:")) << out[0].text;
  EXPECT_TRUE(contains(out[0].text, rule)) << out[0].text;
  for (int r : {1, 2}) {
    EXPECT_FALSE(out[r].ok) << r;
    EXPECT_TRUE(contains(out[r].text, "rank " + std::to_string(r) +
                                          ": the rendezvous failed at rank 0: rank 2"))
        << out[r].text;
    EXPECT_TRUE(contains(out[r].text, rule)) << out[r].text;
  }
}

TEST(Rendezvous, DuplicateRankFailsEveryRank) {
  uint16_t port = freePort();
  std::string blob = randomBlob(128, 2);
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 3, port), blob, 128, fast()),
                    rankFn(envOf(1, 3, port), "", 128, fast()),
                    rankFn(envOf(1, 3, port), "", 128, fast(), 300ms)});
  ASSERT_EQ(out.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(out[r].ok) << r;
    EXPECT_TRUE(contains(out[r].text, "RANK=1 joined twice (from 127.0.0.1:")) << out[r].text;
    EXPECT_TRUE(contains(out[r].text, "every process needs its own RANK")) << out[r].text;
  }
}

TEST(Rendezvous, MissingRankTimesOut) {
  uint16_t port = freePort();
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 4, port), randomBlob(128, 3), 128, fast(800ms)),
                    rankFn(envOf(2, 4, port), "", 128, fast())});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_TRUE(contains(out[0].text, "rank 0: timed out after 0.8 s waiting for ranks 1, 3 "
                                    "(1 of 3 other ranks joined on MASTER_PORT=" +
                                        std::to_string(port) + ")"))
      << out[0].text;
  EXPECT_FALSE(out[1].ok);
  EXPECT_TRUE(contains(out[1].text, "rank 2: the rendezvous failed at rank 0: timed out"))
      << out[1].text;
}

TEST(Rendezvous, ClientTimesOutWithoutReply) {
  // Rank 0 waits for rank 2, which never comes; rank 1 gives up first.
  uint16_t port = freePort();
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 3, port), randomBlob(128, 4), 128, fast(3s)),
                    rankFn(envOf(1, 3, port), "", 128, fast(600ms))});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[1].ok);
  EXPECT_TRUE(contains(out[1].text, "rank 1: no reply from rank 0 within 0.6 s (are all "
                                    "WORLD_SIZE=3 ranks running?)"))
      << out[1].text;
  EXPECT_FALSE(out[0].ok);
  // Rank 0 notices rank 1 leave (or times out itself, if slower).
  EXPECT_TRUE(contains(out[0].text, "rank 1 (from 127.0.0.1:") ||
              contains(out[0].text, "timed out"))
      << out[0].text;
}

TEST(Rendezvous, BlobSizeMismatch) {
  uint16_t port = freePort();
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 2, port), randomBlob(128, 5), 128, fast()),
                    rankFn(envOf(1, 2, port), "", 64, fast())});
  ASSERT_EQ(out.size(), 2u);
  for (const Outcome &o : out) {
    EXPECT_FALSE(o.ok);
    EXPECT_TRUE(contains(o.text, "expects a 64-byte blob but rank 0 sends 128 bytes")) << o.text;
  }
}

TEST(Rendezvous, TwoRankZerosCannotBothListen) {
  uint16_t port = freePort();
  std::vector<Outcome> out =
      runProcesses({rankFn(envOf(0, 2, port), randomBlob(128, 6), 128, fast(1500ms)),
                    rankFn(envOf(0, 2, port), randomBlob(128, 6), 128, fast(1500ms), 300ms)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_TRUE(contains(out[0].text, "timed out")) << out[0].text;
  EXPECT_FALSE(out[1].ok);
  EXPECT_TRUE(contains(out[1].text, "rank 0: cannot listen on MASTER_PORT=" +
                                        std::to_string(port) + ": Address already in use"))
      << out[1].text;
}

TEST(Rendezvous, RefusesBadArguments) {
  auto error = [](DistributedEnv env, std::string blob, size_t n) -> std::string {
    try {
      rendezvous(env, blob, n, fast());
    } catch (const DistributedError &e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(error(envOf(0, 2, 1234), "abc", 128),
            "rank 0: blob of 3 bytes given, 128 expected");
  EXPECT_EQ(error(envOf(2, 2, 1234), "", 128), "rank 2: RANK=2 outside WORLD_SIZE=2");
  EXPECT_EQ(error(envOf(1, 2, 0), "", 128),
            "rank 1: MASTER_PORT=0: must be a TCP port in 1..65535");
}

} // namespace
