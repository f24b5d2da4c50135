package slurmrest

import "context"

// License is one of slurm.conf's Licenses= (GET /licenses).
type License struct {
	Name     string `json:"LicenseName"`
	Total    uint32 `json:"Total"`
	Used     uint32 `json:"Used"`
	Free     uint32 `json:"Free"`
	Reserved uint32 `json:"Reserved"`
	Remote   bool   `json:"Remote"`
}

// Licenses lists the cluster's licenses.
func (c *Client) Licenses(ctx context.Context) ([]License, error) {
	var a struct {
		Licenses []License `json:"licenses"`
	}
	if err := c.do(ctx, "GET", "licenses", nil, &a); err != nil {
		return nil, err
	}
	return a.Licenses, nil
}
