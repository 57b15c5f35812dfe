package consumer_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
)

// checkedHandler is a handler whose tables exist only when present says so.
type checkedHandler struct{ present bool }

func (h *checkedHandler) Handle(context.Context, *inbox.Tx, *consumer.Message) (consumer.Outcome, error) {
	return consumer.Applied, nil
}

func (h *checkedHandler) Check(context.Context, *inbox.Tx) error {
	if !h.present {
		return errors.New("table orders missing")
	}
	return nil
}

// TestCheck: Check refuses a store that is not migrated, then a handler whose Checker finds
// its tables missing, and passes once both are there.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	st, err := inbox.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "check.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := &checkedHandler{}
	if err := consumer.Check(ctx, st, h); err == nil || !strings.Contains(err.Error(), "migrat") {
		t.Fatalf("check of a store never migrated: %v, want an error saying to migrate", err)
	}
	if err := consumer.Migrate(ctx, st, h); err != nil {
		t.Fatal(err)
	}
	if err := consumer.Check(ctx, st, h); err == nil || !strings.Contains(err.Error(), "table orders missing") {
		t.Fatalf("check with the handler's table missing: %v, want the Checker's error", err)
	}
	h.present = true
	if err := consumer.Check(ctx, st, h); err != nil {
		t.Fatalf("check of a migrated store and present tables: %v", err)
	}
	if err := consumer.Check(ctx, nil, h); err == nil {
		t.Fatal("check without a store: no error")
	}
}
