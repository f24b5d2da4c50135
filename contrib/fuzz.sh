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
		budget=$FUZZTIME
		for attempt in 1 2; do
			log=$(mktemp)
			if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" "$pkg" 2>&1 | tee "$log"; then
				rm -f "$log"
				break
			fi
			# Go 1.26's fuzz coordinator can report the end of a timed
			# -fuzztime itself as a failure (go.dev/issue/75804, fixed in
			# Go 1.27): "context deadline exceeded" with no failing input.
			# That, and only that, is run again with a budget of as many
			# executions as the first run reached, which has no deadline to
			# race; a real finding writes its input under testdata/fuzz and
			# fails at once.
			if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -qE 'Failing input written|panic:' "$log"; then
				execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
				budget="$(( ${execs:-0} > 1000 ? ${execs:-0} : 1000 ))x"
				echo "fuzz: $name: the fuzz coordinator's deadline race (go.dev/issue/75804), no failing input: again for $budget"
				rm -f "$log"
				continue
			fi
			rm -f "$log"
			exit 1
		done
	done
done < <(git ls-files --cached --others --exclude-standard '*_test.go' | xargs grep -lE '^func Fuzz[A-Za-z0-9_]*\(' | sort)
echo "fuzz: $found targets passed"
