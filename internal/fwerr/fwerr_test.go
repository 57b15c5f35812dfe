package fwerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"plain", base, KindError},
		{"usage", Usagef("bad flag %q", "--x"), KindUsage},
		{"connect wrapped twice", fmt.Errorf("inspect: %w", Connect(base)), KindConnect},
		{"check", Checkf("3 problems"), KindCheck},
		{"interrupted", Wrap(KindInterrupted, base), KindInterrupted},
		{"denied wrapped", fmt.Errorf("replay: %w", Denied(base)), KindDenied},
		{"tripped joined", errors.Join(nil, fmt.Errorf("consume: %w", Wrap(KindTripped, base))), KindTripped},
		{"not found", fmt.Errorf("inspect: %w", NotFoundf("topic %q does not exist", "t")), KindNotFound},
		{"classified", fmt.Errorf("plan: %w", missing{}), KindNotFound},
		{"outermost wins", Wrap(KindUsage, missing{}), KindUsage},
	}
	for _, c := range cases {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("%s: KindOf = %v, want %v", c.name, got, c.want)
		}
	}
	if Wrap(KindUsage, nil) != nil {
		t.Error("Wrap(nil) must stay nil")
	}
	if !errors.Is(Connect(base), base) {
		t.Error("Connect must keep the chain")
	}
}

// missing is an error type of its own that says its kind (as kafka.UnknownTopicError does).
type missing struct{}

func (missing) Error() string   { return "no such thing" }
func (missing) ErrorKind() Kind { return KindNotFound }
