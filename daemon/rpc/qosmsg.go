package rpc

// QoS method names (docs/qos.md).
const (
	MQoSPolicyGet = "mds.qos.policy.get"
	MQoSPolicySet = "mds.qos.policy.set"
	MQoSStatus    = "mds.qos.status"
)

// QoSPolicyReq sets the cluster's QoS policy: Doc is its JSON (qos.Policy).
type QoSPolicyReq struct {
	Doc []byte
}

// QoSPolicyResp is the policy in force: its version (0: none was ever
// set, the default applies) and its JSON.
type QoSPolicyResp struct {
	Version uint64
	Doc     []byte
}

// QoSServed is what a data server's scheduler served of one job in one
// class since it started.
type QoSServed struct {
	Job   string
	Class uint8
	Bytes uint64
}

// QoSServer is one data server's QoS state as its last heartbeat told.
type QoSServer struct {
	ID       string
	Version  uint64 // of the policy it applies
	Inflight uint32
	Queued   uint32
	Served   []QoSServed
	LastSeen int64 // unix nanoseconds
}

// QoSStatusResp answers MQoSStatus: the policy's version and every data
// server's counters.
type QoSStatusResp struct {
	Version uint64
	Servers []QoSServer
	// Appended later: the bandwidth ledger (ledgermsg.go). Capacity is
	// the sum of the servers' that are up.
	Capacity uint64
	Measures []QoSLedgerDS
	Use      []QoSUse
	Drains   []QoSDrain
}
