#!/usr/bin/env bash
# Pack what a GPU machine needs to run a build made here into one xz tarball (the device's
# working-tree limit is 64 MiB): build/tune and the named test binaries stripped, build/devlibs
# (Jansson and, for the tests, Criterion and the libraries it loads, which the GPU machine lacks),
# and kernels_src/, sweeps/, scripts/, data/ (the GPU datasheet table) and tests/data/ of this
# checkout.
#   scripts/device_pack.sh OUT.tar.xz [build/test_x ...]
# On the GPU machine:
#   mkdir -p /tmp/p && tar xJf OUT.tar.xz -C /tmp/p && cd /tmp/p &&
#   export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64 TUNE_KERNELS_DIR=$PWD/kernels_src
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
case $out in /*) ;; *) out=$PWD/$out ;; esac
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/devlibs"
for b in build/tune "$@"; do strip -o "$stage/$b" "$b"; done
# the shared libraries of those binaries that are not the C library's, the compiler's or CUDA's
# (Criterion pulls in libgit2 and through it mbed TLS, Kerberos and more: every one of them)
for b in build/tune "$@"; do ldd "$b"; done | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|librt|libdl|libresolv|libgcc_s|libgomp|libstdc\+\+)\.so|/cuda' |
    while read -r lib; do cp -L "$lib" "$stage/build/devlibs/"; done
cp -r kernels_src sweeps scripts data "$stage/"
mkdir -p "$stage/tests" && cp -r tests/data "$stage/tests/"
mkdir -p "$(dirname "$out")"
tar cJf "$out" -C "$stage" .
echo "$out: $(du -h "$out" | cut -f1)"
