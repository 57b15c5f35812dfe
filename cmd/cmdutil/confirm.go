package cmdutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// ErrNotConfirmed is returned when the person at the terminal answers anything but yes.
var ErrNotConfirmed = errors.New("not confirmed: nothing was changed")

// Confirm asks before a destructive or large action (docs/design.md §4: "Destructive or large actions
// ask for confirmation on a terminal unless --yes").
//
// question is the action as a phrase that completes "refusing to …", for example "delete
// 1,204 markers of consumer billing processed before 2025-05-01T00:00:00Z". The rule:
//
//   - yes (--yes) skips the question: nil.
//   - On an interactive terminal (stdin and stderr are terminals) it asks "Delete …? [y/N] "
//     on stderr and reads one line from stdin: y or yes (any case) is nil; anything else,
//     an empty line or end of input is ErrNotConfirmed (exit 1). SIGINT or SIGTERM while
//     waiting is an interruption (exit 130).
//   - Anywhere else (a script, a pipe, CI) it refuses with a usage error (exit 2): "refusing
//     to … without --yes". Proceeding silently would make a script's first run destructive;
//     failing makes the script's author choose --yes deliberately.
func Confirm(f *Factory, yes bool, question string) error {
	if yes {
		return nil
	}
	question = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(question), "?"))
	if !f.Streams.Interactive() {
		return fwerr.Usagef("refusing to %s without --yes: this is not an interactive terminal, so nobody can confirm (pass --yes in scripts)", question)
	}
	fmt.Fprintf(f.Streams.ErrText(), "%s? [y/N] ", capitalize(question))

	// The root command catches SIGINT for a clean shutdown, so a blocked read would outlive
	// Ctrl-C: wait for the answer or a signal, whichever comes first.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	answer := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(f.Streams.In).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			line = ""
		}
		answer <- line
	}()
	select {
	case <-sig:
		fmt.Fprintln(f.Streams.ErrOut)
		return fwerr.Wrap(fwerr.KindInterrupted, errors.New("interrupted at the confirmation prompt"))
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(f.Streams.ErrOut)
		}
		return ErrNotConfirmed
	}
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
