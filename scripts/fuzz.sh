#!/usr/bin/env bash
# Run every Go fuzz target of the module for FUZZTIME each (default 10s): `make test` runs a
# short pass, `make fuzz` a long one (FUZZTIME=5m). Targets are found by reading the test
# files, so a new Fuzz function is run without being listed here. A crasher fails the run;
# Go writes it under the package's testdata/fuzz/ — commit it as a seed with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}
GO=${GO:-go}
fail=0
while IFS= read -r line; do
  file=${line%%:*}
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"${line#*:}")
  pkg=$(dirname "$file")
  echo "fuzz $pkg $name ($FUZZTIME)"
  if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" >/tmp/mcp-fuzz.$$ 2>&1; then
    cat /tmp/mcp-fuzz.$$
    fail=1
  else
    tail -n 1 /tmp/mcp-fuzz.$$
  fi
done < <(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./bin/' | sort)
rm -f /tmp/mcp-fuzz.$$
exit $fail
