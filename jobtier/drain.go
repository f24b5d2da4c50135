package jobtier

import (
	"errors"
	"path"
	"strings"
)

// maxDoubleStars bounds the "**" elements of one glob (matching is
// exponential in their number).
const maxDoubleStars = 4

// Drain is one drain=GLOB:DEST rule: files of the tier whose path matches
// Glob are copied to Dest.
type Drain struct {
	// Glob is a tier-relative pattern without a leading slash: path.Match
	// syntax per element, plus "**" as a whole element for any number of
	// directories (zero or more).
	Glob string
	Dest Location
}

// String formats the item's value, GLOB:DEST.
func (d Drain) String() string { return d.Glob + ":" + d.Dest.String() }

// parseGlob checks a drain glob and returns its clean relative form.
func parseGlob(g string) (string, error) {
	if err := checkChars("drain glob", g); err != nil {
		return "", err
	}
	if hasDotDot(g) {
		return "", errors.New("drain glob must stay inside the tier: no ..")
	}
	g = strings.TrimPrefix(path.Clean("/"+g), "/")
	if g == "" {
		return "", errors.New("drain glob must name files in the tier, like ckpt/* or **/*.h5")
	}
	stars := 0
	for _, e := range strings.Split(g, "/") {
		if e == "**" {
			stars++
			continue
		}
		if strings.Contains(e, "**") {
			return "", errors.New("** must be a whole path element, like ckpt/**/*.pt")
		}
		if _, err := path.Match(e, ""); err != nil {
			return "", errors.New("drain glob has a malformed pattern in " + e + " (see Go's path.Match: *, ?, [a-z], \\ escapes)")
		}
	}
	if stars > maxDoubleStars {
		return "", errors.New("drain glob has more than 4 ** elements")
	}
	return g, nil
}

// Match reports whether the tier-relative file path name (clean, without
// a leading slash) matches the rule's glob.
func (d Drain) Match(name string) bool {
	return matchElems(strings.Split(d.Glob, "/"), strings.Split(name, "/"))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// Target is where the rule drains the tier file name: Dest joined with
// name's path below the glob's literal leading directories. For
// drain=ckpt/*:strata:/proj/run42, ckpt/step-100 goes to
// strata:/proj/run42/step-100; for drain=**/*.h5:/out, a/b.h5 goes to
// /out/a/b.h5. ok is false when the rule does not match name.
func (d Drain) Target(name string) (dest Location, ok bool) {
	if !d.Match(name) {
		return Location{}, false
	}
	rel := name
	for _, e := range strings.Split(d.Glob, "/") {
		head, rest, more := strings.Cut(rel, "/")
		if !more || isPattern(e) || head != e {
			break
		}
		rel = rest
	}
	return Location{Strata: d.Dest.Strata, Path: path.Join(d.Dest.Path, rel)}, true
}

// isPattern reports whether a glob element has a metacharacter.
func isPattern(e string) bool { return strings.ContainsAny(e, `*?[\`) }

// DrainTarget is where the spec's rules drain the tier file name: the
// first matching rule decides. ok is false when no rule matches.
func (s Spec) DrainTarget(name string) (dest Location, ok bool) {
	for _, d := range s.Drain {
		if dest, ok := d.Target(name); ok {
			return dest, true
		}
	}
	return Location{}, false
}
