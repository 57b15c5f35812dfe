package cmdutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// EditText opens text in the operator's editor ($VISUAL, else $EDITOR, run by /bin/sh so that
// it may carry arguments, `code --wait`) on the terminal, and returns what was saved. It needs
// an interactive terminal (stdin and stderr): anywhere else it is a usage error that names
// the flag a script gives the text with (alt). An editor that exits non-zero, or a file saved
// unchanged, cancels (exit 6): nothing was changed.
func EditText(f *Factory, name string, text []byte, alt string) ([]byte, error) {
	s := f.Streams
	editor := strings.TrimSpace(f.Getenv("VISUAL"))
	if editor == "" {
		editor = strings.TrimSpace(f.Getenv("EDITOR"))
	}
	switch {
	case !s.Interactive():
		return nil, fwerr.Usagef("editing needs a terminal: give the new value with %s", alt)
	case editor == "":
		return nil, fwerr.Usagef("editing needs $EDITOR (or $VISUAL): set it, or give the new value with %s", alt)
	}
	dir, err := os.MkdirTemp("", "fieldwork-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := dir + "/" + name
	if err := os.WriteFile(path, text, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", editor+` "$1"`, "editor", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.In, s.ErrOut, s.ErrOut
	if err := cmd.Run(); err != nil {
		return nil, fwerr.Wrap(fwerr.KindCancelled, fmt.Errorf("the editor (%s) failed: %v: nothing was changed", editor, err))
	}
	out, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if string(out) == string(text) {
		return nil, fwerr.Wrap(fwerr.KindCancelled, fmt.Errorf("the value was saved unchanged: nothing was changed"))
	}
	return out, nil
}
