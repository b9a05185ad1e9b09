//===- BundleWriter.cpp - write programs as bundles -----------------------===//
#include "Manifest.h"

#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/ProgramValidate.h"
#include "ls2c/Support/AtomicFile.h"

#include <openssl/evp.h>

#include <cstdint>
#include <cstring>

namespace ls2c::runtime {

namespace {

void putU32(std::string &out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void putU64(std::string &out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void putHash(std::string &out, size_t at, std::string_view bytes) {
  std::array<uint8_t, 32> h = bundleSha256(bytes);
  std::memcpy(&out[at], h.data(), h.size());
}

uint64_t alignUp(uint64_t v) {
  return (v + kBundleSectionAlignment - 1) / kBundleSectionAlignment *
         kBundleSectionAlignment;
}

} // namespace

std::array<uint8_t, 32> bundleSha256(std::string_view bytes) {
  std::array<uint8_t, 32> out{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &length, EVP_sha256(),
                 nullptr) != 1 ||
      length != out.size())
    throw std::runtime_error("SHA-256 failed (OpenSSL EVP_Digest)");
  return out;
}

std::string assembleBundle(const std::vector<BundleSection> &sections) {
  if (sections.size() > UINT32_MAX)
    throw BundleError("bundle", "header.sectionCount",
                      std::to_string(sections.size()) +
                          ": more sections than a u32 counts");
  uint64_t tableEnd =
      kBundleHeaderBytes + sections.size() * kBundleSectionEntryBytes;
  std::vector<uint64_t> offsets;
  uint64_t end = tableEnd;
  for (const BundleSection &s : sections) {
    offsets.push_back(alignUp(end));
    end = offsets.back() + s.payload.size();
  }
  std::string out(end, '\0'); // padding is zero
  std::memcpy(&out[0], kBundleMagic, sizeof(kBundleMagic));
  putU32(out, 8, kBundleFormatVersion);
  putU32(out, 12, static_cast<uint32_t>(sections.size()));
  putU64(out, 16, end);
  for (size_t i = 0; i < sections.size(); ++i) {
    size_t e = kBundleHeaderBytes + i * kBundleSectionEntryBytes;
    const BundleSection &s = sections[i];
    putU32(out, e, static_cast<uint32_t>(s.kind));
    putU32(out, e + 4, 0); // reserved
    putU64(out, e + 8, offsets[i]);
    putU64(out, e + 16, s.payload.size());
    putHash(out, e + 24, s.payload);
    if (!s.payload.empty())
      std::memcpy(&out[offsets[i]], s.payload.data(), s.payload.size());
  }
  putHash(out, 24,
          std::string_view(out).substr(kBundleHeaderBytes,
                                       tableEnd - kBundleHeaderBytes));
  return out;
}

std::string serializeBundle(const Program &program) {
  validateProgram(program, "program");
  return assembleBundle(detail::programToSections(program));
}

void writeBundle(const Program &program, const std::string &path) {
  validateProgram(program, path);
  writeFileAtomically(path, assembleBundle(detail::programToSections(program)));
}

} // namespace ls2c::runtime
