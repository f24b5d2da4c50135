package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"

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
}

type qosServerBody struct {
	ID            string `json:"id"`
	PolicyVersion uint64 `json:"policy_version"`
	Inflight      uint32 `json:"inflight"`
	Queued        uint32 `json:"queued"`
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
	b := qosBody{PolicyVersion: st.Version, Servers: []qosServerBody{}, Classes: map[string]uint64{}, Jobs: map[string]uint64{}, Served: []qosServed{}}
	for _, d := range st.Servers {
		b.Servers = append(b.Servers, qosServerBody{ID: d.ID, PolicyVersion: d.Version, Inflight: d.Inflight, Queued: d.Queued})
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
