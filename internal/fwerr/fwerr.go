// Package fwerr classifies errors by what they mean to the person (or script) that ran
// fieldwork. Domain packages wrap their errors with a Kind; the command layer maps kinds to
// exit codes in exactly one place (cmd.Main).
package fwerr

import (
	"context"
	"errors"
	"fmt"
)

// Kind is the class of a failure, as an operator's runbook branches on it.
type Kind int

const (
	// KindError is any failure not classified otherwise (exit 1).
	KindError Kind = iota
	// KindUsage is a wrong flag, argument or value: the command never started (exit 2).
	KindUsage
	// KindCheck means a check ran and found problems (exit 3).
	KindCheck
	// KindConnect means a broker or database could not be reached or refused the credentials (exit 4).
	KindConnect
	// KindInterrupted means the run was stopped by SIGINT or SIGTERM (exit 130).
	KindInterrupted
	// KindDenied means the cluster's ACLs, or the store's privileges, deny an operation the
	// command needs (exit 5): the message names the operation and the resource ("not
	// authorized: WRITE on topic orders"), or gives the database's words.
	KindDenied
	// KindCancelled means the person at the terminal answered no to a confirmation: nothing
	// was changed (exit 6).
	KindCancelled
	// KindPartial means the output was cut at a default limit that the caller did not choose
	// and more results remain, while stdout is not a terminal (exit 7): a script must not take
	// it for the whole answer.
	KindPartial
	// KindTripped means a breaker stopped the run on purpose before it did harm at scale
	// (exit 8): `consume`'s dead-letter breaker, when records kept failing. Nothing past the
	// point where it tripped was done or committed; the message names the dominant failure.
	KindTripped
	// KindNotFound means a thing the command was asked about does not exist (exit 9): a topic,
	// a partition, an offset outside its partition, a consumer group, a journaled run. The
	// message names it; nothing was done. ("Nothing found" by a search is no error: exit 0.)
	KindNotFound
)

// Error carries a Kind beside the underlying error.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Wrap marks err with kind. A nil err stays nil.
func Wrap(kind Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Err: err}
}

// Usagef is a usage error (exit 2).
func Usagef(format string, args ...any) error {
	return &Error{Kind: KindUsage, Err: fmt.Errorf(format, args...)}
}

// NotFoundf is a KindNotFound error: what was named does not exist (exit 9).
func NotFoundf(format string, args ...any) error {
	return &Error{Kind: KindNotFound, Err: fmt.Errorf(format, args...)}
}

// Connect marks err as a failure to reach or authenticate to a service (exit 4).
func Connect(err error) error { return Wrap(KindConnect, err) }

// Denied marks err as an authorization failure (exit 5).
func Denied(err error) error { return Wrap(KindDenied, err) }

// Partialf is a KindPartial error: the output written is complete up to a default limit.
func Partialf(format string, args ...any) error {
	return &Error{Kind: KindPartial, Err: fmt.Errorf(format, args...)}
}

// Checkf reports that a check found problems (exit 3). The findings themselves have
// already been printed; the message is a one-line summary for stderr.
func Checkf(format string, args ...any) error {
	return &Error{Kind: KindCheck, Err: fmt.Errorf(format, args...)}
}

// Classified is an error type of its own (with fields a caller reads: the topic that does not
// exist) that says its Kind: KindOf reads it as it reads an *Error.
type Classified interface {
	error
	ErrorKind() Kind
}

// KindOf returns the outermost Kind found in err's chain (an *Error, or a Classified error),
// KindError when none is.
func KindOf(err error) Kind {
	var k Classified
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	return KindError
}

// ErrorKind is e's Kind: an *Error is Classified.
func (e *Error) ErrorKind() Kind { return e.Kind }

// Stopped names what ended an action part-way, for what it did before ("deleted 40 markers
// before the interruption"): the interruption when err is one (KindInterrupted, or the
// cancellation SIGINT and SIGTERM cause), else the failure.
func Stopped(err error) string {
	if KindOf(err) == KindInterrupted || errors.Is(err, context.Canceled) {
		return "the interruption"
	}
	return "the failure"
}
