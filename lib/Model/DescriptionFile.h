//===- DescriptionFile.h - Read a description file safely -------*- C++ -*-===//
//
// Private to lib/Model.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_MODEL_DESCRIPTIONFILE_H
#define LS2C_LIB_MODEL_DESCRIPTIONFILE_H

#include <string>

namespace ls2c::detail {

/// The bytes of the regular file `path`. Throws DescriptionError (source
/// `path`, no JSON path) when it is missing or unreadable ("cannot open: ...",
/// "cannot read: ..."), a directory ("is a directory"), anything else that is
/// not a regular file ("is not a regular file": FIFOs, devices and sockets
/// are never opened, so a reader is never blocked), or larger than
/// kMaxDescriptionBytes.
std::string readDescriptionFile(const std::string &path);

} // namespace ls2c::detail

#endif // LS2C_LIB_MODEL_DESCRIPTIONFILE_H
