package sample

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Task is the state of one task; every event carries the task as it is after the event
// (event-carried state transfer), so a projection can apply any event on its own.
type Task struct {
	ID          string   `json:"task_id"`
	Title       string   `json:"title"`
	Project     string   `json:"project"`
	Status      string   `json:"status"`
	Priority    string   `json:"priority"`
	Reporter    string   `json:"reporter"`
	Assignee    string   `json:"assignee,omitempty"`
	DueDate     string   `json:"due_date,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	Note        string   `json:"note,omitempty"`
	CompletedAt string   `json:"completed_at,omitempty"`
	UpdatedAt   string   `json:"updated_at"`
}

// Task statuses.
const (
	StatusOpen       = "open"
	StatusAssigned   = "assigned"
	StatusInProgress = "in_progress"
	StatusDone       = "done"
)

var (
	verbs    = []string{"Fix", "Add", "Migrate", "Document", "Investigate", "Refactor", "Upgrade", "Remove", "Speed up", "Test"}
	objects  = []string{"login redirect loop", "invoice PDF export", "password reset email", "search ranking", "CSV import", "webhook retries", "billing cron", "onboarding checklist", "audit log", "mobile push tokens", "rate limiter", "timezone handling", "dark mode", "SSO settings page", "order status sync", "nightly report"}
	projects = []string{"billing", "onboarding", "search", "mobile", "platform", "growth"}
	people   = []string{"ana", "bilal", "chen", "dara", "eve", "femi", "gosia", "hiro", "ines", "jonas"}
	labels   = []string{"bug", "customer", "tech-debt", "security", "ux", "ops"}
	reopens  = []string{"regression found in staging", "customer reports it still happens", "fix was reverted", "QA found an edge case"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func person(r *rand.Rand) string { return pick(r, people) + "@example.com" }

func priority(r *rand.Rand) string {
	switch n := r.IntN(100); {
	case n < 30:
		return "low"
	case n < 75:
		return "medium"
	case n < 95:
		return "high"
	default:
		return "urgent"
	}
}

// newTask is the state after task.created.
func newTask(r *rand.Rand, id string, at time.Time) Task {
	t := Task{
		ID:        id,
		Title:     pick(r, verbs) + " " + pick(r, objects),
		Project:   pick(r, projects),
		Status:    StatusOpen,
		Priority:  priority(r),
		Reporter:  person(r),
		UpdatedAt: formatTime(at),
	}
	if r.IntN(3) > 0 {
		t.DueDate = at.AddDate(0, 0, 3+r.IntN(25)).Format(time.DateOnly)
	}
	for _, l := range labels {
		if r.IntN(5) == 0 {
			t.Labels = append(t.Labels, l)
		}
	}
	return t
}

// next chooses the event that follows t and returns its type and the task after it.
func next(r *rand.Rand, t Task, at time.Time) (string, Task) {
	t.Note = ""
	t.UpdatedAt = formatTime(at)
	assign := func() (string, Task) {
		for prev := t.Assignee; t.Assignee == prev; {
			t.Assignee = person(r)
		}
		t.Status = StatusAssigned
		return TypeAssigned, t
	}
	start := func() (string, Task) {
		t.Status = StatusInProgress
		return TypeStarted, t
	}
	switch t.Status {
	case StatusOpen:
		if t.Assignee != "" && r.IntN(2) == 0 {
			return start()
		}
		return assign()
	case StatusAssigned:
		if r.IntN(4) == 0 {
			return assign() // reassigned
		}
		return start()
	case StatusInProgress:
		if r.IntN(5) == 0 {
			return assign() // handed over
		}
		t.Status = StatusDone
		t.CompletedAt = formatTime(at)
		return TypeCompleted, t
	default: // done
		t.Status = StatusOpen
		t.CompletedAt = ""
		t.Note = pick(r, reopens)
		return TypeReopened, t
	}
}

// formatTime is RFC 3339 in UTC with milliseconds, the precision of a Kafka timestamp.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// newID returns a random (version 4) UUID drawn from r, so ids are reproducible.
func newID(r *rand.Rand) string {
	var b [16]byte
	hi, lo := r.Uint64(), r.Uint64()
	for i := range 8 {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
