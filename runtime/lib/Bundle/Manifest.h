//===- Manifest.h - a Program as bundle sections (private) ----------------===//
//
// The manifest JSON and the section list of a bundle (docs/bundle-format.md).
// The writer numbers sections as it appends them: 0 the manifest, then per
// kernel in order its source and its cubins in arch order. The reader checks
// every JSON type and key and resolves every section reference exactly once.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_LIB_MANIFEST_H
#define LS2C_RUNTIME_LIB_MANIFEST_H

#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/Program.h"

#include <string>
#include <vector>

namespace ls2c::runtime::detail {

/// The sections of `program` (which must be valid): the manifest first.
std::vector<BundleSection> programToSections(const Program &program);

/// The Program the sections hold (as splitBundle returns them: section 0 is
/// the manifest). Checks the manifest's JSON syntax, types, keys and section
/// references, not the program's invariants (validateProgram does).
/// `version` is the container header's format version: the manifest's
/// `formatVersion` must equal it, and it decides which keys exist.
Program sectionsToProgram(const std::vector<BundleSection> &sections,
                          const std::string &nameForErrors,
                          uint32_t version = kBundleFormatVersion);

} // namespace ls2c::runtime::detail

#endif // LS2C_RUNTIME_LIB_MANIFEST_H
