package jobtier

import (
	"errors"
	"path"
	"strconv"
	"strings"
)

// Options are the cluster's rules for tiers, set by the administrator
// (plugstack.conf for submit-time checks, the agent's config on nodes).
type Options struct {
	// AllowedMountPrefix is the directory below which mount= may put a
	// tier. "" refuses every mount= override.
	AllowedMountPrefix string
	// DefaultMount is where a tier is mounted without mount=; %j is the
	// job id.
	DefaultMount string
}

// DefaultOptions refuses mount= overrides and mounts tiers at
// /mnt/strata-tier/%j.
func DefaultOptions() Options {
	return Options{DefaultMount: "/mnt/strata-tier/%j"}
}

// Validate checks the administrator's settings.
func (o Options) Validate() error {
	if o.AllowedMountPrefix != "" {
		if _, err := mountPath(o.AllowedMountPrefix); err != nil || strings.Contains(o.AllowedMountPrefix, "%") {
			return errors.New("storage-tier: allowed mount prefix " + strconv.Quote(o.AllowedMountPrefix) + " must be an absolute path other than /, without %")
		}
	}
	if _, err := mountPath(o.DefaultMount); err != nil {
		return errors.New("storage-tier: default mount " + strconv.Quote(o.DefaultMount) + ": " + err.Error())
	}
	return nil
}

// Check applies the cluster's rules to a parsed spec: a mount= override
// must be strictly below AllowedMountPrefix. Its errors are *SpecError.
func (o Options) Check(s Spec) error {
	if s.Mount == "" {
		return nil
	}
	item := "mount=" + s.Mount
	if o.AllowedMountPrefix == "" {
		return itemErr(item, "this cluster allows no mount path override; the tier is mounted at "+o.DefaultMount+" (%j is the job id)")
	}
	prefix := path.Clean(o.AllowedMountPrefix)
	if !strings.HasPrefix(s.Mount, strings.TrimSuffix(prefix, "/")+"/") {
		return itemErr(item, "mount must be a path below "+prefix+" (the administrator's allowed prefix)")
	}
	return nil
}

// MountPath is where the tier of job jobID is mounted on every node: the
// spec's mount= or DefaultMount, with %j replaced by the job id.
func (o Options) MountPath(s Spec, jobID uint32) string {
	m := s.Mount
	if m == "" {
		m = o.DefaultMount
	}
	return strings.ReplaceAll(m, "%j", strconv.FormatUint(uint64(jobID), 10))
}
