# The CMake package: `cmake --install` puts the ls2c CLI, the compiler and
# runtime libraries and their headers under the prefix, with
# lib/cmake/ls2c/ls2cConfig.cmake, so that a C++ project can write
#   find_package(ls2c REQUIRED)
#   target_link_libraries(app PRIVATE ls2c::JITCompiler ls2c::RuntimeProgram)
# ls2c::JITCompiler is the in-process compiler (include/ls2c/JIT.h: a model
# description to a Program, kernels compiled by NVRTC), ls2c::RuntimeProgram
# the Program and the bundle format (ls2c/Runtime/Program.h, Bundle.h) and,
# where the build has CUDA, ls2c::RuntimeExecutor runs a Program on a GPU
# (ls2c/Runtime/Executor.h) and ls2c::RuntimeDataParallel sums its
# gradients over ranks (ls2c/Runtime/DataParallel.h, SimulatedRanks.h). In this tree the same ls2c:: names are aliases,
# so examples/cpp builds either way.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The three and what they link against, in dependency order (NCCL's for
# the data-parallel runtime); each is present only when the build has what
# it needs (MLIR, CUDA, NCCL, cuDNN).
set(_ls2c_package_libraries
  LS2CSupport LS2CModel LS2CTraining LS2CAnalysis LS2CRuntimeProgram LS2CRuntimeDistributed
  LS2CJIT LS2CRuntimeGemm LS2CRuntimeNccl LS2CRuntimeCudnn LS2CRuntimeExecutor
  LS2CRuntimeDataParallel
  LS2Dialect LS2CAnalysisIR LS2CTransforms LS2CFrontend LS2CCodegen LS2CJITCompiler)
set(_ls2c_exported "")
foreach(t IN LISTS _ls2c_package_libraries)
  if(TARGET ${t})
    list(APPEND _ls2c_exported ${t})
    # LS2CJITCompiler is ls2c::JITCompiler, LS2Dialect ls2c::Dialect.
    string(REGEX REPLACE "^LS2C?" "" name ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${name})
    target_compile_features(${t} PUBLIC cxx_std_17) # their headers' standard
    add_library(ls2c::${name} ALIAS ${t})
  endif()
endforeach()

install(TARGETS ${_ls2c_exported} EXPORT ls2cTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET ls2c)
  # Installed, it still finds MLIR's and CUDA's shared libraries where it
  # was linked against them.
  set_target_properties(ls2c PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ls2c RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET ls2c-cuda)
  # `ls2c train` on the GPU: opened by ls2c at run time (lib/Trainer/CudaModule.h).
  set_target_properties(ls2c-cuda PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ls2c-cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/ls2c)
endif()
# The public headers: the compiler's and the runtime's (both ls2c/...),
# the ls2 dialect's that they include, and those TableGen generates.
install(DIRECTORY include/ls2c runtime/include/ls2c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h"
  # Those of libraries the package does not hold (the CLI's data, training
  # and generation parts).
  PATTERN Data EXCLUDE PATTERN Eval EXCLUDE PATTERN Generation EXCLUDE
  PATTERN Parallel EXCLUDE PATTERN Reference EXCLUDE PATTERN Trainer EXCLUDE)
# Header-only, and included by Frontend/SequenceParallelModule.h.
install(FILES include/ls2c/Parallel/SequenceParallelFunctions.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ls2c/Parallel)
if(LS2C_ENABLE_MLIR)
  install(DIRECTORY dialects/ls2 DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h")
  install(DIRECTORY ${CMAKE_BINARY_DIR}/dialects/ls2 ${CMAKE_BINARY_DIR}/include/ls2c
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h.inc"
    PATTERN CMakeFiles EXCLUDE)
endif()

set(_ls2c_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ls2c)
install(EXPORT ls2cTargets NAMESPACE ls2c:: DESTINATION ${_ls2c_cmake_dir})
set(LS2C_PACKAGE_WITH_MLIR ${LS2C_ENABLE_MLIR})
set(LS2C_PACKAGE_WITH_CUDA ${LS2C_HAVE_CUDA})
set(LS2C_PACKAGE_WITH_NCCL ${LS2C_HAVE_NCCL})
set(LS2C_PACKAGE_WITH_CUDNN ${LS2C_HAVE_CUDNN})
# Written under package/ (not the build tree's root, where ls2c_DIR=build
# would find a config without its targets).
set(_ls2c_package ${CMAKE_CURRENT_BINARY_DIR}/package)
configure_package_config_file(cmake/ls2cConfig.cmake.in
  ${_ls2c_package}/ls2cConfig.cmake INSTALL_DESTINATION ${_ls2c_cmake_dir})
write_basic_package_version_file(${_ls2c_package}/ls2cConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${_ls2c_package}/ls2cConfig.cmake ${_ls2c_package}/ls2cConfigVersion.cmake
              cmake/LS2CCUDA.cmake
        DESTINATION ${_ls2c_cmake_dir})
