// Package p has one exported feature of each kind, for TestFeatures.
package p

import (
	"context"
	"io"
	"time"
)

// Untyped and typed constants, their values.
const (
	Big           = 1 << 70
	Pi            = 3.14159265358979323846264338327950288419716939937510582097494459
	Name          = "p"
	Answer        = 42
	Timeout       = 3 * time.Second
	First   Level = iota
	Second
	internal = 1
)

// Deprecated: use Answer.
const Old = 41

// Level is a named basic type with methods.
type Level uint8

func (l Level) String() string { return "" }

func (l *Level) Set(s string) error { return nil }

// Vars.
var (
	Default = &Config{}
	Hook    func(context.Context, ...any) error
	ch      chan int
)

// Config is a struct with fields, an embedded type and an unexported field.
type Config struct {
	io.Reader
	*Level
	Name   string
	Tags   map[string][]byte
	Events <-chan Event
	Nested struct{ A int }
	Done   chan struct{}
	// Deprecated: use Name.
	Label   string
	private int
}

// Event is what flows.
type Event struct{ ID string }

// Handler is an interface with an embedded interface.
type Handler interface {
	io.Closer
	Handle(ctx context.Context, e *Event) (bool, error)
}

// Sealed has an unexported method: only p implements it.
type Sealed interface {
	Seal()
	sealed()
}

// Empty is the empty interface.
type Empty interface{}

// Number is a constraint.
type Number interface {
	~int | ~int64 | float64
}

// Pair is generic.
type Pair[K comparable, V any] struct {
	Key K
	Val V
}

// Swap is a method of a generic type.
func (p Pair[K, V]) Swap() Pair[K, V] { return p }

// Sum is a generic function.
func Sum[T Number](xs ...T) T { var s T; return s }

// Alias is an alias.
type Alias = Event

// New returns a Config.
//
// Deprecated: use Default.
func New(name string, opts ...func(*Config)) (*Config, error) { return nil, nil }

func unexported() {}

// Closers takes an unnamed interface that embeds one.
func Closers(c interface {
	io.Closer
	Name() string
}) {
}
