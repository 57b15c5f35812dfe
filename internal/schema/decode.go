package schema

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// Format is the schema language of a decoded payload. Its values are stable.
type Format string

// The formats a registry serves.
const (
	FormatAvro     Format = "avro"
	FormatProtobuf Format = "protobuf"
	FormatJSON     Format = "json"
)

// Problem classes a payload that did not decode. Its values are stable.
type Problem string

const (
	// ProblemNoRegistry: the payload is framed and no registry is configured.
	ProblemNoRegistry Problem = "no_registry"
	// ProblemUnknownSchema: the registry does not know the schema the payload names.
	ProblemUnknownSchema Problem = "unknown_schema"
	// ProblemUnavailable: the registry did not answer (down, timed out, a server error).
	ProblemUnavailable Problem = "registry_unavailable"
	// ProblemDenied: the registry refused the credentials (HTTP 401 or 403).
	ProblemDenied Problem = "registry_denied"
	// ProblemInvalidSchema: the registry's schema does not parse or compile.
	ProblemInvalidSchema Problem = "invalid_schema"
	// ProblemMismatch: the payload does not match its schema.
	ProblemMismatch Problem = "mismatch"
)

// Error is a payload that did not decode: which payload, which schema, which cause.
type Error struct {
	Problem Problem
	Key     bool // the record's key, not its value
	Ref     Ref
	Err     error
}

func (e *Error) Error() string {
	what := "value"
	if e.Key {
		what = "key"
	}
	return fmt.Sprintf("%s schema %s: %s", what, e.Ref, redact.Text(e.Err.Error()))
}

func (e *Error) Unwrap() error { return e.Err }

// Registry reports whether the failure is the registry's rather than the payload's: one that
// is down, or one that refused the credentials. A command that cannot read what it was asked
// without the payload fails with it (exit 4, docs/design.md §3.6); one that only shows
// payloads warns and shows the bytes. No registry configured is not one: that is a problem of
// the framed record (bytes that only look framed must not stop a reader), ProblemNoRegistry.
func (e *Error) Registry() bool {
	switch e.Problem {
	case ProblemUnavailable, ProblemDenied:
		return true
	}
	return false
}

// Kinded is the error with its exit code's kind: a registry that is down or refused the
// credentials is a connect error, no registry a usage error, anything else as it is.
func (e *Error) Kinded() error {
	switch e.Problem {
	case ProblemUnavailable, ProblemDenied:
		return fwerr.Connect(e)
	case ProblemNoRegistry:
		return fwerr.Wrap(fwerr.KindUsage, e)
	}
	return e
}

// Payload is one framed key or value, decoded as far as it went.
type Payload struct {
	Ref
	// Format is the schema's language, known once the registry answered.
	Format Format `json:"format,omitempty"`
	// Subject is the schema's subject, when the registry said it.
	SchemaSubject string `json:"schema_subject,omitempty"`
	// Message is the Protobuf message's full name and Indexes its message-index path.
	Message string `json:"message,omitempty"`
	Indexes []int  `json:"message_indexes,omitempty"`
	// Decoded is the payload as JSON: an Avro or Protobuf value rendered, a JSON Schema
	// payload as it is. Nil when it did not decode.
	Decoded json.RawMessage `json:"decoded,omitempty"`
	// Problem and Error say why it did not decode; empty when it did or no decoding was tried.
	Problem Problem `json:"problem,omitempty"`
	Error   string  `json:"error,omitempty"`

	err *Error
}

// Err is the payload's decoding error, nil when it decoded or was not decoded.
func (p *Payload) Err() *Error {
	if p == nil {
		return nil
	}
	return p.err
}

// Slim is the payload without its decoded content: what names its schema (for aggregates
// that keep many). Nil for nil.
func (p *Payload) Slim() *Payload {
	if p == nil {
		return nil
	}
	return &Payload{Ref: p.Ref, Format: p.Format, SchemaSubject: p.SchemaSubject, Message: p.Message, Problem: p.Problem}
}

// Label is the payload's short form for a table cell: "avro:42", "confluent:42" before the
// registry answered.
func (p *Payload) Label() string {
	if p == nil {
		return ""
	}
	f := string(p.Format)
	if f == "" {
		f = string(p.Framing)
	}
	switch {
	case p.ID > 0:
		return fmt.Sprintf("%s:%d", f, p.ID)
	case p.GUID != "":
		return f + ":" + p.GUID
	case p.Subject != "":
		return fmt.Sprintf("%s:%s/%d", f, p.Subject, p.Version)
	}
	return f
}

// Config is how a Decoder reaches its registry. A zero URL is no registry: payloads are
// detected, not decoded.
type Config struct {
	URL      string
	Username string
	Password string
	Token    string
	TLS      *tls.Config
	// Timeout bounds each registry request; 0 is DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds one registry request when Config gives none.
const DefaultTimeout = 10 * time.Second

// Decoder decodes framed payloads, fetching each schema once. Safe for concurrent use.
type Decoder struct {
	cl  *sr.Client
	url string

	mu      sync.Mutex
	schemas map[string]*entry
	// down is the first failure of the registry itself (unavailable or denied): after it the
	// registry is not asked again in this run, so a scan with it down does not wait once per
	// record.
	down *Error
	// problems are the registry's failures met in this run, each once (Problems).
	problems []*Error
	seen     map[string]bool
}

type entry struct {
	s   *compiled
	err *Error
}

type compiled struct {
	format  Format
	subject string
	avro    avro.Schema
	proto   linker.File
	// protoTypes resolves the messages and extensions of proto and its imports: an Any's
	// content is rendered through it.
	protoTypes protoTypes
}

// protoTypes resolves types in a schema's file and its imports first, then among the types
// linked into fieldwork (the well-known types an Any may hold without the schema importing
// them).
type protoTypes struct{ file linker.Resolver }

func (r protoTypes) FindMessageByName(n protoreflect.FullName) (protoreflect.MessageType, error) {
	if t, err := r.file.FindMessageByName(n); err == nil {
		return t, nil
	}
	return protoregistry.GlobalTypes.FindMessageByName(n)
}

func (r protoTypes) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if t, err := r.file.FindMessageByURL(url); err == nil {
		return t, nil
	}
	return protoregistry.GlobalTypes.FindMessageByURL(url)
}

func (r protoTypes) FindExtensionByName(n protoreflect.FullName) (protoreflect.ExtensionType, error) {
	if t, err := r.file.FindExtensionByName(n); err == nil {
		return t, nil
	}
	return protoregistry.GlobalTypes.FindExtensionByName(n)
}

func (r protoTypes) FindExtensionByNumber(m protoreflect.FullName, n protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	if t, err := r.file.FindExtensionByNumber(m, n); err == nil {
		return t, nil
	}
	return protoregistry.GlobalTypes.FindExtensionByNumber(m, n)
}

// New returns a decoder on the registry c names; a zero c.URL gives one that only detects.
func New(c Config) (*Decoder, error) {
	d := &Decoder{schemas: map[string]*entry{}}
	if c.URL == "" {
		return d, nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = c.TLS
	opts := []sr.ClientOpt{sr.URLs(c.URL), sr.HTTPClient(&http.Client{Timeout: timeout, Transport: tr}), sr.UserAgent("fieldwork")}
	switch {
	case c.Username != "":
		opts = append(opts, sr.BasicAuth(c.Username, c.Password))
	case c.Token != "":
		opts = append(opts, sr.BearerToken(c.Token))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fwerr.Usagef("schema registry %s: %s", redact.URL(c.URL), redact.Text(err.Error()))
	}
	d.cl, d.url = cl, c.URL
	return d, nil
}

// Configured reports whether the decoder has a registry to ask.
func (d *Decoder) Configured() bool { return d != nil && d.cl != nil }

// URL is the registry's address as it may be shown.
func (d *Decoder) URL() string {
	if !d.Configured() {
		return ""
	}
	return redact.URL(d.url)
}

// Record is a record's two payloads, nil where the bytes are not framed.
type Record struct {
	Key   *Payload `json:"key,omitempty"`
	Value *Payload `json:"value,omitempty"`
}

// Err is the first decoding error of the record's payloads (the value's first).
func (r Record) Err() *Error {
	if e := r.Value.Err(); e != nil {
		return e
	}
	return r.Key.Err()
}

// Record detects and decodes a record's key and value. A nil Decoder detects only.
func (d *Decoder) Record(ctx context.Context, headers []envelope.Header, key, value []byte) Record {
	return Record{Key: d.Decode(ctx, headers, key, true), Value: d.Decode(ctx, headers, value, false)}
}

// Decode detects the framing of b (a key when key is true) and, with a registry, decodes it.
// It returns nil when b is not framed. A failure is in the Payload (Err), never a panic.
func (d *Decoder) Decode(ctx context.Context, headers []envelope.Header, b []byte, key bool) *Payload {
	ref, rest, ok := Detect(headers, b, key)
	if !ok {
		return nil
	}
	p := &Payload{Ref: ref}
	fail := func(problem Problem, err error) *Payload {
		p.err = &Error{Problem: problem, Key: key, Ref: ref, Err: err}
		p.Problem, p.Error = problem, p.err.Error()
		return p
	}
	if !d.Configured() {
		p.err = &Error{Problem: ProblemNoRegistry, Key: key, Ref: ref, Err: errors.New("no schema registry configured to read it: pass --schema-registry URL (or set FIELDWORK_SCHEMA_REGISTRY, or a context's schema_registry)")}
		d.note(p.err)
		return p
	}
	s, serr := d.schema(ctx, ref)
	if serr != nil {
		e := *serr
		e.Key, e.Ref = key, ref
		p.err = &e
		p.Problem, p.Error = e.Problem, e.Error()
		if e.Registry() {
			d.note(p.err)
		}
		return p
	}
	p.Format, p.SchemaSubject = s.format, s.subject
	var err error
	switch s.format {
	case FormatAvro:
		p.Decoded, err = decodeAvro(s.avro, rest)
	case FormatProtobuf:
		err = decodeProtobuf(s, ref, rest, p)
	case FormatJSON:
		if !json.Valid(rest) {
			err = errors.New("json: the payload is not valid JSON")
		} else {
			p.Decoded = compactJSON(rest)
		}
	}
	if err != nil {
		return fail(ProblemMismatch, err)
	}
	return p
}

// decodeAvro renders the Avro value rest holds as JSON. An error means the payload does not
// match the schema.
func decodeAvro(schema avro.Schema, rest []byte) (json.RawMessage, error) {
	// A decoder on a reader, not avro.Unmarshal: on a byte slice a short payload decodes to
	// nil fields without an error.
	var v any
	if err := avro.NewDecoderForSchema(schema, bytes.NewReader(rest)).Decode(&v); err != nil {
		// hamba's message names the Go type at each level ("map[string]interface {}: …").
		return nil, errors.New("avro: " + strings.TrimPrefix(strings.ReplaceAll(err.Error(), "map[string]interface {}: ", ""), "avro: "))
	}
	if enc, err := avro.Marshal(schema, v); err == nil && len(enc) < len(rest) {
		return nil, fmt.Errorf("avro: %d bytes after the value", len(rest)-len(enc))
	}
	out, err := json.Marshal(plainAvro(schema, v))
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	return out, nil
}

// decodeProtobuf finds the message the indexes name (in the payload, or in the header for
// header framing) and renders the message rest holds as JSON into p. An error means the
// payload does not match the schema.
func decodeProtobuf(s *compiled, ref Ref, rest []byte, p *Payload) error {
	idxBytes := rest
	if ref.Framing == FramingHeader {
		idxBytes = ref.indexes
	}
	indexes, after, err := new(sr.ConfluentHeader).DecodeIndex(idxBytes, 64)
	if err != nil {
		if ref.Framing == FramingHeader && len(idxBytes) == 0 {
			indexes, after, err = []int{0}, nil, nil
		} else if ref.Framing == FramingDataSchema {
			indexes, after, err = []int{0}, rest, nil
		} else {
			return fmt.Errorf("protobuf message indexes: %w", err)
		}
	}
	if ref.Framing != FramingConfluent {
		after = rest
	}
	p.Indexes = indexes
	md, err := messageAt(s.proto, indexes)
	if err != nil {
		return err
	}
	p.Message = string(md.FullName())
	m := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{Resolver: s.protoTypes}).Unmarshal(after, m); err != nil {
		return fmt.Errorf("protobuf %s: %w", md.FullName(), err)
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true, Resolver: s.protoTypes}.Marshal(m)
	if err != nil {
		return fmt.Errorf("protobuf %s: %w", md.FullName(), err)
	}
	p.Decoded = compactJSON(out)
	return nil
}

// note remembers a failure of the registry itself, once per problem.
func (d *Decoder) note(e *Error) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	if d.seen[string(e.Problem)] {
		return
	}
	d.seen[string(e.Problem)] = true
	d.problems = append(d.problems, e)
}

// Retry forgets that the registry was down or refused the credentials, so that the next
// payload asks it again: a consumer that waits out a registry outage calls it before each
// retry. Schemas already fetched, and schemas the registry said it does not know, are kept.
func (d *Decoder) Retry() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = nil
}

// Problems are the registry's failures this decoder met (no registry for a framed payload,
// the registry unavailable, the credentials refused), the first of each, in the order met.
// A command that went on without the payloads warns with them; refused credentials fail it
// (docs/design.md §3.6).
func (d *Decoder) Problems() []*Error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*Error(nil), d.problems...)
}

// messageAt finds the message a Protobuf message-index path names: the first index among the
// file's top-level messages, each next one among the previous message's nested messages.
func messageAt(f linker.File, indexes []int) (protoreflect.MessageDescriptor, error) {
	msgs := f.Messages()
	var md protoreflect.MessageDescriptor
	for i, ix := range indexes {
		if ix < 0 || ix >= msgs.Len() {
			return nil, fmt.Errorf("protobuf message index %v: no message %d at depth %d (%d there)", indexes, ix, i, msgs.Len())
		}
		md = msgs.Get(ix)
		msgs = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("protobuf message index %v: empty", indexes)
	}
	return md, nil
}

// schema fetches and compiles the schema ref names, once per decoder.
func (d *Decoder) schema(ctx context.Context, ref Ref) (*compiled, *Error) {
	key := ref.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.schemas[key]; ok {
		return e.s, e.err
	}
	if d.down != nil {
		return nil, d.down
	}
	s, serr := d.fetch(ctx, ref)
	if serr != nil && (serr.Problem == ProblemUnavailable || serr.Problem == ProblemDenied) {
		if ctx.Err() == nil {
			d.down = serr
		}
		return nil, serr
	}
	d.schemas[key] = &entry{s: s, err: serr}
	return s, serr
}

func (d *Decoder) fetch(ctx context.Context, ref Ref) (*compiled, *Error) {
	var sch sr.Schema
	var subject string
	var err error
	switch {
	case ref.ID > 0:
		sch, err = d.cl.SchemaByID(ctx, ref.ID)
	case ref.GUID != "":
		var ss sr.SubjectSchema
		ss, err = d.cl.SchemaByGUID(ctx, ref.GUID)
		sch, subject = ss.Schema, ss.Subject
	default:
		var ss sr.SubjectSchema
		ss, err = d.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		sch, subject = ss.Schema, ss.Subject
	}
	if err != nil {
		return nil, d.classify(err)
	}
	c := &compiled{subject: subject}
	switch sch.Type {
	case sr.TypeAvro:
		c.format = FormatAvro
		cache := &avro.SchemaCache{}
		if err := d.avroReferences(ctx, sch.References, cache, map[string]bool{}); err != nil {
			return nil, err
		}
		if c.avro, err = avro.ParseWithCache(sch.Schema, "", cache); err != nil {
			return nil, &Error{Problem: ProblemInvalidSchema, Err: fmt.Errorf("avro schema: %w", err)}
		}
	case sr.TypeProtobuf:
		c.format = FormatProtobuf
		files := map[string]protocompile.SearchResult{}
		if err := d.protoReferences(ctx, sch.References, files); err != nil {
			return nil, err
		}
		const main = "fieldwork-registry-schema.proto"
		res, err := protoSource(main, sch.Schema)
		if err != nil {
			return nil, &Error{Problem: ProblemInvalidSchema, Err: fmt.Errorf("protobuf schema: %w", err)}
		}
		files[main] = res
		comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			if r, ok := files[path]; ok {
				return r, nil
			}
			return protocompile.SearchResult{}, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
		}))}
		out, err := comp.Compile(ctx, main)
		if err != nil {
			return nil, &Error{Problem: ProblemInvalidSchema, Err: fmt.Errorf("protobuf schema: %w", err)}
		}
		c.proto, c.protoTypes = out[0], protoTypes{linker.ResolverFromFile(out[0])}
	case sr.TypeJSON:
		c.format = FormatJSON
	default:
		return nil, &Error{Problem: ProblemInvalidSchema, Err: fmt.Errorf("schema type %q is not one fieldwork reads", sch.Type)}
	}
	return c, nil
}

// avroReferences parses the named types a schema references into cache, depth first.
func (d *Decoder) avroReferences(ctx context.Context, refs []sr.SchemaReference, cache *avro.SchemaCache, seen map[string]bool) *Error {
	for _, r := range refs {
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		ss, err := d.cl.SchemaByVersion(ctx, r.Subject, r.Version)
		if err != nil {
			return d.referenceError(r, err)
		}
		if err := d.avroReferences(ctx, ss.References, cache, seen); err != nil {
			return err
		}
		if _, err := avro.ParseWithCache(ss.Schema.Schema, "", cache); err != nil {
			return &Error{Problem: ProblemInvalidSchema, Err: fmt.Errorf("avro reference %s (subject %s version %d): %w", r.Name, r.Subject, r.Version, err)}
		}
	}
	return nil
}

// protoReferences fetches the files a Protobuf schema imports into files, by import name, each
// in the form the registry holds it (protoSource).
func (d *Decoder) protoReferences(ctx context.Context, refs []sr.SchemaReference, files map[string]protocompile.SearchResult) *Error {
	for _, r := range refs {
		if _, ok := files[r.Name]; ok {
			continue
		}
		ss, err := d.cl.SchemaByVersion(ctx, r.Subject, r.Version)
		if err != nil {
			return d.referenceError(r, err)
		}
		res, perr := protoSource(r.Name, ss.Schema.Schema)
		if perr != nil {
			return &Error{Problem: ProblemInvalidSchema, Err: fmt.Errorf("protobuf reference %s (subject %s version %d): %w", r.Name, r.Subject, r.Version, perr)}
		}
		files[r.Name] = res
		if err := d.protoReferences(ctx, ss.References, files); err != nil {
			return err
		}
	}
	return nil
}

// protoSource is a registered Protobuf schema as the compiler takes it, under the import name
// name, in either form a registry holds (docs/design.md §3.6): .proto text, or a serialized
// FileDescriptorProto in standard base64, the form Confluent's serializers register. A schema
// is the latter when it is nothing but base64 (text always holds a space, a semicolon or a
// brace) and decodes to a descriptor; base64 that is no descriptor is an error, not text.
func protoSource(name, schema string) (protocompile.SearchResult, error) {
	text := strings.TrimSpace(schema)
	raw, err := base64.StdEncoding.DecodeString(text)
	if text == "" || err != nil {
		return protocompile.SearchResult{Source: strings.NewReader(schema)}, nil
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, fd); err != nil {
		return protocompile.SearchResult{}, fmt.Errorf("base64 that is not a serialized FileDescriptorProto: %w", err)
	}
	// The compiler wants the descriptor under the name it was asked for: the import name (the
	// reference's name), which a registry does not require the descriptor's own to be.
	fd.Name = proto.String(name)
	for _, m := range fd.GetMessageType() {
		defaultJSONNames(m)
	}
	for _, f := range fd.GetExtension() {
		defaultJSONName(f)
	}
	return protocompile.SearchResult{Proto: fd}, nil
}

// defaultJSONNames gives the fields of m and of its nested messages that have no json_name
// their default one, as protoc writes it into the descriptors it emits: descriptors built at
// run time (Python's descriptor pool) and those of generated Python code leave it out, and the
// compiler would take the absent name for a custom "" that every field shares.
func defaultJSONNames(m *descriptorpb.DescriptorProto) {
	for _, f := range m.GetField() {
		defaultJSONName(f)
	}
	for _, f := range m.GetExtension() {
		defaultJSONName(f)
	}
	for _, n := range m.GetNestedType() {
		defaultJSONNames(n)
	}
}

// defaultJSONName sets f's json_name, when it has none, to protoc's default: the name with
// each underscore dropped and the letter after it upper-cased.
func defaultJSONName(f *descriptorpb.FieldDescriptorProto) {
	if f.JsonName != nil {
		return
	}
	var b strings.Builder
	upper := false
	for _, r := range f.GetName() {
		switch {
		case r == '_':
			upper = true
		case upper && 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			upper = false
		default:
			b.WriteRune(r)
			upper = false
		}
	}
	f.JsonName = proto.String(b.String())
}

func (d *Decoder) referenceError(r sr.SchemaReference, err error) *Error {
	e := d.classify(err)
	if e.Problem == ProblemUnknownSchema {
		e.Problem = ProblemInvalidSchema
	}
	e.Err = fmt.Errorf("reference %s (subject %s version %d): %w", r.Name, r.Subject, r.Version, e.Err)
	return e
}

// classify makes a registry client error an *Error: 404 is an unknown schema, 401 and 403
// refused credentials, anything else (no answer, a server error) the registry unavailable.
func (d *Decoder) classify(err error) *Error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		msg := strings.TrimSpace(re.Message)
		if msg == "" {
			msg = http.StatusText(re.StatusCode)
		}
		switch {
		case re.StatusCode == http.StatusNotFound:
			return &Error{Problem: ProblemUnknownSchema, Err: fmt.Errorf("not found in the schema registry %s (HTTP 404: %s)", d.URL(), msg)}
		case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
			return &Error{Problem: ProblemDenied, Err: fmt.Errorf("the schema registry %s refused the credentials (HTTP %d): check the user and password or token", d.URL(), re.StatusCode)}
		}
		return &Error{Problem: ProblemUnavailable, Err: fmt.Errorf("the schema registry %s answered HTTP %d: %s", d.URL(), re.StatusCode, msg)}
	}
	return &Error{Problem: ProblemUnavailable, Err: fmt.Errorf("the schema registry %s did not answer: %s", d.URL(), unwrapURL(err))}
}

// unwrapURL drops net/url's `Get "…": ` prefix (the request's URL, which the message names
// already) from a transport error.
func unwrapURL(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		if _, ok := err.(interface{ Timeout() bool }); ok {
			return u.Error()
		}
		err = u
	}
}

// plainAvro makes a decoded Avro value plain JSON, guided by its schema: a union's value is
// given as itself, not as hamba's {"type name": value} wrapping (a ["null","string"] field is
// "x" or null), bytes and fixed as strings of their bytes, records, arrays and maps likewise.
func plainAvro(s avro.Schema, v any) any {
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for _, f := range s.Fields() {
			if fv, ok := m[f.Name()]; ok {
				m[f.Name()] = plainAvro(f.Type(), fv)
			}
		}
		return m
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return v
		}
		for i, e := range a {
			a[i] = plainAvro(s.Items(), e)
		}
		return a
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for k, e := range m {
			m[k] = plainAvro(s.Values(), e)
		}
		return m
	case *avro.UnionSchema:
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return plainBytes(v)
		}
		for name, inner := range m {
			for _, t := range s.Types() {
				if unionName(t) == name {
					return plainAvro(t, inner)
				}
			}
		}
		return v
	case *avro.RefSchema:
		return plainAvro(s.Schema(), v)
	}
	return plainBytes(v)
}

// unionName is the key hamba wraps a union's value in: a named type's full name, else the
// type's name (array, map, …).
func unionName(t avro.Schema) string {
	if n, ok := t.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(t.Type())
}

func plainBytes(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return bytes.Clone(b)
	}
	return buf.Bytes()
}
