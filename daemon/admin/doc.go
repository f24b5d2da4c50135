// Package admin is Strata's admin REST API: JSON over HTTP/1.1 with
// fasthttp, versioned under /v1, plus Prometheus metrics at /metrics.
//
// It owns routing, the JSON shapes of the responses and the one table that
// maps errors to HTTP status codes (errors.go). It holds no business logic:
// everything it reports comes from a Source (the MDS in production, a fake
// in tests).
//
// It imports daemon/rpc for the message types it renders; it must not
// import the MDS, the DS or any other daemon package.
package admin
