package jobtier

import (
	"fmt"
	"strings"

	"github.com/strata-hpc/strata/layout"
)

// Bandwidth and QoS items of the grammar: bw=RATE and qos=CLASS.
const (
	// LicenseUnit is the drain bandwidth one strata_bw license stands for:
	// 1 GiB/s. contrib/slurm/job_submit.lua turns bw=RATE into
	// ceil(RATE/LicenseUnit) licenses.
	LicenseUnit = 1 << 30
	// MaxLicenses is the most strata_bw licenses one job may ask for (the
	// bound job_submit.lua applies to the --comment form too).
	MaxLicenses = 100000
	// MaxBandwidth is the largest bw=: MaxLicenses licenses.
	MaxBandwidth = MaxLicenses * LicenseUnit
)

// JobClasses are the QoS classes a job may ask for with qos=CLASS, in the
// order messages list them. The repair classes (rebuild, scrub,
// rebalance) belong to the data servers and are refused.
var JobClasses = []string{"io", "stage", "drain"}

// repairClasses are the data servers' own classes, named in the message
// that refuses them.
var repairClasses = []string{"rebuild", "scrub", "rebalance"}

// parseBandwidth parses bw=RATE: a size per second, like 2G or 500M/s.
func parseBandwidth(item, val string) (int64, error) {
	rate := strings.TrimSuffix(val, "/s")
	if rate == "" || rate[0] < '0' || rate[0] > '9' {
		return 0, itemErr(item, "bw must be a drain rate like 2G or 500M (bytes per second)")
	}
	n, err := layout.ParseSize(rate)
	if err != nil {
		return 0, itemErr(item, "bw must be a drain rate like 2G or 500M (bytes per second)")
	}
	if n == 0 {
		return 0, itemErr(item, "bw must be more than 0")
	}
	if n > MaxBandwidth {
		return 0, itemErr(item, fmt.Sprintf("bw must be at most %s", layout.FormatSize(MaxBandwidth)))
	}
	return n, nil
}

// parseClass parses qos=CLASS.
func parseClass(item, val string) (string, error) {
	for _, c := range JobClasses {
		if val == c {
			return c, nil
		}
	}
	for _, c := range repairClasses {
		if val == c {
			return "", itemErr(item, fmt.Sprintf("qos=%s is the data servers' own class; a job may ask for %s", c, strings.Join(JobClasses, ", ")))
		}
	}
	return "", itemErr(item, fmt.Sprintf("qos must be one of %s", strings.Join(JobClasses, ", ")))
}

// Licenses is the number of strata_bw licenses the spec's bw= asks for:
// the bandwidth in GiB/s, rounded up; 0 without bw=.
func (s Spec) Licenses() int64 {
	return (s.Bandwidth + LicenseUnit - 1) / LicenseUnit
}
