#!/usr/bin/env bash
# Keeps docs/SETTINGS.md honest (ctest settings_doc, label cpu; no build needed):
#   1. every "PREFIXD_..." string literal in the library sources (kernels/, worker/, comm/,
#      coordinator/, common/: *.cc *.h *.cu *.cuh, and launch/*.cc) — the environment variables the
#      library and programs read — has a row in the library tables of docs/SETTINGS.md (a table
#      row whose first cell is `PREFIXD_...`, above the "## Test and script settings" heading);
#   2. every variable those tables name is still read by some library source;
#   3. no variable has two rows, and the page's "N of them" count is the number of rows.
# Usage: settings_doc_test.sh [SOURCE_ROOT]   (default: the checkout this script sits in)
# Exit 0 when all hold; 1 with the offending names otherwise.
set -u
export LC_ALL=C

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
doc=$root/docs/SETTINGS.md
if [ ! -f "$doc" ]; then
  echo "settings_doc: $doc not found"
  exit 1
fi

sources=()
for d in kernels worker comm coordinator common; do
  [ -d "$root/$d" ] && sources+=("$root/$d")
done
launch_cc=()
for f in "$root"/launch/*.cc; do
  [ -f "$f" ] && launch_cc+=("$f")
done

# The library's names: string literals that are exactly a PREFIXD_ name (a message such as
# "PREFIXD_X must be ..." is not one, nor is a name in a comment without quotes).
read_names=$(
  {
    if [ "${#sources[@]}" -gt 0 ]; then
      grep -rhoE '"PREFIXD_[A-Z0-9_]+"' --include='*.cc' --include='*.h' --include='*.cu' --include='*.cuh' \
        "${sources[@]}"
    fi
    if [ "${#launch_cc[@]}" -gt 0 ]; then
      grep -hoE '"PREFIXD_[A-Z0-9_]+"' "${launch_cc[@]}"
    fi
  } | tr -d '"' | sort -u
)
if [ -z "$read_names" ]; then
  echo "settings_doc: no \"PREFIXD_...\" literal found under $root (wrong source root?)"
  exit 1
fi

# The page's library rows: first cell `PREFIXD_...`, before the test and script section.
rows=$(awk '/^## Test and script settings/ { exit }
            /^\|[ \t]*`PREFIXD_[A-Z0-9_]+`/ { match($0, /PREFIXD_[A-Z0-9_]+/); print substr($0, RSTART, RLENGTH) }' \
         "$doc" | sort)
documented=$(printf '%s\n' "$rows" | sed '/^$/d' | sort -u)

fail=0
missing=$(comm -23 <(printf '%s\n' "$read_names") <(printf '%s\n' "$documented"))
if [ -n "$missing" ]; then
  echo "settings_doc: read by the library but missing from the tables of docs/SETTINGS.md:"
  printf '  %s\n' $missing
  fail=1
fi
stale=$(comm -13 <(printf '%s\n' "$read_names") <(printf '%s\n' "$documented"))
if [ -n "$stale" ]; then
  echo "settings_doc: in the library tables of docs/SETTINGS.md but read by no library source:"
  printf '  %s\n' $stale
  fail=1
fi
twice=$(printf '%s\n' "$rows" | sed '/^$/d' | uniq -d)
if [ -n "$twice" ]; then
  echo "settings_doc: more than one row in docs/SETTINGS.md:"
  printf '  %s\n' $twice
  fail=1
fi
n_rows=$(printf '%s\n' "$documented" | sed '/^$/d' | wc -l | tr -d ' ')
stated=$(grep -oE '[0-9]+ of them' "$doc" | head -n 1 | grep -oE '^[0-9]+')
if [ -n "$stated" ] && [ "$stated" != "$n_rows" ]; then
  echo "settings_doc: docs/SETTINGS.md says \"$stated of them\" but its tables have $n_rows variables"
  fail=1
fi

if [ "$fail" -eq 0 ]; then
  echo "settings_doc: OK ($n_rows variables read by the library, each with one row in docs/SETTINGS.md)"
fi
exit "$fail"
