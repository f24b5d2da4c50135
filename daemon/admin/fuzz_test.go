package admin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzRouter feeds arbitrary methods, paths and bodies to the admin API's
// router and handlers: no panic, a status from the error table, and every
// JSON reply parses.
func FuzzRouter(f *testing.F) {
	s, err := New(Config{Listen: "127.0.0.1:0"}, Deps{
		Source: &fakeSource{resp: leaderState(), metrics: "strata_up 1\n"},
		Tiers:  fakeTiers{7: {Job: 7, State: "running"}},
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{"/v1/health", "/v1/cluster", "/metrics", "/v1/tiers", "/v1/tiers/7", "/v1/tiers/x", "/v1/tiers/", "//v1", "/v1/tiers/7/8"} {
		for _, m := range []string{"GET", "HEAD", "POST", "DELETE"} {
			f.Add(m, p, []byte("{}"))
		}
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		var req fasthttp.Request
		req.Header.SetMethod(method)
		req.SetRequestURI(path)
		req.SetBody(body)
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		s.serve(&rc)
		code := rc.Response.StatusCode()
		if code < 200 || code > 599 {
			t.Fatalf("%s %q: status %d", method, path, code)
		}
		if strings.HasPrefix(string(rc.Response.Header.ContentType()), "application/json") && len(rc.Response.Body()) > 0 {
			var v any
			if err := json.Unmarshal(rc.Response.Body(), &v); err != nil {
				t.Fatalf("%s %q: status %d, reply is not JSON: %v", method, path, code, err)
			}
		}
	})
}
