package rpc

// StartServerWith serves mux for the external tests (package rpc_test),
// which may import what imports this package (internal/testcerts).
var StartServerWith = startServerWith
