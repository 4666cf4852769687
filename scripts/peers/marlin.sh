#!/usr/bin/env bash
# Builds Marlin (IST-DASLab/marlin, the fp16 x int4 GEMM for batches of 1-32) into a shared
# library for the mixed_gemm family's baseline `marlin` (docs/mixed_gemm.md, "Baselines"):
# Marlin's marlin/marlin_cuda_kernel.cu and tune's entry point scripts/peers/marlin_shim.cu,
# compiled with nvcc. Marlin's code is not part of tune: get it with
#   git clone https://github.com/IST-DASLab/marlin
# then
#   scripts/peers/marlin.sh MARLIN_CHECKOUT [OUT.so]    # OUT.so: build/peers/libtune_marlin.so
#   export TUNE_MARLIN_LIB=$PWD/build/peers/libtune_marlin.so
# MARLIN_CHECKOUT is a clone (its work tree) or a bare git repository of it (HEAD's file is used).
# NVCC names the compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc); MARLIN_GENCODE
# replaces the code generated (default: sm_80 and sm_90 machine code from compute_80, and
# compute_80 PTX for later architectures); MARLIN_SM90_SMALL_TILES (below). Exit 0 with the library
# written, 1 on an error, 2 on a usage error.
set -euo pipefail

usage() { echo "usage: scripts/peers/marlin.sh MARLIN_CHECKOUT [OUT.so]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
checkout=$1
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/../../build/peers/libtune_marlin.so}
kernel=marlin/marlin_cuda_kernel.cu

nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "marlin.sh: no nvcc (not on PATH, not $nvcc); set NVCC" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -f "$checkout/$kernel" ]; then
  src=$checkout/$kernel
  rev=$(git -C "$checkout" rev-parse HEAD 2>/dev/null || echo "not a git work tree")
elif git --git-dir="$checkout" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  src=$tmp/marlin_cuda_kernel.cu
  git --git-dir="$checkout" show "HEAD:$kernel" >"$src" 2>/dev/null ||
    { echo "marlin.sh: $checkout: HEAD has no $kernel (expected a clone of IST-DASLab/marlin)" >&2; exit 1; }
  rev=$(git --git-dir="$checkout" rev-parse HEAD)
else
  echo "marlin.sh: $checkout: no $kernel and not a git repository (expected a clone of" \
       "https://github.com/IST-DASLab/marlin)" >&2
  exit 1
fi
grep -q '^int marlin_cuda(' "$src" ||
  { echo "marlin.sh: $src defines no marlin_cuda() host function (a Marlin this script does not know)" >&2; exit 1; }

# ptxas 13 miscompiles the sm_90 code of Marlin's 128 x 128 kernel with groups of 128 (the one it
# takes at m <= 16): the shim then asks for its 64 x 256 tiles there on sm_90 devices
# (marlin_shim.cu says why). MARLIN_SM90_SMALL_TILES=0 or 1 decides instead of the version.
release=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p')
small_tiles=${MARLIN_SM90_SMALL_TILES:-$([ "${release:-0}" -ge 13 ] && echo 1 || echo 0)}
case $small_tiles in 0|1) ;; *) echo "marlin.sh: MARLIN_SM90_SMALL_TILES must be 0 or 1, not '$small_tiles'" >&2; exit 2;; esac
# shellcheck disable=SC2206 # MARLIN_GENCODE is a list of options
gencode=(${MARLIN_GENCODE:--gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=sm_90 -gencode arch=compute_80,code=compute_80})
mkdir -p "$(dirname "$out")"
echo "marlin.sh: Marlin $rev ($src), nvcc release ${release:-unknown}, 64 x 256 tiles at m <= 16 on sm_90: $([ "$small_tiles" = 1 ] && echo yes || echo no) -> $out"
# --expt-relaxed-constexpr: Marlin's kernels call its constexpr host function ceildiv, which
# PyTorch's extension build (Marlin's setup.py) allows with this flag. Marlin's own warnings are
# silenced: 39 and 179 (a division and a remainder by group_blocks / thread_k_blocks in branches
# that one group per column never takes) and 177 (an unused variable).
"$nvcc" -O3 -std=c++17 --expt-relaxed-constexpr -diag-suppress 39,177,179 -shared -Xcompiler -fPIC \
  -DTUNE_MARLIN_SM90_SMALL_TILES="$small_tiles" "${gencode[@]}" \
  -o "$tmp/lib.so" "$src" "$here/marlin_shim.cu"
mv "$tmp/lib.so" "$out"
echo "marlin.sh: built $out; enable the baseline with: export TUNE_MARLIN_LIB=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
