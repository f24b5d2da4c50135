package slurmrest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeAnswer feeds arbitrary bodies and statuses to the decoder of
// every answer the client reads: it must not panic, an error must have a
// message, and what it decodes must survive encode and decode unchanged.
func FuzzDecodeAnswer(f *testing.F) {
	samples, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, s := range samples {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(200, b)
		f.Add(500, b)
	}
	f.Add(401, []byte("Authentication failure"))
	f.Add(500, []byte(`{"errors":[{"error_number":2017,"error":"Invalid job id specified","description":"Unable to find JobId=7"}],"jobs":[]}`))
	f.Add(200, []byte(`{"jobs":[{"job_id":4294967296,"priority":-1,"flags":null}]}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		targets := []any{&jobsAnswer{}, &struct {
			Nodes []Node `json:"nodes"`
		}{}, &struct {
			Licenses []License `json:"licenses"`
		}{}, &struct {
			Statistics Diag `json:"statistics"`
		}{}, &struct {
			Pings []Ping `json:"pings"`
		}{}}
		for _, out := range targets {
			err := decodeAnswer("GET", "/x", status, body, out)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without a message")
				}
				continue
			}
			b, err := json.Marshal(out)
			if err != nil {
				t.Fatalf("encode %T: %v", out, err)
			}
			again := reflect.New(reflect.TypeOf(out).Elem()).Interface()
			if err := json.Unmarshal(b, again); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if !reflect.DeepEqual(normalize(out), normalize(again)) {
				t.Fatalf("decode(encode(x)) != x:\n%#v\n%#v", out, again)
			}
		}
	})
}

// normalize maps empty and nil slices alike: JSON null and [] decode
// differently but mean the same to the client.
func normalize(v any) string {
	b, _ := json.Marshal(v)
	var m any
	_ = json.Unmarshal(b, &m)
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
			return x
		case []any:
			if len(x) == 0 {
				return nil
			}
			for i, e := range x {
				x[i] = walk(e)
			}
			return x
		}
		return x
	}
	b, _ = json.Marshal(walk(m))
	return string(b)
}

// FuzzJobUpdate checks that an update's JSON is what slurmrestd's
// job_properties expects: hold a boolean, comment as given, priority as
// a decimal string.
func FuzzJobUpdate(f *testing.F) {
	f.Add(true, true, "held: drain backlog", uint32(0), false)
	f.Add(false, false, "", uint32(7), true)
	f.Fuzz(func(t *testing.T, setHold, hold bool, comment string, prio uint32, setPrio bool) {
		var u JobUpdate
		if setHold {
			u.Hold = &hold
		}
		u.Comment = &comment
		if setPrio {
			u.Priority = &prio
		}
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Hold     *bool   `json:"hold"`
			Comment  *string `json:"comment"`
			Priority *string `json:"priority"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if (got.Hold != nil) != setHold || (setHold && *got.Hold != hold) {
			t.Fatalf("hold: %s", b)
		}
		if got.Comment == nil || *got.Comment != toValidUTF8(comment) {
			t.Fatalf("comment: %s", b)
		}
		if (got.Priority != nil) != setPrio {
			t.Fatalf("priority: %s", b)
		}
	})
}

// toValidUTF8 is what encoding/json makes of a string.
func toValidUTF8(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}
