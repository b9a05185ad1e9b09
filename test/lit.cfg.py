# lit configuration for ls2c: FileCheck tests of the dialect, passes and tools.
import ctypes
import os
import shutil
import sys

import lit.formats

config.name = "ls2c"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ls2c_binary_dir, "test")
# Fixtures (JSON descriptions, expected outputs) live beside the tests they serve.
config.excludes = ["Inputs", "unit", "lit.cfg.py", "CMakeLists.txt"]

path = os.pathsep.join(config.ls2c_tools_dirs + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
config.substitutions.append(("%python", sys.executable))
# The project's virtualenv (scripts/setup.sh) with the oracle's JAX, NumPy and safetensors.
config.substitutions.append(("%oracle_python", os.environ.get(
    "LS2C_ORACLE_PYTHON", os.path.join(config.ls2c_source_dir, ".venv", "bin", "python"))))
config.substitutions.append(("%ls2c_src_root", config.ls2c_source_dir))
config.substitutions.append(("%ls2c_obj_root", config.ls2c_binary_dir))
config.substitutions.append(("%examples", os.path.join(config.ls2c_source_dir, "examples")))
# Real data from the shared folder beside the checkout (../shared/data, or
# $LS2C_SHARED_DATA_DIR; its README names each set's source and license):
# tests that read Multi30k or WikiText-2 need `REQUIRES: shared-data`, and
# are reported unsupported where it is missing (a user's own clone).
shared_data = os.environ.get("LS2C_SHARED_DATA_DIR") or os.path.join(
    config.ls2c_source_dir, "..", "shared", "data")
config.substitutions.append(("%shared_data", shared_data))
if all(os.path.isdir(os.path.join(shared_data, d)) for d in ("multi30k", "wikitext-2")):
    config.available_features.add("shared-data")

# Fashion-MNIST from Debian's dataset-fashion-mnist (scripts/setup.sh installs it).
config.substitutions.append(("%fashion", "/usr/share/datasets/fashion-mnist"))
if os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
    config.available_features.add("fashion-mnist")

# Tests that compile kernels (NVRTC, no device) need `REQUIRES: nvrtc`.
if config.have_cuda:
    config.available_features.add("nvrtc")
# ls2c-gpu-train links the CUDA driver; its refusals come before any GPU call,
# so tests of them (`REQUIRES: gpu-tools-load`) run where no driver is
# installed through the toolkit's stub libcuda.so, named libcuda.so.1 in
# %cuda_stub_env's LD_LIBRARY_PATH.
cuda_stub_env = ""
if config.have_cuda:
    try:
        ctypes.CDLL("libcuda.so.1")
        config.available_features.add("gpu-tools-load")
    except OSError:
        stub = os.path.join(config.cuda_library_dir, "stubs", "libcuda.so")
        if os.path.exists(stub):
            stub_dir = os.path.join(config.test_exec_root, "cuda-stub")
            os.makedirs(stub_dir, exist_ok=True)
            link = os.path.join(stub_dir, "libcuda.so.1")
            if not os.path.lexists(link):
                os.symlink(stub, link)
            cuda_stub_env = "env LD_LIBRARY_PATH=" + os.pathsep.join(
                [stub_dir] + [p for p in [os.environ.get("LD_LIBRARY_PATH", "")] if p])
            config.available_features.add("gpu-tools-load")
config.substitutions.append(("%cuda_stub_env", cuda_stub_env))
# The toolkit's stub driver: a shared library with no ls2c entry point.
if config.have_cuda:
    config.substitutions.append(
        ("%cuda_stub_lib", os.path.join(config.cuda_library_dir, "stubs", "libcuda.so")))
# GPU tests under test/gpu need `REQUIRES: cuda`: a toolkit to build with and a device to run on.
if config.have_cuda and shutil.which("nvidia-smi"):
    config.available_features.add("cuda")
