# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#       -DMAKE_PROGRAM=... -DCXX_COMPILER=... -DEXECUTOR=0|1 -P FindPackage.cmake
# Installs the build into WORK_DIR/prefix, configures and builds
# examples/cpp against it alone (find_package(ls2c) pinned to the install,
# no source tree on its include path), runs the example on tiny-gpt and the
# installed CLI's check, compiles every installed header on its own
# (headers/), and with EXECUTOR builds a program linked against
# ls2c::RuntimeExecutor (executor/; not run: it needs a GPU driver). With
# CUDA_MODULE, the installed ls2c finds the installed ls2c-cuda.so: asked
# for the GPU on a machine without one, it names that file's load or probe
# failure, not a missing module.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f lib/cmake/ls2c/ls2cConfig.cmake include/ls2c/JIT.h include/ls2c/Runtime/Program.h
          bin/ls2c)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
set(configure -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -Dls2c_DIR=${prefix}/lib/cmake/ls2c)
run("configuring examples/cpp against the install" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cpp
    -B ${WORK_DIR}/example ${configure})
run("building examples/cpp" ${CMAKE_COMMAND} --build ${WORK_DIR}/example)
run("compile_model" ${CMAKE_COMMAND} -E env LS2C_CACHE_DIR=${WORK_DIR}/cache
    ${WORK_DIR}/example/compile_model ${SOURCE_DIR}/examples/tiny-gpt.json sm_90
    ${WORK_DIR}/tiny-gpt.ls2b)
if(NOT run_output MATCHES "wrote .*tiny-gpt.ls2b and read it back")
  message(FATAL_ERROR "compile_model printed:\n${run_output}")
endif()
run("the installed ls2c" ${prefix}/bin/ls2c check ${SOURCE_DIR}/examples/tiny-gpt.json)
if(NOT run_output MATCHES "tiny-gpt")
  message(FATAL_ERROR "ls2c check printed:\n${run_output}")
endif()
if(CUDA_MODULE)
  execute_process(COMMAND ${prefix}/bin/ls2c train ${SOURCE_DIR}/examples/tiny-gpt.json
                  --data ${SOURCE_DIR}/examples/data/tinyshakespeare/input.txt --device cuda
                  --out ${WORK_DIR}/cuda-run
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    # A machine with a GPU trains: the module was found and ran.
  elseif(NOT err MATCHES "no usable CUDA GPU: (no NVIDIA driver: )?(cannot load ${prefix}/[^ ]*ls2c-cuda.so|cudaError)")
    message(FATAL_ERROR "the installed ls2c did not load the installed ls2c-cuda.so:\n${err}")
  endif()
endif()
run("configuring a project of every installed header" ${CMAKE_COMMAND}
    -S ${SOURCE_DIR}/test/package/headers -B ${WORK_DIR}/headers ${configure})
run("compiling every installed header alone" ${CMAKE_COMMAND} --build ${WORK_DIR}/headers)
if(EXECUTOR)
  run("configuring a program of ls2c::RuntimeExecutor" ${CMAKE_COMMAND}
      -S ${SOURCE_DIR}/test/package/executor -B ${WORK_DIR}/executor ${configure})
  run("building a program of ls2c::RuntimeExecutor" ${CMAKE_COMMAND} --build ${WORK_DIR}/executor)
endif()
message(STATUS "installed, built examples/cpp with find_package(ls2c) and ran it")
