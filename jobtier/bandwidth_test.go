package jobtier

import (
	"testing"
)

func TestBandwidthAndQoS(t *testing.T) {
	for _, tc := range []struct {
		in       string
		bw       int64
		qos      string
		licenses int64
		canon    string
	}{
		{"capacity=1G,qos=drain,bw=2G", 2 << 30, "drain", 2, "capacity=1G,bw=2G,qos=drain"},
		{"bw=500M/s", 500 << 20, "", 1, "bw=500M"},
		{"bw=1536M", 1536 << 20, "", 2, "bw=1536M"},
		{"bw=1", 1, "", 1, "bw=1"},
		{"bw=100000G", MaxBandwidth, "", MaxLicenses, "bw=100000G"},
		{"qos=io", 0, "io", 0, "qos=io"},
		{"qos=stage,capacity=1G", 0, "stage", 0, "capacity=1G,qos=stage"},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if s.Bandwidth != tc.bw || s.QoS != tc.qos || s.Licenses() != tc.licenses || s.String() != tc.canon {
			t.Errorf("Parse(%q): bw %d qos %q licenses %d canon %q; want %d %q %d %q",
				tc.in, s.Bandwidth, s.QoS, s.Licenses(), s.String(), tc.bw, tc.qos, tc.licenses, tc.canon)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"bw=fast", `storage-tier: item "bw=fast": bw must be a drain rate like 2G or 500M (bytes per second)`},
		{"bw=-1G", `storage-tier: item "bw=-1G": bw must be a drain rate like 2G or 500M (bytes per second)`},
		{"bw=+1G", `storage-tier: item "bw=+1G": bw must be a drain rate like 2G or 500M (bytes per second)`},
		{"bw=2G/h", `storage-tier: item "bw=2G/h": bw must be a drain rate like 2G or 500M (bytes per second)`},
		{"bw=0", `storage-tier: item "bw=0": bw must be more than 0`},
		{"bw=100001G", `storage-tier: item "bw=100001G": bw must be at most 100000G`},
		{"bw=1G,bw=2G", `storage-tier: item "bw=2G": bw given twice`},
		{"bw=", `storage-tier: item "bw=": bw needs a value after =`},
		{"qos=gold", `storage-tier: item "qos=gold": qos must be one of io, stage, drain`},
		{"qos=rebuild", `storage-tier: item "qos=rebuild": qos=rebuild is the data servers' own class; a job may ask for io, stage, drain`},
		{"qos=io,qos=io", `storage-tier: item "qos=io": qos given twice`},
		{"bandwidth=2G", `storage-tier: item "bandwidth=2G": unknown key "bandwidth" (want capacity, redundancy, unit, mount, bw, qos, stage-in or drain); a drain bandwidth is written bw=RATE, e.g. bw=2G`},
	} {
		_, err := Parse(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}
