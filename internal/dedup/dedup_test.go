package dedup

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestSplitDSN(t *testing.T) {
	cases := []struct{ in, driver, rest string }{
		{"sqlite:./x.db", driverSQLite, "./x.db"},
		{"sqlite:///abs/x.db", driverSQLite, "/abs/x.db"},
		{"sqlite://rel/x.db?_pragma=busy_timeout(100)", driverSQLite, "rel/x.db?_pragma=busy_timeout(100)"},
		{"SQLITE:x.db", driverSQLite, "x.db"},
		{"postgres://u@h/db", driverPostgres, "postgres://u@h/db"},
		{"postgresql://u@h/db", driverPostgres, "postgresql://u@h/db"},
		{"host=h user=u", driverPostgres, "host=h user=u"},
	}
	for _, c := range cases {
		d, rest, err := splitDSN(c.in)
		if err != nil || d != c.driver || rest != c.rest {
			t.Errorf("splitDSN(%q) = %q, %q, %v", c.in, d, rest, err)
		}
	}
	for _, bad := range []string{"", "   ", "mysql://u:secret@h/db", "just-a-word", "sqlite:", "sqlite::memory:"} {
		_, _, err := splitDSN(bad)
		var ie *InvalidDSNError
		if !errors.As(err, &ie) || strings.Contains(err.Error(), "secret") {
			t.Errorf("splitDSN(%q): %v", bad, err)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	n, err := Options{}.names()
	if err != nil || n.Schema != "fieldwork" || n.Table != "processed_events" || n.Columns != DefaultColumns {
		t.Fatalf("defaults: %+v %v", n, err)
	}
	ok := []Options{{Schema: "_x"}, {Table: strings.Repeat("t", 63)}, {Schema: "Public", Table: "Processed_Events_2"}}
	for _, o := range ok {
		if _, err := o.names(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	bad := []Options{
		{Schema: "a-b"}, {Schema: "1a"}, {Table: strings.Repeat("t", 64)}, {Table: `a"b`}, {Table: "a.b"},
		{Table: "ä"}, {Columns: ColumnNames{Topic: "to pic"}}, {Columns: ColumnNames{Offset: "topic"}},
	}
	for _, o := range bad {
		_, err := o.names()
		var ie *InvalidIdentifierError
		if !errors.As(err, &ie) {
			t.Errorf("%+v: %v, want *InvalidIdentifierError", o, err)
		}
	}
}

func TestOpenRefusesBeforeConnecting(t *testing.T) {
	_, err := Open(context.Background(), "postgres://u:secret@192.0.2.1:5432/db", Options{Schema: "x;y"})
	var ie *InvalidIdentifierError
	if !errors.As(err, &ie) {
		t.Fatalf("%v", err)
	}
	_, err = Open(context.Background(), "redis://u:secret@h", Options{})
	var de *InvalidDSNError
	if !errors.As(err, &de) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("%v", err)
	}
}

func TestEventKey(t *testing.T) {
	short := strings.Repeat("a", MaxInlineEventIDBytes)
	if EventKey(short) != short {
		t.Fatal("an id at the limit was hashed")
	}
	long := short + "b"
	k := EventKey(long)
	if !strings.HasPrefix(k, "fw-sha256:") || len(k) != len("fw-sha256:")+64 || EventKey(long+"c") == k {
		t.Fatalf("EventKey of a long id: %q", k)
	}
}

func TestDedupeMarkers(t *testing.T) {
	order, sorted, err := dedupeMarkers([]Marker{{EventID: "c", Offset: 1}, {EventID: "a"}, {EventID: "c", Offset: 2}, {EventID: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0].id != "c" || order[1].id != "a" || order[2].id != "b" {
		t.Fatalf("order %+v", order)
	}
	if sorted[0].EventID != "a" || sorted[2].EventID != "c" || sorted[2].Offset != 1 {
		t.Fatalf("sorted %+v: want key order, first occurrence kept", sorted)
	}
}

func TestVersionMismatch(t *testing.T) {
	older := &VersionMismatchError{Table: "t", Current: 1, Latest: 2}
	newer := &VersionMismatchError{Table: "t", Current: 3, Latest: 2}
	if !errors.Is(older, ErrNotMigrated) || errors.Is(newer, ErrNotMigrated) {
		t.Fatal("only an older store matches ErrNotMigrated")
	}
	if !strings.Contains(older.Error(), "fieldwork db migrate") || !strings.Contains(newer.Error(), "upgrade fieldwork") {
		t.Fatalf("%v / %v", older, newer)
	}
	if err := (MigrationStatus{Table: "t", Current: 0, Latest: 1}).Err(); !errors.Is(err, ErrNotMigrated) {
		t.Fatal(err)
	}
	if err := (MigrationStatus{Table: "t", Current: 1, Latest: 1}).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationState: where a store stands against the binary, the one rule `db status`
// shows.
func TestMigrationState(t *testing.T) {
	pending := []MigrationStep{{Version: 6, Name: "next"}}
	for _, c := range []struct {
		st   MigrationStatus
		want string
	}{
		{MigrationStatus{Current: 0, Latest: 6, Pending: pending}, StateNotMigrated},
		{MigrationStatus{Current: 5, Latest: 6, Pending: pending}, StatePending},
		{MigrationStatus{Current: 6, Latest: 6}, StateUpToDate},
		{MigrationStatus{Current: 7, Latest: 6}, StateNewer},
		{MigrationStatus{Current: 7, Latest: 6, Pending: pending}, StateNewer}, // newer wins over a gap
	} {
		if got := c.st.State(); got != c.want {
			t.Errorf("%+v: state %s, want %s", c.st, got, c.want)
		}
	}
}

func TestPresetNamesWhatTheCallerLeftDefault(t *testing.T) {
	n, err := Options{Preset: "cap", Columns: DefaultColumns, Schema: DefaultSchema, Table: DefaultTable}.names()
	if err != nil || n.Schema != "cap" || n.Table != "received" || n.Journal != DefaultSchema || n.Columns.Consumer != "Group" ||
		n.Columns.EventID != "Content" || n.Columns.EventIDPath != "Headers/cap-msg-id" || n.Columns.Topic != "Name" || n.Columns.StatusFailed != "Failed" {
		t.Fatalf("cap: %+v %v", n, err)
	}
	// Given names win; a caller's event-id column holds the id itself; the journal stays in
	// fieldwork's own schema, never the library's, also when --schema names it.
	c := DefaultColumns
	c.EventID = "MessageId"
	n, err = Options{Preset: "cap", Columns: c, Schema: "orders"}.names()
	if err != nil || n.Schema != "orders" || n.JournalSchema() != DefaultSchema || n.Columns.EventID != "MessageId" || n.Columns.EventIDPath != "" {
		t.Fatalf("cap with --column-event-id: %+v %v", n, err)
	}
	n, err = Options{Preset: "cap", Schema: "cap"}.names()
	if err != nil || n.Schema != "cap" || n.JournalSchema() != DefaultSchema || n.Library != "CAP" || n.Prefixed {
		t.Fatalf("cap with --schema cap: %+v %v", n, err)
	}
	// NServiceBus's table is found by its endpoint prefix unless --table names it.
	if n, err = (Options{Preset: "nservicebus"}).names(); err != nil || !n.Prefixed || n.Table != "OutboxData" || n.Schema != "public" {
		t.Fatalf("nservicebus: %+v %v", n, err)
	}
	if n, err = (Options{Preset: "nservicebus", Table: "Sales_OutboxData"}).names(); err != nil || n.Prefixed || n.Table != "Sales_OutboxData" {
		t.Fatalf("nservicebus --table: %+v %v", n, err)
	}
	if _, err := (Options{Preset: "hibernate"}).names(); err == nil {
		t.Fatal("an unknown preset was accepted")
	}
	if _, err := (Options{Columns: ColumnNames{ProcessedAtUnit: "us"}}).names(); err == nil {
		t.Fatal("a processed-at unit of us was accepted")
	}
	if _, err := (Options{Columns: ColumnNames{EventID: Absent}}).names(); err == nil {
		t.Fatal("an absent event id was accepted")
	}
}
