//===- Rendezvous.h - torchrun's environment and a small TCP rendezvous ---===//
//
// Data-parallel runs start one process per GPU (issue 9), as torchrun does:
//
//   torchrun --nproc-per-node=8 ls2c-gpu-train ...        (one node)
//   RANK=r WORLD_SIZE=n LOCAL_RANK=l MASTER_ADDR=host MASTER_PORT=29500 ...
//
// parseDistributedEnv reads that environment. rendezvous() then hands every
// rank the same small blob from rank 0: NCCL's 128-byte ncclUniqueId, which
// ncclCommInitRank needs on every rank (DistributedNccl.h). No CUDA, no MLIR.
//
// The protocol (TCP, all integers little-endian; version 1):
//
//   rank 0 listens on MASTER_PORT of every local address of MASTER_ADDR's
//   family (the wildcard address, as torch's TCPStore does); ranks 1..n-1
//   connect to MASTER_ADDR:MASTER_PORT, retrying while the connection is
//   refused or unreachable (rank 0 not listening yet), at most
//   connectAttempts times, retryInterval apart.
//
//   hello, rank r -> rank 0, 24 bytes:
//     "LS2CRDZV" (8 bytes), u32 version = 1, u32 rank, u32 world size,
//     u32 blob bytes
//   reply, rank 0 -> rank r:
//     "LS2CRDZV" (8 bytes), u32 status (0 ok, 1 error), u32 length,
//     then `length` bytes: the blob (ok) or an error message (error)
//
//   Rank 0 replies only once all n - 1 other ranks have said hello (the
//   rendezvous is also a barrier), then closes every connection. A hello
//   that breaks a rule (another version, world size or blob size, a rank
//   outside 1..n-1, a rank already connected) fails the whole rendezvous:
//   rank 0 sends the error reply to that connection and to every rank
//   already connected, and throws; they throw with its message. Connections
//   that close or send other bytes before a complete hello with the magic
//   are dropped and ignored (port scanners, health checks).
//
// Every wait has a deadline (RendezvousOptions::timeout from the call's
// start): rank 0 names the ranks that never came; the others say whether
// they could not connect or got no reply. Errors are DistributedError, whose
// message starts with "rank R: ".
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_RENDEZVOUS_H
#define LS2C_RUNTIME_RENDEZVOUS_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace ls2c::runtime {

/// A bad environment or a failed rendezvous: the variable or the peer, and
/// the rule or the system's error.
class DistributedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// torchrun's per-process environment.
struct DistributedEnv {
  int rank = 0;        ///< RANK, in [0, worldSize)
  int worldSize = 1;   ///< WORLD_SIZE, >= 1
  int localRank = 0;   ///< LOCAL_RANK (the GPU on this node), in [0, worldSize)
  std::string masterAddr; ///< MASTER_ADDR: rank 0's host name or address
  uint16_t masterPort = 0; ///< MASTER_PORT, in [1, 65535]
};

/// Looks a variable up: its value, or nullptr when unset.
using EnvLookup = std::function<const char *(const char *name)>;

/// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT through
/// `lookup` (the process environment by default). Integers are decimal,
/// without sign or surrounding spaces. With WORLD_SIZE 1, LOCAL_RANK,
/// MASTER_ADDR and MASTER_PORT may be unset (0, "127.0.0.1", 29500).
/// Throws DistributedError naming the first missing or invalid variable,
/// its value and the rule ("RANK=4: must be less than WORLD_SIZE=4").
DistributedEnv parseDistributedEnv(const EnvLookup &lookup = {});

struct RendezvousOptions {
  /// Deadline for the whole rendezvous, from the call's start.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /// Ranks other than 0: connection attempts (each bounded by the time left)
  /// before giving up, and the pause between them.
  int connectAttempts = 600;
  std::chrono::milliseconds retryInterval{500};
};

/// Collective: every rank of `env` calls it. Rank 0 passes `blob` (exactly
/// `blobBytes` bytes, at most 1 MiB) and gets it back; the others pass
/// anything (ignored) and receive rank 0's. With worldSize 1 nothing touches
/// the network. Throws DistributedError.
std::string rendezvous(const DistributedEnv &env, const std::string &blob,
                       size_t blobBytes, const RendezvousOptions &options = {});

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_RENDEZVOUS_H
