package slurmrest

import "context"

// Node is the part of a node's record (GET /nodes) Strata uses.
type Node struct {
	Name       string   `json:"name"`
	Hostname   string   `json:"hostname"`
	Address    string   `json:"address"`
	State      string   `json:"state"` // idle, mixed, allocated, down...
	StateFlags []string `json:"state_flags"`
	Reason     string   `json:"reason"`
	CPUs       uint32   `json:"cpus"`
	AllocCPUs  uint32   `json:"alloc_cpus"`
	Partitions []string `json:"partitions"`
}

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var a struct {
		Nodes []Node `json:"nodes"`
	}
	if err := c.do(ctx, "GET", "nodes", nil, &a); err != nil {
		return nil, err
	}
	return a.Nodes, nil
}
