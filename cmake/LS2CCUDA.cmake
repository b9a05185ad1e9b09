# Finds the CUDA 13 pieces ls2c uses: NVRTC (kernel compilation), the driver
# API (module loading and launches), cuBLASLt (GEMMs), and, outside
# FindCUDAToolkit, NCCL (collectives) and cuDNN (fused attention). Everything
# is optional: without CUDA the compiler and the CPU parts still build.
#
# Sets LS2C_HAVE_CUDA, LS2C_HAVE_NCCL, LS2C_HAVE_CUDNN and the imported targets
# ls2c::nccl and ls2c::cudnn when found.

find_package(CUDAToolkit QUIET)
set(LS2C_HAVE_CUDA OFF)
set(LS2C_HAVE_NCCL OFF)
set(LS2C_HAVE_CUDNN OFF)
if(NOT CUDAToolkit_FOUND)
  message(STATUS "ls2c: no CUDA toolkit; building the compiler and CPU parts only")
  return()
endif()

foreach(t CUDA::nvrtc CUDA::cuda_driver CUDA::cublasLt CUDA::cudart)
  if(NOT TARGET ${t})
    message(STATUS "ls2c: CUDA ${CUDAToolkit_VERSION} lacks ${t}; GPU support off")
    return()
  endif()
endforeach()
set(LS2C_HAVE_CUDA ON)
message(STATUS "ls2c: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_TARGET_DIR} (NVRTC, driver API, cuBLASLt)")
# NVRTC's library alone: CUDA::nvrtc also links the driver stub (lib/JIT).
if(NOT TARGET ls2c::nvrtc)
  add_library(ls2c::nvrtc UNKNOWN IMPORTED)
  set_target_properties(ls2c::nvrtc PROPERTIES IMPORTED_LOCATION "${CUDA_nvrtc_LIBRARY}")
endif()

# NCCL and cuDNN ship inside the CUDA install here (lib/ beside lib64/).
set(_ls2c_cuda_libs "${CUDAToolkit_LIBRARY_DIR}" "${CUDAToolkit_TARGET_DIR}/lib"
    "${CUDAToolkit_TARGET_DIR}/lib64")
set(_ls2c_cuda_incs "${CUDAToolkit_INCLUDE_DIRS}" "${CUDAToolkit_TARGET_DIR}/include")

foreach(lib nccl cudnn)
  string(TOUPPER ${lib} LIB)
  find_path(LS2C_${LIB}_INCLUDE_DIR ${lib}.h HINTS ${_ls2c_cuda_incs})
  find_library(LS2C_${LIB}_LIBRARY ${lib} HINTS ${_ls2c_cuda_libs})
  if(TARGET ls2c::${lib}) # found before in this scope (find_package(ls2c) called again)
    set(LS2C_HAVE_${LIB} ON)
  elseif(LS2C_${LIB}_INCLUDE_DIR AND LS2C_${LIB}_LIBRARY)
    add_library(ls2c::${lib} UNKNOWN IMPORTED)
    set_target_properties(ls2c::${lib} PROPERTIES
      IMPORTED_LOCATION "${LS2C_${LIB}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${LS2C_${LIB}_INCLUDE_DIR}")
    set(LS2C_HAVE_${LIB} ON)
    message(STATUS "ls2c: ${lib} at ${LS2C_${LIB}_LIBRARY}")
  else()
    message(STATUS "ls2c: ${lib} not found; the features that need it are off")
  endif()
endforeach()
