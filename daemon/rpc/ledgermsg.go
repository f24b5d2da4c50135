package rpc

// MQoSDrain is the method by which a node agent reports a job tier's drain
// backlog to the global MDS's bandwidth ledger (docs/qos.md).
const MQoSDrain = "mds.qos.drain"

// DSMeasure is what a data server measured over its last heartbeat
// interval, in bytes per second, and its bandwidth estimate.
type DSMeasure struct {
	// Capacity is the bandwidth the server counts on: its qos_bandwidth
	// when set (Configured), else the most it has delivered so far
	// (disk or served, whichever is more).
	Capacity   uint64
	Configured bool
	Device     string // the block device under the data directory; "" when none was found
	DiskRead   uint64
	DiskWrite  uint64
	NetRx      uint64 // all interfaces but loopback
	NetTx      uint64
	Served     uint64 // what its QoS scheduler let through
	// QueueWaitUs is the mean time a read or write waited in the QoS
	// scheduler, in microseconds.
	QueueWaitUs uint64
}

// QoSDrainReq reports one node's drain backlog of a job tier: the bytes
// and files matched by drain rules and not drained yet, and the bytes it
// has drained since the tier started (a counter). Done says the node's
// drains are over (the tier is torn down). Only node daemons (the agent)
// and admins may report.
type QoSDrainReq struct {
	Job     uint32
	Node    string
	Backlog uint64
	Files   uint64
	Drained uint64
	Done    bool
}

// QoSLedgerDS is one data server in the bandwidth ledger.
type QoSLedgerDS struct {
	ID      string
	Measure DSMeasure
}

// QoSUse is the demand (bytes per second asked of the schedulers, served
// or waiting) and the use (bytes per second served) of one job in one
// class, summed over the data servers. Job "" is traffic of no job.
type QoSUse struct {
	Class  uint8
	Job    string
	Demand uint64
	Use    uint64
}

// QoSDrain is one job tier's drain in the ledger: the bytes and files
// still to drain, summed over its nodes, the rate its drained bytes grew
// at lately (bytes per second) and when the backlog should be drained at
// that rate (unix nanoseconds; 0: unknown, nothing drains yet, or
// nothing is left).
type QoSDrain struct {
	Job     uint32
	Backlog uint64
	Files   uint64
	Drained uint64
	Rate    uint64
	ETA     int64
	Done    bool  // every node said its drains are over
	Updated int64 // unix nanoseconds of the last report
}
