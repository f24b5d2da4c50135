package admin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// healthBody is the JSON of GET /v1/health.
type healthBody struct {
	Status        string `json:"status"` // ok, unavailable
	Reason        string `json:"reason,omitempty"`
	ID            string `json:"id,omitempty"`
	Role          string `json:"role,omitempty"`
	Leader        string `json:"leader,omitempty"`
	Term          uint64 `json:"term,omitempty"`
	DataServersUp int    `json:"data_servers_up"`
	DataServers   int    `json:"data_servers"`
}

// health answers 200 when the MDS serves the namespace (it is the leader,
// or a follower that knows one) and 503 with a reason otherwise.
func (s *Server) health(ctx context.Context) (reply, error) {
	c, err := s.clusterState(ctx)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrNotServing, err)
		return jsonReply(statusOf(err), healthBody{Status: "unavailable", Reason: err.Error()}), nil
	}
	b := healthBody{Status: "ok", ID: c.ID, Role: c.Role, Leader: c.Leader, Term: c.Term, DataServers: len(c.DataSvrs)}
	for _, d := range c.DataSvrs {
		if d.State == "up" {
			b.DataServersUp++
		}
	}
	if c.Role != "leader" && c.Leader == "" {
		err := fmt.Errorf("%w: no leader (this mds is %s)", ErrNotServing, c.Role)
		b.Status, b.Reason = "unavailable", err.Error()
		return jsonReply(statusOf(err), b), nil
	}
	return jsonReply(http.StatusOK, b), nil
}

// clusterBody is the JSON of GET /v1/cluster.
type clusterBody struct {
	ID            string       `json:"id"`
	Role          string       `json:"role"`
	Term          uint64       `json:"term"`
	Leader        string       `json:"leader"`
	AppliedIndex  uint64       `json:"applied_index"`
	Inodes        uint64       `json:"inodes"`
	DefaultLayout string       `json:"default_layout"`
	StartedAt     *time.Time   `json:"started_at,omitempty"`
	DataServers   []dataServer `json:"data_servers"`
}

// dataServer is one data server in clusterBody. Sizes are bytes.
type dataServer struct {
	ID       string     `json:"id"`
	Addr     string     `json:"addr"`
	Node     string     `json:"node"`
	Capacity uint64     `json:"capacity"`
	Free     uint64     `json:"free"`
	Load     float64    `json:"load"`
	State    string     `json:"state"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
}

// cluster answers the MDS's role and its data server registry.
func (s *Server) cluster(ctx context.Context) (reply, error) {
	c, err := s.clusterState(ctx)
	if err != nil {
		return reply{}, err
	}
	b := clusterBody{
		ID:            c.ID,
		Role:          c.Role,
		Term:          c.Term,
		Leader:        c.Leader,
		AppliedIndex:  c.Applied,
		Inodes:        c.Inodes,
		DefaultLayout: c.Default,
		StartedAt:     unixTime(c.StartedAt),
		DataServers:   make([]dataServer, 0, len(c.DataSvrs)),
	}
	for _, d := range c.DataSvrs {
		b.DataServers = append(b.DataServers, dataServer{
			ID: d.ID, Addr: d.Addr, Node: d.Node, Capacity: d.Capacity, Free: d.Free,
			Load: d.Load, State: d.State, LastSeen: unixTime(d.LastSeen),
		})
	}
	return jsonReply(http.StatusOK, b), nil
}

// metrics answers the Source's metrics in the Prometheus text format.
func (s *Server) metrics(context.Context) (reply, error) {
	var b bytes.Buffer
	if err := s.src.WriteMetrics(&b); err != nil {
		return reply{}, fmt.Errorf("admin: metrics: %w", err)
	}
	return reply{status: http.StatusOK, ctype: metricsType, body: b.Bytes()}, nil
}

func (s *Server) clusterState(ctx context.Context) (*rpc.ClusterResp, error) {
	c, err := s.src.Cluster(ctx)
	if err == nil && c == nil {
		err = errNoState
	}
	return c, err
}

// unixTime converts unix nanoseconds to a UTC time; 0 is "unknown".
func unixTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

// startScrub serves POST /v1/scrub.
func (s *Server) startScrub(ctx context.Context) (reply, error) {
	if s.acts == nil {
		return reply{}, fmt.Errorf("%w: /v1/scrub", ErrNotFound)
	}
	if err := s.acts.StartScrub(ctx); err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusAccepted, map[string]string{"scrub": "started"}), nil
}

// drain serves POST (drain) and DELETE (undrain) /v1/drain/{id}.
func (s *Server) drain(cancel bool) handler {
	return func(ctx context.Context) (reply, error) {
		if s.acts == nil {
			return reply{}, fmt.Errorf("%w: /v1/drain", ErrNotFound)
		}
		id := pathParam(ctx)
		if err := s.acts.Drain(ctx, id, cancel); err != nil {
			return reply{}, err
		}
		return jsonReply(http.StatusOK, map[string]any{"ds": id, "draining": !cancel}), nil
	}
}
