package cmdutil

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

func TestConfirm(t *testing.T) {
	const q = "delete 3 markers of consumer billing"
	terminal := func(answer string) (*Factory, *bytes.Buffer) {
		s, in, _, errOut := output.Test()
		s.InTTY, s.ErrTTY = true, true
		in.WriteString(answer)
		return &Factory{Streams: s}, errOut
	}

	// --yes never asks, terminal or not.
	if err := Confirm(TestFactory(), true, q); err != nil {
		t.Errorf("--yes: %v", err)
	}

	// Not a terminal, no --yes: a usage error naming the action and --yes.
	err := Confirm(TestFactory(), false, q)
	if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "refusing to delete 3 markers of consumer billing without --yes") {
		t.Errorf("non-interactive: %v", err)
	}
	// stdin a terminal but stderr not (or the reverse) is not interactive either.
	f := TestFactory()
	f.Streams.InTTY = true
	if err := Confirm(f, false, q); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Errorf("stdin only: %v", err)
	}

	for answer, ok := range map[string]bool{"y\n": true, "YES\n": true, " yes \n": true, "Y": true, "n\n": false, "\n": false, "": false, "yep\n": false} {
		f, errOut := terminal(answer)
		err := Confirm(f, false, q+"?")
		prompt := errOut.String()
		if !strings.HasPrefix(prompt, "Delete 3 markers of consumer billing? [y/N] ") {
			t.Errorf("%q: prompt %q", answer, prompt)
		}
		if ok && err != nil {
			t.Errorf("%q: %v", answer, err)
		}
		if !ok && (!errors.Is(err, ErrNotConfirmed) || fwerr.KindOf(err) != fwerr.KindError) {
			t.Errorf("%q: %v, want ErrNotConfirmed (exit 1)", answer, err)
		}
	}
}
