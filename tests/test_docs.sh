#!/usr/bin/env bash
# The repository speaks for itself: no file (docs, README, comments, sweeps, scripts, test data)
# points at documents a user does not have (a "shared" folder beside the checkout, a design or
# conventions file outside it, a "seed" notebook or document, an issue by number). The public
# sources are cited instead (README "Sources").
# (DESIGN.md and CONVENTIONS.md are matched in capitals: docs/design.md is ours.)
# It also keeps README.md to 150 lines at most.
# usage: tests/test_docs.sh. Exit 0 pass, 1 fail, 77 skipped (not a git checkout).
set -u
cd "$(dirname "$0")/.."
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "skipped: not a git checkout"; exit 77; }
patterns=(
    '\.\./shared'
    '(^|[^A-Za-z0-9_.-])/?work/shared'
    'shared/(DESIGN|CONVENTIONS|NOTES|README)'
    'DESIGN\.md'
    'CONVENTIONS\.md'
    '[Ss]eed[ -]([Nn]otebook|[Dd]oc|[Dd]ocument|[0-9]{2,})'
    '([Tt]he|[Tt]his|[Oo]ur|[Oo]riginal) [Nn]otebook'
    '(^|[^A-Za-z/])[Ii]ssues? ?#?[0-9]+'
)
fail=0
for p in "${patterns[@]}"; do
    # tracked text files and new ones not ignored; measured rows are data, not prose
    hits=$(git grep -I -n -E --untracked -e "$p" -- . ':!tests/test_docs.sh' ':!results/**/*.jsonl' \
           ':!results/**/*.jsonl.gz' 2>/dev/null)
    if [ -n "$hits" ]; then
        echo "FAIL: a reference to documents a user does not have ('$p'):"
        echo "$hits" | head -20 | sed 's/^/  /'
        fail=1
    fi
done
# links into results/ resolve: README.md, docs/*.md and the READMEs under results/ and tests/data/
# (runs leave results/ as newer reference runs replace them: results/README.md)
if command -v python3 >/dev/null; then
    dangling=$(python3 - <<'PY'
import glob, os, re
files = (["README.md"] + sorted(glob.glob("docs/*.md")) +
         sorted(glob.glob("results/**/README.md", recursive=True)) +
         sorted(glob.glob("tests/data/**/README.md", recursive=True)))
for f in files:
    for i, line in enumerate(open(f, encoding="utf-8"), 1):
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            t = m.group(1).split("#")[0]
            if not t or re.match(r"[a-z]+:", t):
                continue
            if not (re.match(r"(\.\./)*results/", t) or f.startswith(("results/", "tests/data/"))):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(f), t))):
                print("%s:%d: %s" % (f, i, t))
PY
)
    if [ -n "$dangling" ]; then
        echo "FAIL: links into results/ that lead nowhere:"
        echo "$dangling" | head -20 | sed 's/^/  /'
        fail=1
    fi
fi
# the README is a product page, not a lab report: 150 lines at most (details go to docs/)
readme_lines=$(wc -l < README.md)
if [ "$readme_lines" -gt 150 ]; then
    echo "FAIL: README.md has $readme_lines lines, more than 150: move details to docs/"
    fail=1
fi
[ $fail -eq 0 ] && echo "test_docs: ok"
exit $fail
