package jobtier

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: the grammar never panics, every error is a one-line
// *SpecError, and what it accepts formats to a canonical string that
// parses back to the same spec.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"capacity=200G,stage-in=/global/ds/imagenet:/in,drain=ckpt/*:/global/proj/run42",
		"capacity=1T/total,unit=1M,redundancy=none,mount=/scratch/%j",
		"stage-in=strata:/a:b:/,drain=**/x/**/*.h5:strata:/p:q",
		"drain=[a-c]/\\*:/x", "redundancy=rs:4+2", ",,", "=", "capacity=1G/",
		"capacity=1G,bw=2G/s,qos=drain", "bw=1536M,qos=io", "bw=+1G", "qos=rebuild",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v is not a *SpecError", in, err)
			}
			if strings.ContainsAny(se.Msg, "\n\r") {
				t.Fatalf("Parse(%q) error %q is not one line", in, err)
			}
			return
		}
		canon := s.String()
		again, err := Parse(canon)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("Parse(%q) = %+v; reparse of %q = %+v, %v", in, s, canon, again, err)
		}
		if again.String() != canon {
			t.Fatalf("canonical form not stable: %q then %q", canon, again.String())
		}
		_ = DefaultOptions().Check(s)
		for _, d := range s.Drain {
			d.Match("a/b/c.h5")
		}
	})
}

// FuzzHookRequest: the agent's decoder never panics, and a request it
// accepts encodes to a line that decodes to the same request.
func FuzzHookRequest(f *testing.F) {
	f.Add([]byte(`{"op":"prolog","job_id":42,"uid":1000,"gid":100,"nodes":"n[1-3]","node":"n2","spec":"capacity=1G"}` + "\n"))
	f.Add([]byte(`{"op":"status","job_id":1,"node":"n1"}` + "\n"))
	f.Add([]byte("{\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ReadHookRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteHookLine(&buf, q); err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		again, err := ReadHookRequest(bufio.NewReader(&buf))
		if err != nil || again != q {
			t.Fatalf("%q: %+v; again %+v, %v", b, q, again, err)
		}
	})
}
