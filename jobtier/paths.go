package jobtier

import (
	"errors"
	"path"
	"strings"
	"unicode"
)

// checkChars refuses what a path in a spec may not hold: whitespace and
// control characters (a spec travels through Slurm's environment and one
// JSON line), and a comma (it separates items).
func checkChars(what, p string) error {
	for _, r := range p {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == ',' {
			return errors.New(what + " must not contain spaces, control characters or commas")
		}
	}
	return nil
}

// hasDotDot reports whether the slash-separated path p has a ".." element.
func hasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// parseLocation parses a path outside the tier: strata:/PATH (the global
// namespace) or /PATH (the node's file system).
func parseLocation(what, v string) (Location, error) {
	l := Location{Path: v}
	if rest, ok := strings.CutPrefix(v, strataPrefix); ok {
		l = Location{Strata: true, Path: rest}
	}
	if !strings.HasPrefix(l.Path, "/") {
		return Location{}, errors.New(what + " must be strata:/PATH (the global namespace) or an absolute /PATH")
	}
	if err := checkChars(what, l.Path); err != nil {
		return Location{}, err
	}
	if hasDotDot(l.Path) {
		return Location{}, errors.New(what + " must not contain ..")
	}
	l.Path = path.Clean(l.Path)
	return l, nil
}

// parseTierPath parses a path inside the tier, relative or /-rooted (both
// mean the same), into its clean relative form ("." for the root).
func parseTierPath(what, v string) (string, error) {
	if err := checkChars(what, v); err != nil {
		return "", err
	}
	if strings.Contains(v, ":") {
		return "", errors.New(what + " must not contain a colon")
	}
	if hasDotDot(v) {
		return "", errors.New(what + " must stay inside the tier: no ..")
	}
	p := strings.TrimPrefix(path.Clean("/"+v), "/")
	if p == "" {
		p = "."
	}
	return p, nil
}

// tierPathString formats a clean tier-relative path /-rooted, as the
// grammar writes it.
func tierPathString(p string) string {
	if p == "." {
		return "/"
	}
	return "/" + p
}

// parseStageIn parses SRC:DST. SRC may itself hold a colon (strata:/x), so
// the value is split at its last colon; DST may not hold one.
func parseStageIn(v string) (StageIn, error) {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 || i == len(v)-1 || v[:i]+":" == strataPrefix {
		return StageIn{}, errors.New("want stage-in=SRC:DST, e.g. stage-in=strata:/proj/data:/in")
	}
	src, dst := v[:i], v[i+1:]
	l, err := parseLocation("stage-in source", src)
	if err != nil {
		return StageIn{}, err
	}
	d, err := parseTierPath("stage-in destination", dst)
	if err != nil {
		return StageIn{}, err
	}
	return StageIn{Src: l, Dst: d}, nil
}

// parseDrain parses GLOB:DEST. DEST may hold a colon (strata:/x), so the
// value is split at its first colon; GLOB may not hold one.
func parseDrain(v string) (Drain, error) {
	glob, dest, ok := strings.Cut(v, ":")
	if !ok || glob == "" || dest == "" {
		return Drain{}, errors.New("want drain=GLOB:DEST, e.g. drain=ckpt/*:strata:/proj/run42")
	}
	g, err := parseGlob(glob)
	if err != nil {
		return Drain{}, err
	}
	l, err := parseLocation("drain destination", dest)
	if err != nil {
		return Drain{}, err
	}
	return Drain{Glob: g, Dest: l}, nil
}

// mountPath checks a mount= value: an absolute clean path, with %j (the
// job id) as its only % sequence.
func mountPath(v string) (string, error) {
	if !strings.HasPrefix(v, "/") {
		return "", errors.New("mount must be an absolute path like /mnt/strata-tier/%j")
	}
	if err := checkChars("mount", v); err != nil {
		return "", err
	}
	if hasDotDot(v) {
		return "", errors.New("mount must not contain ..")
	}
	if strings.Contains(strings.ReplaceAll(v, "%j", ""), "%") {
		return "", errors.New("mount may contain %j (the job id) but no other % sequence")
	}
	p := path.Clean(v)
	if p == "/" {
		return "", errors.New("mount must not be /")
	}
	return p, nil
}
