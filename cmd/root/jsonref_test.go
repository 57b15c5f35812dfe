package root_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/golden"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// jsonRun is one command line of the JSON reference: what it documents (the section's
// title, several runs may feed one section) and its arguments, run with -o json.
type jsonRun struct {
	section string
	args    []string
}

// jsonRuns are the command lines whose JSON docs/json.md documents, in the order they run
// against one `fieldwork dev` sandbox: reads first, then the actions (plans, then an
// executed replay), then what the actions left to read. {run} is the replay's run id.
var jsonRuns = []jsonRun{
	{"version", []string{"version"}},
	{"context list", []string{"context", "list"}},
	{"db status", []string{"db", "status"}},
	{"db migrate", []string{"db", "migrate"}},
	{"inspect topic", []string{"inspect", "topic", "tasks"}},
	{"inspect topic", []string{"inspect", "topic", "tasks.dlq"}},
	{"inspect validate", []string{"inspect", "validate", "tasks"}},
	{"inspect aggregate", []string{"inspect", "aggregate", "tasks", "task-0016"}},
	{"inspect record", []string{"inspect", "record", "tasks/0/14"}},
	{"inspect record", []string{"inspect", "record", "tasks/0/0"}},
	{"inspect record", []string{"inspect", "record", "tasks.avro/0/0", "--schema-registry", "{registry}"}},
	{"inspect records", []string{"inspect", "records", "tasks", "--last", "2"}},
	{"inspect records", []string{"inspect", "records", "tasks", "--partition", "0", "--start-offset", "13", "--end-offset", "14", "--last", "0"}},
	{"dlq list", []string{"dlq", "list", "--consumer", "task-projection"}},
	{"dlq show", []string{"dlq", "show", "tasks.dlq/0/0", "--consumer", "task-projection"}},
	{"dlq stats", []string{"dlq", "stats"}},
	{"dlq stats", []string{"dlq", "stats", "--by", "fingerprint"}},
	{"groups list", []string{"groups", "list"}},
	{"groups describe", []string{"groups", "describe", "task-projection", "--interval", "0"}},
	{"groups describe", []string{"groups", "describe", "task-workers", "--interval", "0"}},
	{"groups check", []string{"groups", "check", "task-workers"}},
	{"dlq list", []string{"dlq", "list", "--topic", "dlq.task-workers"}},
	{"dlq show", []string{"dlq", "show", "dlq.task-workers/0/0"}},
	{"processed list", []string{"processed", "list"}},
	{"processed get", []string{"processed", "get", "{event}", "--consumer", "task-projection"}},
	{"processed stats", []string{"processed", "stats"}},
	{"processed check", []string{"processed", "check", "--topic", "tasks", "--consumer", "task-projection"}},
	{"replay", []string{"replay", "--topic", "tasks.dlq", "--dlq-reason", "rejected"}},
	{"replay", []string{"replay", "--topic", "tasks.dlq", "--dlq-reason", "rejected", "--execute", "--yes", "--reason", "projection 1.5 deployed"}},
	{"replay runs", []string{"replay", "runs"}},
	{"replay show", []string{"replay", "show", "{run}"}},
	{"replay", []string{"replay", "--topic", "tasks.dlq", "--dlq-reason", "rejected", "--include-replayed", "--execute", "--yes", "--workers", "--reason", "shared by workers"}},
	{"replay resume --worker", []string{"replay", "resume", "{run}", "--worker", "--execute"}},
	{"replay show", []string{"replay", "show", "{run}"}},
	{"processed prune", []string{"processed", "prune", "--consumer", "task-projection", "--older-than", "1h", "--topic", "tasks"}},
	{"processed forget", []string{"processed", "forget", "{event}", "--consumer", "task-projection"}},
	{"groups skip", []string{"groups", "skip", "task-projection", "--topic", "tasks", "--partition", "0"}},
	{"groups reset", []string{"groups", "reset", "task-projection", "--topic", "tasks", "--to-earliest"}},
	{"groups reset", []string{"groups", "reset", "task-projection", "--topic", "tasks", "--to-earliest", "--execute", "--yes", "--reason", "rebuild the projection"}},
	{"groups skip", []string{"groups", "skip", "task-projection", "--topic", "tasks", "--partition", "0", "--execute", "--yes", "--reason", "poison"}},
	{"groups journal", []string{"groups", "journal"}},
	{"processed forget", []string{"processed", "forget", "{event}", "--consumer", "task-projection", "--execute", "--yes", "--reason", "reprocess"}},
	{"processed journal", []string{"processed", "journal"}},
	{"consume", []string{"consume", "--topic", "tasks", "--group", "task-projection", "--handler", "projection", "--stop-when-idle", "2s"}},
}

// jsonMaps are the fields whose keys are values (a reason, a topic), not field names:
// documented as one field, their keys not. The members that carry a record's own data
// (output.JSONDataField) are documented so too.
var jsonMaps = []string{"dead_lettered_by_reason", "source_topic_ids", "record_limits"}

// jsonOpaque reports whether the value of the member named name is documented as a whole.
func jsonOpaque(name string) bool {
	return slices.Contains(jsonMaps, name) || output.JSONDataField(name)
}

// jsonAddress is a record address given as one string, which JSON output never does: a
// record is its fields topic, partition and offset.
var jsonAddress = regexp.MustCompile(`^[A-Za-z0-9._-]+/\d+/\d+$`)

// jsonRefPath is the reference; its generated part follows jsonRefMarker.
const (
	jsonRefPath   = "docs/json.md"
	jsonRefMarker = "<!-- The sections below are generated by TestJSONReference (cmd/root): go test ./cmd/root -run TestJSONReference -update -->\n"
)

// TestJSONReference runs every command of jsonRuns with -o json against `fieldwork dev` and
// compares the fields their output has with docs/json.md: a field not documented, or
// documented but absent from every run, fails the test (-update rewrites the generated part
// of the page); and every field name is one of the page's vocabulary.
func TestJSONReference(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	addr, devOut, devErr, _ := roottest.StartDev(t, ctx, "--dsn", dsn, "-o", "json")
	registry := regexp.MustCompile(`schema registry\s+(http://\S+)`).FindStringSubmatch(devErr.String())
	if addr == "" || registry == nil {
		t.Fatalf("no brokers or schema registry in the banner:\n%s", devErr.String())
	}
	env := map[string]string{"FIELDWORK_BROKERS": addr, "FIELDWORK_DSN": dsn, "USER": "tester"}
	fields := newFieldSet()
	var devV any
	if err := json.Unmarshal([]byte(devOut.String()), &devV); err != nil {
		t.Fatalf("dev -o json: %v\n%s", err, devOut.String())
	}
	fields.add("dev", "", devV)
	subst := map[string]string{"{registry}": registry[1]}
	for _, r := range jsonRuns {
		args := make([]string, 0, len(r.args)+2)
		for _, a := range r.args {
			if v, ok := subst[a]; ok {
				a = v
			}
			args = append(args, a)
		}
		res := roottest.Run(t, copyEnv(env), append(args, "-o", "json")...)
		if res.Code != 0 && res.Code != 3 {
			t.Fatalf("fieldwork %s -o json: exit %d\n%s", strings.Join(args, " "), res.Code, res.Stderr)
		}
		var v any
		if err := json.Unmarshal([]byte(res.Stdout), &v); err != nil {
			t.Fatalf("fieldwork %s -o json: not JSON: %v\n%s", strings.Join(args, " "), err, res.Stdout)
		}
		fields.add(r.section, "", v)
		learn(subst, r.section, v)
	}
	for _, p := range fields.problems {
		t.Error(p)
	}
	path := filepath.Join(testenv.ModuleRoot(t), jsonRefPath)
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(page), jsonRefMarker)
	if !ok {
		t.Fatalf("%s has no line %q", jsonRefPath, jsonRefMarker)
	}
	golden.Check(t, path, []byte(head+jsonRefMarker+fields.markdown()))
}

// learn keeps what later runs name: an event id with a marker, the replay's run id.
func learn(subst map[string]string, section string, v any) {
	switch section {
	case "processed list":
		if l, ok := v.([]any); ok && len(l) > 0 {
			subst["{event}"], _ = l[0].(map[string]any)["event_id"].(string)
		}
	case "replay":
		if m, ok := v.(map[string]any); ok {
			if id, ok := m["run_id"].(string); ok {
				subst["{run}"] = id
			}
		}
	}
}

func copyEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	return out
}

// fieldSet is what the runs showed: per section, each field's path (`a.b[].c`) and the JSON
// types seen there, in the order first seen; and the values that break the vocabulary's
// rules (a time not in its one form, an address as one string).
type fieldSet struct {
	sections []string
	paths    map[string][]string
	types    map[string]map[string]map[string]bool
	problems []string
}

func newFieldSet() *fieldSet {
	return &fieldSet{paths: map[string][]string{}, types: map[string]map[string]map[string]bool{}}
}

func (s *fieldSet) see(section, path, typ string) {
	if _, ok := s.types[section]; !ok {
		s.sections = append(s.sections, section)
		s.types[section] = map[string]map[string]bool{}
	}
	if _, ok := s.types[section][path]; !ok {
		s.paths[section] = append(s.paths[section], path)
		s.types[section][path] = map[string]bool{}
	}
	s.types[section][path][typ] = true
}

func (s *fieldSet) add(section, path string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if path != "" {
			s.see(section, path, "object")
			if jsonOpaque(lastName(path)) {
				return
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			s.add(section, p, v[k])
		}
	case []any:
		if path != "" {
			s.see(section, path, "array")
			if jsonOpaque(lastName(path)) {
				return
			}
		}
		for _, e := range v {
			s.add(section, path+"[]", e)
		}
	case string:
		s.see(section, path, "string")
		name := lastName(path)
		if strings.Contains(path, "headers[]") {
			return // a record's headers: its own bytes, as they are
		}
		if _, err := time.Parse(time.RFC3339Nano, v); err == nil && v != timeForm(v) {
			s.problems = append(s.problems, fmt.Sprintf("%s: %s = %q: a time not in its one form (%s)", section, path, v, timespec.TimeLayout))
		} else if err == nil && !output.IsTimeField(name) {
			s.problems = append(s.problems, fmt.Sprintf("%s: %s = %q: a time in a field whose name does not say so (output.IsTimeField)", section, path, v))
		}
		if jsonAddress.MatchString(v) {
			s.problems = append(s.problems, fmt.Sprintf("%s: %s = %q: a record address as one string; give topic, partition and offset", section, path, v))
		}
	case float64:
		s.see(section, path, "number")
	case bool:
		s.see(section, path, "boolean")
	case nil:
		s.see(section, path, "null")
	}
}

// timeForm is v, an RFC 3339 time, in the one form JSON output gives times.
func timeForm(v string) string {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return timespec.FormatTime(t)
}

func lastName(path string) string {
	path = strings.TrimSuffix(path, "[]")
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return strings.TrimSuffix(path[i+1:], "[]")
	}
	return path
}

func (s *fieldSet) markdown() string {
	var b bytes.Buffer
	for _, sec := range s.sections {
		fmt.Fprintf(&b, "\n### fieldwork %s\n\n| field | type |\n|---|---|\n", sec)
		paths := slices.Clone(s.paths[sec])
		sort.Strings(paths)
		for _, p := range paths {
			types := make([]string, 0, 2)
			for typ := range s.types[sec][p] {
				types = append(types, typ)
			}
			sort.Strings(types)
			fmt.Fprintf(&b, "| `%s` | %s |\n", p, strings.Join(types, " or "))
		}
	}
	return b.String()
}
