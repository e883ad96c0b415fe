package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"testing"
	"time"
)

var errExample = errors.New("store: <closed>")

// countingBuffer counts the Writes it gets.
type countingBuffer struct {
	bytes.Buffer
	writes int
}

func (c *countingBuffer) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// TestAccessLogHandler checks that NewAccessLogHandler writes what
// slog.NewJSONHandler writes, decoded, one line in one Write per record.
func TestAccessLogHandler(t *testing.T) {
	at := time.Date(2026, 11, 20, 14, 3, 7, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		log  func(*slog.Logger)
	}{
		{"access-log line", func(l *slog.Logger) {
			l.LogAttrs(t.Context(), slog.LevelInfo, "request", slog.String("request_id", "req_1"), slog.String("path", "/api/v1/files?limit=5"),
				slog.Int("status", 200), slog.Int64("bytes", 4272), slog.Float64("duration_seconds", 0.000123456), slog.String("user_agent", `curl "x" <y> & é`+"\x01\xff"))
		}},
		{"kinds", func(l *slog.Logger) {
			l.Warn("kinds", "u", uint64(math.MaxUint64), "b", true, "d", 1500*time.Millisecond, "t", at, "any", []int{1, 2}, "err", error(nil), "e", errExample)
		}},
		{"groups and With", func(l *slog.Logger) {
			l.With("listener", "api").WithGroup("g").With("a", 1).Info("grouped", slog.Group("inner", "x", "y"), slog.Group("", "inline", 2), slog.Group("empty"))
		}},
		{"debug is below the level", func(l *slog.Logger) { l.Debug("hidden") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got countingBuffer
			tc.log(slog.New(slog.NewJSONHandler(&want, nil)))
			tc.log(slog.New(NewAccessLogHandler(&got, slog.LevelInfo)))
			if want.Len() == 0 {
				if got.Len() != 0 {
					t.Errorf("wrote %q, want nothing", got.String())
				}
				return
			}
			if got.writes != 1 || !bytes.HasSuffix(got.Bytes(), []byte("}\n")) || bytes.Count(got.Bytes(), []byte("\n")) != 1 {
				t.Errorf("%d writes of %q, want one line in one write", got.writes, got.String())
			}
			var w, g map[string]any
			if err := json.Unmarshal(want.Bytes(), &w); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got.Bytes(), &g); err != nil {
				t.Fatalf("%q: %v", got.String(), err)
			}
			delete(w, "time") // the clock moved between the two
			delete(g, "time")
			if !reflect.DeepEqual(w, g) {
				t.Errorf("got  %s\nwant %s", got.String(), want.String())
			}
		})
	}
}
