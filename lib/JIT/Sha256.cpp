//===- Sha256.cpp - SHA-256 through OpenSSL's EVP API ---------------------===//
#include "Sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace ls2c::jit {

Sha256::Sha256() : ctx(EVP_MD_CTX_new()) {
  if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx);
    throw std::runtime_error("OpenSSL: cannot initialize SHA-256");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx); }

void Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx, bytes.data(), bytes.size()) != 1)
    throw std::runtime_error("OpenSSL: SHA-256 update failed");
}

Sha256Digest Sha256::finish() {
  Sha256Digest digest{};
  unsigned length = 0;
  if (EVP_DigestFinal_ex(ctx, digest.data(), &length) != 1 ||
      length != digest.size())
    throw std::runtime_error("OpenSSL: SHA-256 final failed");
  return digest;
}

Sha256Digest sha256(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.finish();
}

std::string toHex(const Sha256Digest &digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest.size());
  for (uint8_t byte : digest) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 15]);
  }
  return hex;
}

std::string sha256Hex(std::string_view bytes) { return toHex(sha256(bytes)); }

} // namespace ls2c::jit
