//===- ScatterAdd.h - the two embedding-gradient generators -----*- C++ -*-===//
//
// ls2.scatter_add has two generators: the scan kernel (ScatterAddKernel.cpp,
// small tables and small grids) and the sorted-ids pair (ScatterAddSorted.cpp,
// large tables). Both give every sum an order fixed by the ids.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_CODEGEN_SCATTERADD_H
#define LS2C_LIB_CODEGEN_SCATTERADD_H

#include "ls2c/Codegen/KernelGenerator.h"

#include <optional>
#include <vector>

namespace ls2c::codegen {

/// The sizes both generators read off a scatter_add.
struct ScatterAddShape {
  int64_t rowsBound = 0;    ///< table rows (the bound when dynamic)
  int64_t width = 1;        ///< elements a row (product of the trailing dims)
  bool dynamicRows = false; ///< the row count is a kernel parameter
  runtime::Dim rowsDim;     ///< that count, when dynamic
  runtime::Dim count;       ///< ids = count x staticIds
  int64_t staticIds = 1;
  int64_t idsBound = 0;     ///< at most this many ids
};

/// The sorted-ids kernels ("<name>_sort", then "<name>"), or nullopt where
/// the table is too small for them (fewer tiles than multiprocessors) or
/// too large for 32-bit keys. Binds (updates, ids, result, number of ids,
/// scratch), then the row count when dynamic.
std::optional<std::vector<GeneratedKernel>>
generateSortedScatterAdd(ls2::ScatterAddOp op, const std::string &kernelName,
                         const ScatterAddShape &shape);

} // namespace ls2c::codegen

#endif // LS2C_LIB_CODEGEN_SCATTERADD_H
