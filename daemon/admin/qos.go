package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/qos"
)

// QoSSource is the MDS's QoS policy and counters (mds.Server).
type QoSSource interface {
	QoSPolicy(ctx context.Context) (*rpc.QoSPolicyResp, error)
	SetQoSPolicy(ctx context.Context, doc []byte) (*rpc.QoSPolicyResp, error)
	QoSStatus(ctx context.Context) (*rpc.QoSStatusResp, error)
}

// request is what a handler may read of its request: the body (a copy)
// and the Authorization header.
type request struct {
	body []byte
	auth string
}

type requestKey struct{}

func requestOf(ctx context.Context) request {
	r, _ := ctx.Value(requestKey{}).(request)
	return r
}

// getQoSPolicy answers GET /v1/qos/policy: the policy document in force.
func (s *Server) getQoSPolicy(ctx context.Context) (reply, error) {
	if s.qos == nil {
		return reply{}, fmt.Errorf("%w: no qos source", ErrNotFound)
	}
	p, err := s.qos.QoSPolicy(ctx)
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, ctype: jsonType, body: policyBody(p)}, nil
}

// policyBody is the stored document with its version stamped in.
func policyBody(p *rpc.QoSPolicyResp) []byte {
	var doc qos.Policy
	if err := json.Unmarshal(p.Doc, &doc); err != nil {
		return p.Doc
	}
	doc.Version = p.Version
	b, err := json.MarshalIndent(&doc, "", "  ")
	if err != nil {
		return p.Doc
	}
	return append(b, '\n')
}

// putQoSPolicy answers PUT /v1/qos/policy: the body replaces the policy.
// A bad document is a 400 with the reason; the policy in force stays.
func (s *Server) putQoSPolicy(ctx context.Context) (reply, error) {
	if s.qos == nil {
		return reply{}, fmt.Errorf("%w: no qos source", ErrNotFound)
	}
	// dispatch checked the caller is an admin (auth.go).
	doc := requestOf(ctx).body
	if _, err := qos.ParsePolicy(doc); err != nil {
		return reply{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	p, err := s.qos.SetQoSPolicy(ctx, doc)
	var re *rpc.Error
	if errors.As(err, &re) && syscall.Errno(re.Errno) == syscall.EINVAL {
		return reply{}, fmt.Errorf("%w: %s", ErrBadRequest, re.Msg)
	}
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, ctype: jsonType, body: policyBody(p)}, nil
}

// qosServed is one job's bytes in one class at one data server.
type qosServed struct {
	Server string `json:"server"`
	Class  string `json:"class"`
	Job    string `json:"job"`
	Bytes  uint64 `json:"served_bytes"`
}

// qosBody is the JSON of GET /v1/qos.
type qosBody struct {
	PolicyVersion uint64            `json:"policy_version"`
	Servers       []qosServerBody   `json:"servers"`
	Classes       map[string]uint64 `json:"classes"` // served bytes, summed over the servers
	Jobs          map[string]uint64 `json:"jobs"`    // served bytes, summed over servers and classes
	Served        []qosServed       `json:"served"`
	// The bandwidth ledger (docs/qos.md): the capacity of the data
	// servers that are up, demand and use per class and job, drains.
	Capacity uint64         `json:"capacity_bytes_per_second"`
	Traffic  []qosTraffic   `json:"traffic"`
	Drains   []qosDrainBody `json:"drains"`
}

// qosMeasure is what a data server measured over its last heartbeat
// interval, in bytes per second.
type qosMeasure struct {
	Capacity    uint64  `json:"capacity_bytes_per_second"`
	Configured  bool    `json:"capacity_configured"`
	Device      string  `json:"device"`
	DiskRead    uint64  `json:"disk_read_bytes_per_second"`
	DiskWrite   uint64  `json:"disk_write_bytes_per_second"`
	NetRx       uint64  `json:"net_rx_bytes_per_second"`
	NetTx       uint64  `json:"net_tx_bytes_per_second"`
	Served      uint64  `json:"served_bytes_per_second"`
	QueueWaitMs float64 `json:"queue_wait_ms"`
}

// qosTraffic is one job's demand and use in one class, summed over the
// data servers, in bytes per second.
type qosTraffic struct {
	Class  string `json:"class"`
	Job    string `json:"job"`
	Demand uint64 `json:"demand_bytes_per_second"`
	Use    uint64 `json:"use_bytes_per_second"`
}

// qosDrainBody is one job tier's drain.
type qosDrainBody struct {
	Job     uint32     `json:"job"`
	Backlog uint64     `json:"backlog_bytes"`
	Files   uint64     `json:"backlog_files"`
	Drained uint64     `json:"drained_bytes"`
	Rate    uint64     `json:"rate_bytes_per_second"`
	ETA     *time.Time `json:"predicted_done,omitempty"`
	Done    bool       `json:"done"`
	Updated time.Time  `json:"updated"`
}

type qosServerBody struct {
	ID            string      `json:"id"`
	PolicyVersion uint64      `json:"policy_version"`
	Inflight      uint32      `json:"inflight"`
	Queued        uint32      `json:"queued"`
	Measure       *qosMeasure `json:"measure,omitempty"`
}

// getQoS answers GET /v1/qos: what every data server's scheduler served.
func (s *Server) getQoS(ctx context.Context) (reply, error) {
	if s.qos == nil {
		return reply{}, fmt.Errorf("%w: no qos source", ErrNotFound)
	}
	st, err := s.qos.QoSStatus(ctx)
	if err != nil {
		return reply{}, err
	}
	b := qosBody{PolicyVersion: st.Version, Servers: []qosServerBody{}, Classes: map[string]uint64{}, Jobs: map[string]uint64{}, Served: []qosServed{},
		Capacity: st.Capacity, Traffic: []qosTraffic{}, Drains: []qosDrainBody{}}
	measures := map[string]*qosMeasure{}
	for _, d := range st.Measures {
		m := d.Measure
		measures[d.ID] = &qosMeasure{Capacity: m.Capacity, Configured: m.Configured, Device: m.Device, DiskRead: m.DiskRead, DiskWrite: m.DiskWrite,
			NetRx: m.NetRx, NetTx: m.NetTx, Served: m.Served, QueueWaitMs: float64(m.QueueWaitUs) / 1000}
	}
	for _, u := range st.Use {
		b.Traffic = append(b.Traffic, qosTraffic{Class: qos.Class(u.Class).String(), Job: u.Job, Demand: u.Demand, Use: u.Use})
	}
	for _, d := range st.Drains {
		e := qosDrainBody{Job: d.Job, Backlog: d.Backlog, Files: d.Files, Drained: d.Drained, Rate: d.Rate, Done: d.Done, Updated: time.Unix(0, d.Updated).UTC()}
		if d.ETA != 0 {
			t := time.Unix(0, d.ETA).UTC()
			e.ETA = &t
		}
		b.Drains = append(b.Drains, e)
	}
	for _, d := range st.Servers {
		b.Servers = append(b.Servers, qosServerBody{ID: d.ID, PolicyVersion: d.Version, Inflight: d.Inflight, Queued: d.Queued, Measure: measures[d.ID]})
		for _, j := range d.Served {
			c := qos.Class(j.Class).String()
			b.Classes[c] += j.Bytes
			if j.Job != "" {
				b.Jobs[j.Job] += j.Bytes
			}
			b.Served = append(b.Served, qosServed{Server: d.ID, Class: c, Job: j.Job, Bytes: j.Bytes})
		}
	}
	return jsonReply(http.StatusOK, b), nil
}
