#!/usr/bin/env bash
# kernels_src/mixed_gemm_wgmma_ops.cuh is generated: scripts/gen_wgmma_ops.py is run into a
# temporary file, and the committed header must be exactly what it writes, so that an edit of the
# header alone, or of the script without regenerating, fails here.
# usage: tests/test_wgmma_ops.sh. Exit 0 pass, 1 fail, 77 skipped (no python3).
set -u
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
header=kernels_src/mixed_gemm_wgmma_ops.cuh
if ! python3 scripts/gen_wgmma_ops.py "$tmp/ops.cuh"; then
    echo "FAIL: scripts/gen_wgmma_ops.py failed"
    exit 1
fi
if ! diff -u "$header" "$tmp/ops.cuh" >"$tmp/diff"; then
    echo "FAIL: $header is not what scripts/gen_wgmma_ops.py writes (run it from the repository"
    echo "root and commit the header); the difference, committed -> generated:"
    head -40 "$tmp/diff" | sed 's/^/  /'
    exit 1
fi
echo "ok: $header is what scripts/gen_wgmma_ops.py writes"
