package testcluster

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// MDSOps returns the leading MDS's call counters by operation ("lookup",
// "create.plus", ...), as its metrics count them. A test compares two
// of them to count the calls a workload made; the cluster's own calls
// (heartbeats, session renewals) are counted too, under their names.
func (c *Cluster) MDSOps() map[string]int {
	c.t.Helper()
	var buf bytes.Buffer
	if err := c.MDS().WriteMetrics(&buf); err != nil {
		c.t.Fatal(err)
	}
	ops := map[string]int{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), `strata_mds_ops_total{op="`)
		if !ok {
			continue
		}
		name, count, ok := strings.Cut(rest, `"} `)
		n, err := strconv.Atoi(count)
		if !ok || err != nil {
			c.t.Fatalf("metrics line %q", sc.Text())
		}
		ops[name] = n
	}
	return ops
}
