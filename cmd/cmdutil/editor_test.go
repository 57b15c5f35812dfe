package cmdutil

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

// TestEditText runs $EDITOR (a command with arguments, through the shell) on the text and
// returns what it saved; off a terminal, without an editor, after a failed or an unchanged
// edit it changes nothing.
func TestEditText(t *testing.T) {
	factory := func(tty bool, env map[string]string) *Factory {
		s, _, _, _ := output.Test()
		s.InTTY, s.ErrTTY = tty, tty
		return &Factory{Streams: s, Getenv: func(k string) string { return env[k] }}
	}
	got, err := EditText(factory(true, map[string]string{"EDITOR": "sed -i s/never/2026-12-24/"}), "value.json", []byte(`{"due": "never"}`+"\n"), "--value-file")
	if err != nil || string(got) != `{"due": "2026-12-24"}`+"\n" {
		t.Fatalf("EditText = %q, %v", got, err)
	}
	// $VISUAL wins over $EDITOR.
	if got, err := EditText(factory(true, map[string]string{"VISUAL": "sed -i s/a/b/", "EDITOR": "false"}), "v", []byte("a"), "--value-file"); err != nil || string(got) != "b" {
		t.Fatalf("VISUAL: %q, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		f    *Factory
		kind fwerr.Kind
		msg  string
	}{
		{"no terminal", factory(false, map[string]string{"EDITOR": "true"}), fwerr.KindUsage, "--value-file"},
		{"no editor", factory(true, nil), fwerr.KindUsage, "$EDITOR"},
		{"editor fails", factory(true, map[string]string{"EDITOR": "false"}), fwerr.KindCancelled, "nothing was changed"},
		{"unchanged", factory(true, map[string]string{"EDITOR": "true"}), fwerr.KindCancelled, "unchanged"},
	} {
		_, err := EditText(tc.f, "v", []byte("x"), "--value-file")
		if fwerr.KindOf(err) != tc.kind || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v (kind %v), want kind %v mentioning %q", tc.name, err, fwerr.KindOf(err), tc.kind, tc.msg)
		}
	}
}
