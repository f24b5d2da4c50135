package qos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Bounds of a policy document.
const (
	MaxPolicySize = 256 << 10 // bytes of JSON
	MaxPolicyJobs = 4096      // per-job entries
	MaxJobIDLen   = 64
	MaxWeight     = 1_000_000
)

// ClassPolicy is one class's share of a data server. Rates are bytes a
// second; zero means none (no reservation, no limit).
type ClassPolicy struct {
	// Weight is the class's share of what is left after reservations,
	// relative to the other classes with work queued. Zero: the class is
	// served only when no weighted class has work.
	Weight float64 `json:"weight"`
	// Reservation is served first, whatever the weights, as long as the
	// class has work: a rebuild always advances.
	Reservation int64 `json:"reservation,omitempty"`
	// Limit caps the class even on an idle server.
	Limit int64 `json:"limit,omitempty"`
}

// JobPolicy is one job's share within its class.
type JobPolicy struct {
	Weight float64 `json:"weight,omitempty"` // default 1
	Limit  int64   `json:"limit,omitempty"`  // bytes a second; 0: none
}

// Policy is the cluster's QoS policy document. The MDS keeps it in raft
// and stamps Version; data servers apply it as they get it.
type Policy struct {
	Version uint64                 `json:"version,omitempty"`
	Classes map[string]ClassPolicy `json:"classes"`
	Jobs    map[string]JobPolicy   `json:"jobs,omitempty"`
}

// DefaultPolicy returns the policy of a cluster where none was set:
// applications first, tier traffic next, repair and scrub last.
func DefaultPolicy() Policy {
	return Policy{Classes: map[string]ClassPolicy{
		"io":        {Weight: 8},
		"stage":     {Weight: 2},
		"drain":     {Weight: 2},
		"rebuild":   {Weight: 1},
		"scrub":     {Weight: 1},
		"rebalance": {Weight: 1},
	}}
}

// ParsePolicy decodes and validates a policy document. Unknown fields are
// refused, so a misspelled key is not silently ignored.
func ParsePolicy(b []byte) (Policy, error) {
	var p Policy
	if len(b) > MaxPolicySize {
		return p, fmt.Errorf("%w: %d bytes, at most %d", ErrPolicy, len(b), MaxPolicySize)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return Policy{}, fmt.Errorf("%w: trailing data after the document", ErrPolicy)
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Validate reports the first problem of p.
func (p *Policy) Validate() error {
	if len(p.Classes) == 0 {
		return fmt.Errorf("%w: no classes", ErrPolicy)
	}
	var total float64
	for _, name := range sortedKeys(p.Classes) {
		c := p.Classes[name]
		if _, err := ParseClass(name); err != nil {
			return fmt.Errorf("%w: unknown class %q (known: io, stage, drain, rebuild, scrub, rebalance)", ErrPolicy, name)
		}
		switch {
		case c.Weight < 0 || c.Weight > MaxWeight || c.Weight != c.Weight:
			return fmt.Errorf("%w: class %s: weight %v is not in [0, %d]", ErrPolicy, name, c.Weight, MaxWeight)
		case c.Reservation < 0:
			return fmt.Errorf("%w: class %s: negative reservation %d", ErrPolicy, name, c.Reservation)
		case c.Limit < 0:
			return fmt.Errorf("%w: class %s: negative limit %d", ErrPolicy, name, c.Limit)
		case c.Limit > 0 && c.Reservation > c.Limit:
			return fmt.Errorf("%w: class %s: reservation %d exceeds its limit %d", ErrPolicy, name, c.Reservation, c.Limit)
		}
		total += c.Weight
	}
	if total == 0 {
		return fmt.Errorf("%w: every class has weight 0", ErrPolicy)
	}
	if len(p.Jobs) > MaxPolicyJobs {
		return fmt.Errorf("%w: %d job entries, at most %d", ErrPolicy, len(p.Jobs), MaxPolicyJobs)
	}
	for _, id := range sortedKeys(p.Jobs) {
		j := p.Jobs[id]
		switch {
		case id == "" || len(id) > MaxJobIDLen:
			return fmt.Errorf("%w: job id %q: want 1 to %d characters", ErrPolicy, id, MaxJobIDLen)
		case j.Weight < 0 || j.Weight > MaxWeight || j.Weight != j.Weight:
			return fmt.Errorf("%w: job %s: weight %v is not in [0, %d]", ErrPolicy, id, j.Weight, MaxWeight)
		case j.Limit < 0:
			return fmt.Errorf("%w: job %s: negative limit %d", ErrPolicy, id, j.Limit)
		}
	}
	return nil
}

// class returns the policy of class c (zero weight if the document does
// not name it).
func (p *Policy) class(c Class) ClassPolicy { return p.Classes[c.String()] }

// job returns the policy of job id; weight defaults to 1.
func (p *Policy) job(id string) JobPolicy {
	j, ok := p.Jobs[id]
	if !ok || j.Weight == 0 {
		j.Weight = 1
	}
	return j
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
