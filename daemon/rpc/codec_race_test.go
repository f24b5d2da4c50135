package rpc

import (
	"reflect"
	"sync"
	"testing"
)

// TestPlanConcurrent: goroutines meeting a type for the first time at
// once must never run a half-built plan.
func TestPlanConcurrent(t *testing.T) {
	type inner struct {
		A uint64
		B string
	}
	type outer struct {
		I inner
		P *inner
		S []inner
		M map[string]inner
	}
	want := outer{I: inner{1, "a"}, P: &inner{2, "b"}, S: []inner{{3, "c"}}, M: map[string]inner{"k": {4, "d"}}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var got outer
			if err := Unmarshal(Marshal(nil, &want), &got); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("round trip = %+v, %v", got, err)
			}
		})
	}
	wg.Wait()
}
