//===- Sha256.h - SHA-256 through OpenSSL's EVP API -----------------------===//
//
// The program cache names entries by a SHA-256 key and checks each entry's
// payload with one. OpenSSL does the hashing (no hand-written hash); this
// wrapper only hides EVP's C interface. Private to lib/JIT.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_JIT_SHA256_H
#define LS2C_LIB_JIT_SHA256_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace ls2c::jit {

using Sha256Digest = std::array<uint8_t, 32>;

/// An incremental SHA-256. Throws std::runtime_error if OpenSSL fails
/// (allocation failure or a FIPS configuration without SHA-256).
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;

  void update(std::string_view bytes);
  /// Finishes the hash; the object must not be updated afterwards.
  Sha256Digest finish();

private:
  evp_md_ctx_st *ctx;
};

Sha256Digest sha256(std::string_view bytes);
/// 64 lowercase hex digits.
std::string toHex(const Sha256Digest &digest);
std::string sha256Hex(std::string_view bytes);

} // namespace ls2c::jit

#endif // LS2C_LIB_JIT_SHA256_H
