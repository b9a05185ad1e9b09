//===- SharedDataDir.h - where the tests' real data lies -------*- C++ -*-===//
//
// The shared data folder beside the checkout (../shared/data, see its
// README: WikiText-2, Multi30k), or $LS2C_SHARED_DATA_DIR. Tests that need
// it skip with the path they looked for where it is missing (a user's own
// clone has none); CI has it.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TEST_UNIT_SHAREDDATADIR_H
#define LS2C_TEST_UNIT_SHAREDDATADIR_H

#include <cstdlib>
#include <string>

namespace ls2c::testing {

inline std::string sharedDataDir() {
  const char *dir = std::getenv("LS2C_SHARED_DATA_DIR");
  return dir && *dir ? dir : LS2C_SHARED_DATA_DIR;
}

} // namespace ls2c::testing

#endif // LS2C_TEST_UNIT_SHAREDDATADIR_H
