package qos

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	good := `{"classes":{"io":{"weight":8},"drain":{"weight":2,"limit":1000},"rebuild":{"weight":1,"reservation":100}},"jobs":{"42":{"weight":2,"limit":500}}}`
	p, err := ParsePolicy([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if p.Classes["drain"].Limit != 1000 || p.Jobs["42"].Weight != 2 || p.job("7").Weight != 1 {
		t.Fatalf("parsed %+v", p)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown class", `{"classes":{"io":{"weight":1},"bulk":{"weight":1}}}`, `unknown class "bulk"`},
		{"negative rate", `{"classes":{"io":{"weight":1,"limit":-5}}}`, "negative limit"},
		{"negative reservation", `{"classes":{"io":{"weight":1,"reservation":-1}}}`, "negative reservation"},
		{"all weights 0", `{"classes":{"io":{"weight":0},"drain":{"weight":0}}}`, "every class has weight 0"},
		{"negative weight", `{"classes":{"io":{"weight":-1}}}`, "weight -1"},
		{"reservation over limit", `{"classes":{"io":{"weight":1,"reservation":10,"limit":5}}}`, "exceeds its limit"},
		{"job negative limit", `{"classes":{"io":{"weight":1}},"jobs":{"9":{"limit":-1}}}`, "job 9: negative limit"},
		{"bad json", `{"classes":`, "bad policy"},
		{"unknown field", `{"classes":{"io":{"weight":1,"wieght":2}}}`, "unknown field"},
		{"no classes", `{}`, "no classes"},
		{"trailing", `{"classes":{"io":{"weight":1}}} {}`, "trailing"},
		{"too big", `{"classes":{"io":{"weight":1}}}` + strings.Repeat(" ", 1<<20), "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.doc))
			if err == nil || !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrPolicy saying %q", err, tc.want)
			}
		})
	}
}
