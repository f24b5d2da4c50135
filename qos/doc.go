// Package qos holds Strata's bandwidth policy: the QoS classes and tags
// (class.go), the policy document an admin sets (policy.go), the
// scheduler every data server runs at its door (scheduler.go), token
// buckets that pace background work (bucket.go), and the bandwidth
// ledger's arithmetic: rates, drain completion (ledger.go).
//
// It is a pure policy package: it imports the standard library only, no
// daemon, transport, raft, FUSE or gopsutil.
package qos
