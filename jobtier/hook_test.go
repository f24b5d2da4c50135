package jobtier

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestHookRequestRoundTrip(t *testing.T) {
	q := HookRequest{Op: OpProlog, JobID: 42, UID: 1000, GID: 100, Nodes: "n[1-3]", Node: "n2", Spec: `capacity=1G,drain=ckpt/*:strata:/p`}
	var buf bytes.Buffer
	if err := WriteHookLine(&buf, q); err != nil {
		t.Fatal(err)
	}
	want := `{"op":"prolog","job_id":42,"uid":1000,"gid":100,"nodes":"n[1-3]","node":"n2","spec":"capacity=1G,drain=ckpt/*:strata:/p"}` + "\n"
	if buf.String() != want {
		t.Errorf("wire form\n got %s\nwant %s", buf.String(), want)
	}
	got, err := ReadHookRequest(bufio.NewReader(&buf))
	if err != nil || got != q {
		t.Fatalf("%+v, %v", got, err)
	}
}

// TestHookRequestFromPlugin reads the lines the C plugin writes
// (spank_strata.c json_request), unknown fields included.
func TestHookRequestFromPlugin(t *testing.T) {
	for _, tc := range []struct {
		line string
		want HookRequest
		err  string
	}{
		{`{"op":"epilog","job_id":7,"uid":0,"gid":0,"nodes":"n1","node":"n1","spec":"capacity=1G"}`,
			HookRequest{Op: OpEpilog, JobID: 7, Nodes: "n1", Node: "n1", Spec: "capacity=1G"}, ""},
		{`{"op":"status","job_id":7,"uid":65534,"gid":65534,"node":"n3","future":{"x":1}}`,
			HookRequest{Op: OpStatus, JobID: 7, UID: 65534, GID: 65534, Node: "n3"}, ""},
		{`{"op":"status","job_id":7,"uid":0,"gid":0,"node":"a\"b\\c\u00e9"}`,
			HookRequest{Op: OpStatus, JobID: 7, Node: "a\"b\\c\u00e9"}, ""},
		{`{"op":"mount","job_id":7,"node":"n1"}`, HookRequest{}, `unknown op "mount"`},
		{`{"op":"prolog","job_id":7,"node":"n1","spec":"x"}`, HookRequest{}, "prolog needs nodes and spec"},
		{`{"op":"status","job_id":0,"node":"n1"}`, HookRequest{}, "status needs job_id and node"},
		{`{"op":"status","job_id":-1,"node":"n1"}`, HookRequest{}, "cannot unmarshal"},
		{`[1]`, HookRequest{}, "want a JSON object"},
		{`{"op":"status"`, HookRequest{}, "unexpected end"},
	} {
		got, err := ReadHookRequest(bufio.NewReader(strings.NewReader(tc.line + "\n")))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadHook) {
				t.Errorf("%s: err %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

func TestHookLineLimits(t *testing.T) {
	long := `{"op":"status","job_id":1,"node":"` + strings.Repeat("x", MaxHookLine) + `"}` + "\n"
	if _, err := ReadHookRequest(bufio.NewReader(strings.NewReader(long))); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("long line: %v", err)
	}
	if _, err := ReadHookReply(bufio.NewReader(strings.NewReader(`{"ok":true}`))); err == nil || !strings.Contains(err.Error(), "not terminated") {
		t.Errorf("unterminated line: %v", err)
	}
	if err := WriteHookLine(&bytes.Buffer{}, HookReply{Error: strings.Repeat("e", MaxHookLine)}); err == nil {
		t.Error("writing a line over the limit succeeded")
	}
}

func TestHookReplyWire(t *testing.T) {
	for _, tc := range []struct {
		r    HookReply
		wire string
	}{
		{HookReply{OK: true}, `{"ok":true}`},
		{HookReply{Error: "stage-in: /x: no such file", UserError: true}, `{"ok":false,"error":"stage-in: /x: no such file","user_error":true}`},
		{HookReply{OK: true, TierDir: "/mnt/strata-tier/5", ROMIOHints: "/mnt/strata-tier/5/.romio-hints"}, `{"ok":true,"tier_dir":"/mnt/strata-tier/5","romio_hints":"/mnt/strata-tier/5/.romio-hints"}`},
	} {
		var buf bytes.Buffer
		if err := WriteHookLine(&buf, tc.r); err != nil || buf.String() != tc.wire+"\n" {
			t.Errorf("%+v: %q, %v", tc.r, buf.String(), err)
		}
		back, err := ReadHookReply(bufio.NewReader(&buf))
		if err != nil || back != tc.r {
			t.Errorf("%s: %+v, %v", tc.wire, back, err)
		}
	}
}
