#!/usr/bin/env bash
# The repository speaks for itself: no file (docs, README, comments, sweeps, scripts, test data)
# points at documents a user does not have (a "shared" folder beside the checkout, a design or
# conventions file outside it, a "seed" notebook or document, an issue by number). The public
# sources are cited instead (README "Sources").
# (DESIGN.md and CONVENTIONS.md are matched in capitals: docs/design.md is ours.)
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
[ $fail -eq 0 ] && echo "test_docs: ok"
exit $fail
