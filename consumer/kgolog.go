package consumer

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger passes franz-go's own log lines to the runner's logger: its errors and warnings
// as they are, its info lines at debug level (they narrate every join, assignment and
// offset fetch, which is noise until something is stuck).
type kgoLogger struct{ log *slog.Logger }

func (l kgoLogger) Level() kgo.LogLevel {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	}
	l.log.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}
