# shellcheck shell=bash
# Sourced by the scripts that prepare a folder for the GPU machine (scripts/gpu-bench.sh,
# gpu-dp-bench.sh, gpu-lm-bench.sh): what each of them did the same way.

# carry_build TARGET...: BUILD ($LS2C_BUILD_DIR, default build) with ls2c and the TARGETs built
# (not with LS2C_NO_BUILD=1: the binaries as they are), and PY, the Python that prepares (the
# project's .venv when there is one).
# shellcheck disable=SC2034 # BUILD and PY are the sourcing script's
carry_build() {
  BUILD=${LS2C_BUILD_DIR:-build}
  [ "${LS2C_NO_BUILD:-0}" = 1 ] || cmake --build "$BUILD" --target ls2c "$@"
  PY=python3
  [ -x .venv/bin/python ] && PY=.venv/bin/python
  return 0
}

# carry_start DIR: an empty DIR (with bin/ and lib/), kept out of git through the clone's
# info/exclude unless .gitignore already names it.
carry_start() {
  local dir=$1 exclude
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib"
  grep -qx "/$dir/" .gitignore 2>/dev/null && return 0
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$dir/" "$exclude" 2>/dev/null || echo "/$dir/" >> "$exclude"
}

# carry_tool BIN DIR: the MLIR-free tool BIN into DIR/bin and, into DIR/lib, the non-CUDA,
# non-base libraries the tools link that the GPU machine lacks: libfmt, and libsentencepiece
# (ls2c-gpu-train tokenizes parallel text as ls2c train does).
carry_tool() {
  local bin=$1 dir=$2 lib
  cp "$bin" "$dir/bin/"
  for lib in $(ldd "$dir/bin/$(basename "$bin")" | awk '/libfmt|libsentencepiece/ {print $3}'); do
    cp -L "$lib" "$dir/lib/"
  done
}

# carry_size_check DIR LIMIT_MIB WHAT: prints DIR's size; exit 1 when it reaches LIMIT_MIB
# (WHAT says whose limit).
carry_size_check() {
  local dir=$1 limit=$2 what=$3 size
  size=$(du -sm "$dir" | cut -f1)
  du -sh "$dir"
  if [ "$size" -ge "$limit" ]; then
    echo "error: $dir is $size MiB, over the $limit MiB $what" >&2
    exit 1
  fi
}
