#!/usr/bin/env bash
# What ships holds no test hook: the program PROGRAM and every spotrun library it loads (libspotrun_*.so,
# found through ldd) contain no "SPOTRUN_TEST_" string, so no SPOTRUN_TEST_* variable of a user's
# environment can change what spotrun does. Tests get hooks through the test program spotrun-test
# (docs/layout.md, "Test hooks"). Fails naming each file with such a string and the strings found.
#   check_no_test_hooks.sh PROGRAM
set -uo pipefail
program=${1:?usage: check_no_test_hooks.sh PROGRAM}
[[ -x "$program" ]] || { echo "check_no_test_hooks: $program is not an executable file"; exit 1; }
# ldd's output captured first (a reader that stops early would make it fail under pipefail).
deps=$(ldd "$program" 2>&1) || { echo "$deps"; echo "check_no_test_hooks: ldd $program failed"; exit 1; }
missing=$(awk '/libspotrun.*not found/' <<<"$deps")
[[ -z "$missing" ]] || { echo "$missing"; echo "check_no_test_hooks: a spotrun library of $program is not found"; exit 1; }
files=("$program")
while read -r lib; do [[ -n "$lib" ]] && files+=("$lib"); done < <(awk '$1 ~ /^libspotrun/ && $3 ~ /^\// {print $3}' <<<"$deps")
bad=0
for f in "${files[@]}"; do
  found=$(grep -aoE 'SPOTRUN_TEST_[A-Za-z0-9_]*' "$f" | sort -u | tr '\n' ' ')
  if [[ -n "$found" ]]; then
    echo "$f: holds $found"
    bad=$((bad + 1))
  fi
done
if (( bad > 0 )); then
  echo "check_no_test_hooks: FAILED: $bad of ${#files[@]} files hold SPOTRUN_TEST_ strings"
  exit 1
fi
echo "check_no_test_hooks: ${#files[@]} files (${files[*]##*/}): no SPOTRUN_TEST_ string"
