#!/usr/bin/env bash
# The whole test suite: install missing dependencies (as scripts/quickstart.sh, plus Criterion),
# build tune and the tests into build/ with warnings as errors, run ctest from the repo root.
# Tests that need a GPU skip themselves without one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/quickstart.sh

base_deps
need libcriterion-dev pkg-config --exists criterion
# the plotting scripts' test (tests/test_plots.sh) runs on Debian's python3 with these
need python3-matplotlib /usr/bin/python3 -c "import matplotlib"
need python3-pandas /usr/bin/python3 -c "import pandas"
# the dashboard's pages are checked in headless Chromium (tests/test_dashboard_browser.sh)
need chromium command -v chromium
install_missing
configure_and_build -DTUNE_BUILD_TESTS=ON -DTUNE_WERROR=ON
rc=0
ctest --test-dir build --output-on-failure -j "$(nproc)" || rc=$?
# ctest hides the output of passing tests: show which tests skipped themselves, and why
skips=$(grep -h '^\[SKIP\]' build/Testing/Temporary/LastTest.log 2>/dev/null || true)
if [ -n "$skips" ]; then
  echo "Skipped tests:"
  echo "$skips"
fi
exit "$rc"
