# Sourced by the scripts/device_*.sh scripts on a GPU machine that runs a build carried from the
# development machine: the repository root as the working folder, $OUT (default /tmp/tune-out)
# made, and build/devlibs (the libraries that machine lacks: Jansson, SQLite, Criterion) and the
# CUDA libraries on the loader's path. Each script sets its own TUNE_CACHE_DIR.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
OUT=${OUT:-/tmp/tune-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/devlibs:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
