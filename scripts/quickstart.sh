#!/usr/bin/env bash
# Quick start: install missing build dependencies (apt-get), build tune into build/, then run
# `build/tune sweeps/sparq.json`; without a GPU, compile every variant of that sweep instead.
# scripts/test.sh sources this file for need/install_missing/find_cuda/configure_and_build.
set -euo pipefail

missing=()
# need PACKAGE TEST...: the apt package PACKAGE is missing unless the command TEST succeeds.
need() { "${@:2}" >/dev/null 2>&1 || [[ " ${missing[*]} " == *" $1 "* ]] || missing+=("$1"); }

# Installs the missing packages (with sudo when not root), or prints the install line and exits 1.
install_missing() {
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo=() line="apt-get install -y ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || { sudo=(sudo); line="sudo $line"; }
  if command -v apt-get >/dev/null && { [ ${#sudo[@]} -eq 0 ] || command -v sudo >/dev/null; }; then
    echo "Installing ${missing[*]} with apt-get."
    if "${sudo[@]}" apt-get update -q &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; then
      missing=()
      return 0
    fi
  fi
  echo "Missing ${missing[*]}; install them with: $line" >&2
  exit 1
}

# Lets CMake find the CUDA toolkit when nvcc is not on PATH.
find_cuda() {
  command -v nvcc >/dev/null && return 0
  local root=${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}
  if [ ! -x "$root/bin/nvcc" ]; then
    echo "No CUDA toolkit found (no nvcc on PATH nor in $root/bin); install it or set CUDAToolkit_ROOT." >&2
    exit 1
  fi
  export CUDAToolkit_ROOT=$root PATH=$root/bin:$PATH
}

# configure_and_build [CMAKE_ARGS...]: RelWithDebInfo build in build/.
configure_and_build() {
  find_cuda
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  cmake --build build -j "$(nproc)"
}

base_deps() {
  need build-essential command -v cc
  need build-essential command -v make
  need cmake command -v cmake
  need pkg-config command -v pkg-config
  need libjansson-dev pkg-config --exists jansson
  need zlib1g-dev pkg-config --exists zlib
  need libsqlite3-dev pkg-config --exists sqlite3
}

main() {
  cd "$(dirname "$0")/.."
  base_deps
  install_missing
  configure_and_build -DTUNE_BUILD_TESTS=OFF -DTUNE_WERROR=OFF
  local rc=0 out
  out=$(build/tune devices 2>&1) || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "No GPU on this machine, so instead of running sweeps/sparq.json this compiles every variant of it (build/tune compile sweeps/sparq.json; build/tune compile alone compiles every sweep in sweeps/, which takes long on few cores)."
    build/tune compile sweeps/sparq.json
  elif [ "$rc" -eq 0 ]; then
    echo "$out"
    build/tune sweeps/sparq.json
  else
    echo "$out" >&2
    exit "$rc"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
