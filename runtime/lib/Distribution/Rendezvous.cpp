//===- Rendezvous.cpp - torchrun's environment and a small TCP rendezvous -===//
//
// See Rendezvous.h for the protocol. POSIX sockets, poll() with deadlines,
// non-blocking descriptors; no threads.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/Rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

namespace ls2c::runtime {

//===----------------------------------------------------------------------===//
// Environment
//===----------------------------------------------------------------------===//

namespace {

constexpr const char *kAllVariables =
    "torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT";

/// `name`'s decimal value in [lo, hi]; throws naming the variable.
long long parseVariable(const char *name, const char *value, long long lo,
                        long long hi, const std::string &bound) {
  std::string v(value);
  std::string shown = std::string(name) + "='" + v + "'";
  if (v.empty() || v.size() > 18 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw DistributedError(shown + ": not a decimal integer without sign or spaces");
  long long n = std::stoll(v);
  if (n < lo || n > hi)
    throw DistributedError(std::string(name) + "=" + v + ": " + bound);
  return n;
}

} // namespace

DistributedEnv parseDistributedEnv(const EnvLookup &lookupArg) {
  EnvLookup lookup = lookupArg ? lookupArg : [](const char *n) -> const char * {
    return std::getenv(n);
  };
  auto required = [&](const char *name) {
    const char *v = lookup(name);
    if (!v)
      throw DistributedError(std::string(name) + " is not set (" + kAllVariables + ")");
    return v;
  };
  DistributedEnv env;
  env.worldSize = int(parseVariable("WORLD_SIZE", required("WORLD_SIZE"), 1, 1 << 30,
                                    "must be at least 1"));
  std::string ws = std::to_string(env.worldSize);
  env.rank = int(parseVariable("RANK", required("RANK"), 0, env.worldSize - 1,
                               "must be less than WORLD_SIZE=" + ws));
  bool single = env.worldSize == 1;
  const char *local = single ? lookup("LOCAL_RANK") : required("LOCAL_RANK");
  env.localRank = local ? int(parseVariable("LOCAL_RANK", local, 0, env.worldSize - 1,
                                            "must be less than WORLD_SIZE=" + ws))
                        : 0;
  const char *addr = single ? lookup("MASTER_ADDR") : required("MASTER_ADDR");
  if (addr && !*addr)
    throw DistributedError("MASTER_ADDR is empty: must name rank 0's host");
  env.masterAddr = addr ? addr : "127.0.0.1";
  const char *port = single ? lookup("MASTER_PORT") : required("MASTER_PORT");
  env.masterPort = port ? uint16_t(parseVariable("MASTER_PORT", port, 1, 65535,
                                                 "must be a TCP port in 1..65535"))
                        : uint16_t(29500);
  return env;
}

//===----------------------------------------------------------------------===//
// Sockets
//===----------------------------------------------------------------------===//

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kMagic[8] = {'L', 'S', '2', 'C', 'R', 'D', 'Z', 'V'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHelloBytes = 24;
constexpr size_t kReplyHeaderBytes = 16;
constexpr size_t kMaxBlobBytes = 1 << 20;
constexpr size_t kMaxMessageBytes = 64 << 10;

std::string errnoText(int e) { return std::system_category().message(e); }

/// A descriptor closed with the object.
class Socket {
public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket &operator=(Socket &&o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int fd() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_ = -1;
};

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}
uint32_t getU32(const std::string &in, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | uint8_t(in[at + size_t(i)]);
  return v;
}

/// Milliseconds until `deadline` (0 when past), for poll().
int msLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return int(std::clamp<long long>(left, 0, 1 << 30));
}

std::string seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", double(ms.count()) / 1000.0);
  return buf;
}

/// "host:port", "[v6]:port".
std::string endpoint(const std::string &host, unsigned port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string peerName(const sockaddr *sa, socklen_t len) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "an unknown address";
  return endpoint(host, unsigned(std::atoi(serv)));
}

bool setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

struct AddrInfoFree {
  void operator()(addrinfo *a) const { freeaddrinfo(a); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoFree>;

/// Resolves host:port for TCP; on failure returns null and sets `error`.
AddrInfoList resolve(const std::string &host, uint16_t port, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *res = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    error = rc == EAI_SYSTEM ? errnoText(errno) : gai_strerror(rc);
    return nullptr;
  }
  return AddrInfoList(res);
}

/// Sends all of `data` before `deadline`; false on error, timeout or a
/// closed peer (never raises SIGPIPE).
bool sendAll(int fd, const std::string &data, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      int left = msLeft(deadline);
      if (left == 0 || ::poll(&p, 1, left) <= 0)
        return false;
      continue;
    }
    return false;
  }
  return true;
}

enum class RecvStatus { Ok, Closed, Timeout, Error };

/// Reads exactly `n` bytes into `out` before `deadline`.
RecvStatus recvExactly(int fd, size_t n, std::string &out, Clock::time_point deadline,
                       int &err) {
  out.clear();
  while (out.size() < n) {
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, msLeft(deadline));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0) {
      err = errno;
      return RecvStatus::Error;
    }
    if (rc == 0)
      return RecvStatus::Timeout;
    char buf[4096];
    ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got == 0)
      return RecvStatus::Closed;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
        continue;
      err = errno;
      return errno == ECONNRESET ? RecvStatus::Closed : RecvStatus::Error;
    }
    out.append(buf, size_t(got));
  }
  return RecvStatus::Ok;
}

std::string reply(uint32_t status, const std::string &payload) {
  std::string r(kMagic, sizeof kMagic);
  putU32(r, status);
  putU32(r, uint32_t(payload.size()));
  return r + payload;
}

//===----------------------------------------------------------------------===//
// Rank 0
//===----------------------------------------------------------------------===//

struct Peer {
  Socket socket;
  std::string name; ///< "address:port"
  std::string hello; ///< bytes read so far
};

std::string serve(const DistributedEnv &env, const std::string &blob,
                  const RendezvousOptions &options, Clock::time_point deadline) {
  const std::string where = "rank 0: ";
  std::string error;
  AddrInfoList addrs = resolve(env.masterAddr, env.masterPort, error);
  if (!addrs)
    throw DistributedError(where + "cannot resolve MASTER_ADDR='" + env.masterAddr +
                           "': " + error);
  const int family = addrs->ai_family;

  Socket listener(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener)
    throw DistributedError(where + "socket(): " + errnoText(errno));
  int one = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage any{};
  socklen_t anyLen;
  if (family == AF_INET6) {
    auto *a = reinterpret_cast<sockaddr_in6 *>(&any);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    a->sin6_port = htons(env.masterPort);
    anyLen = sizeof(sockaddr_in6);
  } else {
    auto *a = reinterpret_cast<sockaddr_in *>(&any);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    a->sin_port = htons(env.masterPort);
    anyLen = sizeof(sockaddr_in);
  }
  if (::bind(listener.fd(), reinterpret_cast<sockaddr *>(&any), anyLen) != 0)
    throw DistributedError(where + "cannot listen on MASTER_PORT=" +
                           std::to_string(env.masterPort) + ": " + errnoText(errno) +
                           (errno == EADDRINUSE ? " (another job on this port? pick "
                                                  "another MASTER_PORT)"
                                                : ""));
  if (::listen(listener.fd(), std::min(env.worldSize, SOMAXCONN)) != 0 ||
      !setNonBlocking(listener.fd()))
    throw DistributedError(where + "listen(): " + errnoText(errno));

  const size_t others = size_t(env.worldSize - 1);
  std::vector<Peer> pending;
  std::map<uint32_t, Peer> joined; // rank -> its connection

  // Sends `message` to every joined rank and to `offender`, then throws.
  auto fail = [&](const std::string &message, Peer *offender) {
    std::string r = reply(1, message.substr(0, kMaxMessageBytes));
    auto soon = Clock::now() + std::chrono::seconds(1);
    if (offender)
      sendAll(offender->socket.fd(), r, soon);
    for (auto &[rank, peer] : joined)
      sendAll(peer.socket.fd(), r, soon);
    throw DistributedError(where + message);
  };

  while (joined.size() < others) {
    std::vector<pollfd> fds;
    fds.push_back({listener.fd(), POLLIN, 0});
    for (Peer &p : pending)
      fds.push_back({p.socket.fd(), POLLIN, 0});
    for (auto &[rank, p] : joined)
      fds.push_back({p.socket.fd(), POLLIN, 0});
    int left = msLeft(deadline);
    int rc = left == 0 ? 0 : ::poll(fds.data(), fds.size(), left);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0)
      throw DistributedError(where + "poll(): " + errnoText(errno));
    if (rc == 0) {
      std::string missing;
      for (int r = 1; r < env.worldSize; ++r)
        if (!joined.count(uint32_t(r)))
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      fail("timed out after " + seconds(options.timeout) + " waiting for rank" +
               (others - joined.size() > 1 ? "s " : " ") + missing + " (" +
               std::to_string(joined.size()) + " of " + std::to_string(others) +
               " other ranks joined on MASTER_PORT=" + std::to_string(env.masterPort) +
               ")",
           nullptr);
    }

    // A joined rank that sends anything or hangs up has given up.
    size_t at = 1 + pending.size();
    for (auto &[rank, p] : joined) {
      if (fds[at++].revents != 0)
        fail("rank " + std::to_string(rank) + " (from " + p.name +
                 ") closed its connection before every rank had joined",
             nullptr);
    }
    // Hellos.
    for (size_t i = 0; i < pending.size(); ++i) {
      if (fds[1 + i].revents == 0)
        continue;
      Peer &p = pending[i];
      char buf[kHelloBytes];
      ssize_t got = ::recv(p.socket.fd(), buf, kHelloBytes - p.hello.size(), 0);
      if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        continue;
      if (got <= 0) {
        p.socket.reset(); // closed or failed before a hello: ignore it
        continue;
      }
      p.hello.append(buf, size_t(got));
      size_t magic = std::min(p.hello.size(), sizeof kMagic);
      if (p.hello.compare(0, magic, kMagic, magic) != 0) {
        p.socket.reset(); // not one of ours
        continue;
      }
      if (p.hello.size() < kHelloBytes)
        continue;
      uint32_t version = getU32(p.hello, 8), rank = getU32(p.hello, 12),
               world = getU32(p.hello, 16), bytes = getU32(p.hello, 20);
      std::string who = "rank " + std::to_string(rank) + " (from " + p.name + ")";
      if (version != kVersion)
        fail("a peer at " + p.name + " speaks rendezvous version " +
                 std::to_string(version) + ", rank 0 speaks " + std::to_string(kVersion),
             &p);
      if (world != uint32_t(env.worldSize))
        fail(who + " has WORLD_SIZE=" + std::to_string(world) +
                 " but rank 0 has WORLD_SIZE=" + std::to_string(env.worldSize) +
                 ": every rank must use the same WORLD_SIZE",
             &p);
      if (rank == 0 || rank >= uint32_t(env.worldSize))
        fail("a peer at " + p.name + " has RANK=" + std::to_string(rank) +
                 ": the other ranks must be 1.." + std::to_string(env.worldSize - 1) +
                 " (rank 0 is the process listening)",
             &p);
      if (auto it = joined.find(rank); it != joined.end())
        fail("RANK=" + std::to_string(rank) + " joined twice (from " + it->second.name +
                 " and " + p.name + "): every process needs its own RANK",
             &p);
      if (bytes != blob.size())
        fail(who + " expects a " + std::to_string(bytes) + "-byte blob but rank 0 sends " +
                 std::to_string(blob.size()) + " bytes",
             &p);
      joined.emplace(rank, std::move(p));
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const Peer &p) { return !p.socket; }),
                  pending.end());
    // New connections (after the hellos: `fds` indexes the old list).
    if (fds[0].revents & POLLIN) {
      for (;;) {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        int fd = ::accept4(listener.fd(), reinterpret_cast<sockaddr *>(&peer), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
          break; // EAGAIN (no more), or a connection that went away
        Peer p;
        p.socket = Socket(fd);
        p.name = peerName(reinterpret_cast<sockaddr *>(&peer), len);
        pending.push_back(std::move(p));
      }
    }
  }

  std::string ok = reply(0, blob);
  for (auto &[rank, p] : joined) {
    if (!sendAll(p.socket.fd(), ok, deadline))
      fail("could not send the blob to rank " + std::to_string(rank) + " (from " +
               p.name + "): " + errnoText(errno),
           nullptr);
    ::shutdown(p.socket.fd(), SHUT_WR);
  }
  return blob;
}

//===----------------------------------------------------------------------===//
// Ranks 1..n-1
//===----------------------------------------------------------------------===//

/// A connected socket to rank 0, or throws after the attempts.
Socket connectToRankZero(const DistributedEnv &env, const RendezvousOptions &options,
                         Clock::time_point deadline, const std::string &where) {
  const std::string target = endpoint(env.masterAddr, env.masterPort);
  const int attempts = std::max(1, options.connectAttempts);
  auto start = Clock::now();
  std::string lastError = "no attempt made";
  int made = 0;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) {
      auto pause = std::min<Clock::duration>(options.retryInterval, deadline - Clock::now());
      if (pause > Clock::duration::zero())
        std::this_thread::sleep_for(pause);
    }
    if (Clock::now() >= deadline && made > 0)
      break;
    ++made;
    AddrInfoList addrs = resolve(env.masterAddr, env.masterPort, lastError);
    if (!addrs) {
      lastError = "cannot resolve MASTER_ADDR='" + env.masterAddr + "': " + lastError;
      continue;
    }
    for (addrinfo *a = addrs.get(); a; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        a->ai_protocol));
      if (!s) {
        lastError = "socket(): " + errnoText(errno);
        continue;
      }
      int rc = ::connect(s.fd(), a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        pollfd p{s.fd(), POLLOUT, 0};
        int pr;
        do
          pr = ::poll(&p, 1, msLeft(deadline));
        while (pr < 0 && errno == EINTR);
        if (pr == 0) {
          lastError = "connection timed out";
          continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0)
        return s;
      lastError = errnoText(errno);
    }
  }
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  throw DistributedError(where + "cannot connect to rank 0 at MASTER_ADDR:MASTER_PORT=" +
                         target + " after " + std::to_string(made) + " attempt" +
                         (made == 1 ? "" : "s") + " over " + seconds(took) + ": " +
                         lastError +
                         " (is rank 0 running, with the same MASTER_ADDR and "
                         "MASTER_PORT?)");
}

std::string join(const DistributedEnv &env, size_t blobBytes,
                 const RendezvousOptions &options, Clock::time_point deadline) {
  const std::string where = "rank " + std::to_string(env.rank) + ": ";
  Socket s = connectToRankZero(env, options, deadline, where);
  std::string hello(kMagic, sizeof kMagic);
  putU32(hello, kVersion);
  putU32(hello, uint32_t(env.rank));
  putU32(hello, uint32_t(env.worldSize));
  putU32(hello, uint32_t(blobBytes));
  if (!sendAll(s.fd(), hello, deadline))
    throw DistributedError(where + "could not send the hello to rank 0: " +
                           errnoText(errno));

  auto explain = [&](RecvStatus st, int err) -> std::string {
    switch (st) {
    case RecvStatus::Timeout:
      return "no reply from rank 0 within " + seconds(options.timeout) +
             " (are all WORLD_SIZE=" + std::to_string(env.worldSize) +
             " ranks running?)";
    case RecvStatus::Closed:
      return "rank 0 closed the connection without a reply (see rank 0's error)";
    default:
      return "receiving from rank 0: " + errnoText(err);
    }
  };
  std::string header;
  int err = 0;
  RecvStatus st = recvExactly(s.fd(), kReplyHeaderBytes, header, deadline, err);
  if (st != RecvStatus::Ok)
    throw DistributedError(where + explain(st, err));
  if (header.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0)
    throw DistributedError(where + "the peer at MASTER_ADDR:MASTER_PORT=" +
                           endpoint(env.masterAddr, env.masterPort) +
                           " is not an ls2c rendezvous (bad reply magic)");
  uint32_t status = getU32(header, 8), length = getU32(header, 12);
  if (length > (status == 0 ? kMaxBlobBytes : kMaxMessageBytes))
    throw DistributedError(where + "rank 0 announced a " + std::to_string(length) +
                           "-byte reply: too long");
  std::string payload;
  st = recvExactly(s.fd(), length, payload, deadline, err);
  if (st != RecvStatus::Ok)
    throw DistributedError(where + explain(st, err));
  if (status != 0)
    throw DistributedError(where + "the rendezvous failed at rank 0: " + payload);
  if (payload.size() != blobBytes)
    throw DistributedError(where + "rank 0 sent " + std::to_string(payload.size()) +
                           " bytes, expected " + std::to_string(blobBytes));
  return payload;
}

} // namespace

std::string rendezvous(const DistributedEnv &env, const std::string &blob,
                       size_t blobBytes, const RendezvousOptions &options) {
  const std::string where = "rank " + std::to_string(env.rank) + ": ";
  if (env.worldSize < 1 || env.rank < 0 || env.rank >= env.worldSize)
    throw DistributedError(where + "RANK=" + std::to_string(env.rank) +
                           " outside WORLD_SIZE=" + std::to_string(env.worldSize));
  if (blobBytes > kMaxBlobBytes)
    throw DistributedError(where + "blob of " + std::to_string(blobBytes) +
                           " bytes: at most " + std::to_string(kMaxBlobBytes));
  if (env.rank == 0 && blob.size() != blobBytes)
    throw DistributedError(where + "blob of " + std::to_string(blob.size()) +
                           " bytes given, " + std::to_string(blobBytes) + " expected");
  if (env.worldSize == 1)
    return blob;
  if (env.masterPort == 0)
    throw DistributedError(where + "MASTER_PORT=0: must be a TCP port in 1..65535");
  auto deadline = Clock::now() + options.timeout;
  return env.rank == 0 ? serve(env, blob, options, deadline)
                       : join(env, blobBytes, options, deadline);
}

} // namespace ls2c::runtime
