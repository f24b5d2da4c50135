#!/usr/bin/env bash
# Runs every fuzz target in the repository (any `func FuzzXxx(` in a
# _test.go file) for FUZZTIME each, one package and target at a time, so
# that new targets are picked up without editing this file.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}

found=0
while IFS= read -r file; do
	pkg=./$(dirname "$file")
	for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]*\(' "$file" | sed -e 's/^func //' -e 's/($//'); do
		found=$((found + 1))
		echo "fuzz: $pkg $name ($FUZZTIME)"
		"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"
	done
done < <(git ls-files --cached --others --exclude-standard '*_test.go' | xargs grep -lE '^func Fuzz[A-Za-z0-9_]*\(' | sort)
echo "fuzz: $found targets passed"
