package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestQoSPolicy: a policy set with `strata qos policy set` reaches every
// data server; bad policies (unknown class, negative rate, all weights 0,
// a 1 MB body, bad JSON) are refused with the reason, by the CLI (exit 2)
// and by PUT /v1/qos/policy (400), and the policy in force stays; the
// admin API's change needs its token; status shows served bytes.
func TestQoSPolicy(t *testing.T) {
	const token = "s3cret"
	cl := testcluster.Start(t, 2, testcluster.WithAdmin(token))
	c := &cli{t: t, mds: cl.MDSAddr(), secret: secretFile(cl)}
	if out := c.ok("qos", "policy", "show"); !strings.Contains(out, `"io":{"weight":8}`) {
		t.Fatalf("default policy:\n%s", out)
	}
	dir := t.TempDir()
	file := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"classes":{"io":{"weight":6},"drain":{"weight":3,"limit":1073741824},"rebuild":{"weight":1,"reservation":1048576}},"jobs":{"77":{"limit":1048576}}}`
	start := time.Now()
	if out := c.ok("qos", "policy", "set", file("good.json", good)); !strings.Contains(out, "qos policy version 1 set") {
		t.Fatalf("policy set printed %q", out)
	}
	waitPolicy(t, cl, 1, 6)
	t.Logf("policy version 1 applied by every data server %v after it was set", time.Since(start).Round(time.Millisecond))

	bad := []struct{ name, doc, want string }{
		{"unknown-class", `{"classes":{"io":{"weight":1},"bulk":{"weight":1}}}`, `unknown class "bulk"`},
		{"negative-rate", `{"classes":{"io":{"weight":1,"limit":-5}}}`, "negative limit"},
		{"all-weights-0", `{"classes":{"io":{"weight":0},"drain":{"weight":0}}}`, "every class has weight 0"},
		{"one-megabyte", `{"classes":{"io":{"weight":1}}}` + strings.Repeat(" ", 1000000), "at most"},
		{"bad-json", `{"classes":{"io":`, "bad policy"},
	}
	admin := "http://" + cl.AdminAddr() + "/v1/qos/policy"
	for _, b := range bad {
		c.run("qos", "policy", "set", file(b.name, b.doc)).fails(t, 2, b.want)
		code, body := httpDo(t, http.MethodPut, admin, token, b.doc)
		var e struct{ Error string }
		_ = json.Unmarshal([]byte(body), &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Error, b.want) {
			t.Errorf("PUT %s: %d %s, want 400 saying %q", b.name, code, body, b.want)
		}
	}
	// The MDS refuses a bad document itself too (a client that skips the
	// CLI's check).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.Client().SetQoSPolicy(ctx, []byte(bad[0].doc)); err == nil || !strings.Contains(err.Error(), "bulk") {
		t.Errorf("SetQoSPolicy of an unknown class: %v", err)
	}
	if out := c.ok("qos", "policy", "show"); !strings.Contains(out, `"version":1`) || !strings.Contains(out, `"io":{"weight":6}`) {
		t.Fatalf("after the bad policies:\n%s", out)
	}
	waitPolicy(t, cl, 1, 6)

	if code, _ := httpDo(t, http.MethodPut, admin, "", good); code != http.StatusUnauthorized {
		t.Errorf("PUT without the token: %d, want 401", code)
	}
	next := strings.Replace(good, `"io":{"weight":6}`, `"io":{"weight":5}`, 1)
	if code, body := httpDo(t, http.MethodPut, admin, token, next); code != http.StatusOK || !strings.Contains(body, `"version": 2`) {
		t.Fatalf("PUT a good policy: %d %s", code, body)
	}
	waitPolicy(t, cl, 2, 5)
	if code, body := httpDo(t, http.MethodGet, admin, "", ""); code != http.StatusOK || !strings.Contains(body, `"weight": 5`) {
		t.Fatalf("GET the policy: %d %s", code, body)
	}

	// Served bytes show in status once data servers beat again.
	c.ok("cp", file("data", strings.Repeat("x", 1<<20)), "/data")
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := httpDo(t, http.MethodGet, "http://"+cl.AdminAddr()+"/v1/qos", "", "")
		var st struct {
			Classes map[string]uint64 `json:"classes"`
		}
		if code == http.StatusOK && json.Unmarshal([]byte(body), &st) == nil && st.Classes["io"] >= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/qos never showed the 1 MiB written: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := c.ok("qos", "status"); !strings.Contains(out, "policy version 2") || !strings.Contains(out, " io ") {
		t.Fatalf("qos status:\n%s", out)
	}
	_, metrics := httpDo(t, http.MethodGet, "http://"+cl.AdminAddr()+"/metrics", "", "")
	if !strings.Contains(metrics, "strata_qos_policy_version 2\n") || !regexp.MustCompile(`strata_qos_served_bytes_total\{ds="ds\d",class="io",job=""\} [1-9]`).MatchString(metrics) {
		t.Fatalf("/metrics has no qos series:\n%s", metrics)
	}
}

// waitPolicy waits until every data server applies policy version v
// (whose io weight is ioWeight).
func waitPolicy(t *testing.T, cl *testcluster.Cluster, v uint64, ioWeight float64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < cl.NumDS(); i++ {
		for {
			p := cl.DS(i).QoSPolicy()
			if p.Version == v && p.Classes["io"].Weight == ioWeight {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("data server %d applies policy version %d (io weight %v), want %d (%v)", i, p.Version, p.Classes["io"].Weight, v, ioWeight)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
