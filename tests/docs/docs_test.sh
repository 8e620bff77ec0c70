#!/usr/bin/env bash
# The docs say what the repository holds: the example deck in docs/decks.md is inputs/lj-melt.toml byte for
# byte; every table of deck keys (docs/decks.md, docs/fluid.md) has the same columns; every citation of code
# names a file that holds what it cites; the README lists what spotrun does not do yet.
# Usage: docs_test.sh SOURCE_DIR
set -u
src="${1:?usage: docs_test.sh SOURCE_DIR}"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# 1. The example: the fenced toml block after "Example (`inputs/lj-melt.toml`" equals the file.
example=$(awk '/^Example \(`inputs\/lj-melt.toml`/ {found=1; next}
               found && /^```toml$/ {inblock=1; next}
               inblock && /^```$/ {exit}
               inblock {print}' "$src/docs/decks.md")
[[ -n "$example" ]] || fail "docs/decks.md has no example block after 'Example (\`inputs/lj-melt.toml\`'"
if [[ "$example" != "$(cat "$src/inputs/lj-melt.toml")" ]]; then
    fail "the example in docs/decks.md differs from inputs/lj-melt.toml:"
    diff <(printf '%s\n' "$example") "$src/inputs/lj-melt.toml"
fi

# 2. Key tables: every header row whose first cell is "Key" (any case) has the same six columns.
want='| Key | Type | Unit | Default | Allowed | Meaning |'
for f in docs/decks.md docs/fluid.md; do
    n=0
    while IFS=: read -r line text; do
        n=$((n + 1))
        [[ "$text" == "$want" ]] || fail "$f:$line: a key table with other columns: '$text' (want '$want')"
    done < <(grep -n -i '^| *key *|' "$src/$f")
    (( n > 0 )) || fail "$f: no key table found"
done

# 3. Citations of code in the docs name a file and what is in it, "`solvers/md/pair.hpp`: `using PairStyles`"
#    (the file must exist and hold that text), never a line number ("`file.cpp:97`" goes stale with the
#    first edit above it).
for f in "$src"/README.md "$src"/docs/*.md; do
    [[ -f "$f" ]] || continue
    rel="${f#"$src"/}"
    while IFS= read -r hit; do
        fail "$rel: '$hit' cites a line number; cite the file and what is in it instead: \`FILE\`: \`TEXT\`"
    done < <(grep -oE '`[A-Za-z0-9_./-]+\.(cpp|hpp|h|cmake|txt|sh|py|toml|md):[0-9]+`' "$f")
    while IFS=$'\t' read -r path text; do
        if [[ ! -f "$src/$path" ]]; then
            fail "$rel: cites '$path', which the repository does not have"
        elif ! grep -qF -- "$text" "$src/$path"; then
            fail "$rel: cites '$text' in $path, which that file does not hold"
        fi
    done < <(perl -0777 -ne 'while (/`([A-Za-z0-9_.-]+\/[A-Za-z0-9_.\/-]+\.[A-Za-z]+)`:\s+`([^`]+)`/g) { print "$1\t$2\n"; }' "$f")
done
# 4. The README says what spotrun does not do yet.
grep -q '^## What spotrun does not do yet' "$src/README.md" || fail "README.md has no section 'What spotrun does not do yet'"

if (( failed )); then echo "docs: FAILED"; exit 1; fi
echo "docs: the example deck, the key tables, the citations of code and the README's limits agree"
