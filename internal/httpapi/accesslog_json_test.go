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

// TestWriteRequest checks that the access log's own path, writeRequest,
// writes byte for byte what Handle writes for a record of the same line,
// and what slog.NewJSONHandler writes, decoded.
func TestWriteRequest(t *testing.T) {
	at := time.Date(2026, 11, 20, 14, 3, 7, 123456789, time.UTC)
	line := accessLine{
		requestID: "req_1", listener: "api", method: "GET", path: `/api/v1/files?limit=5&x="<é>"`,
		route: "/api/v1/files", status: 200, bytes: 4272, duration: 123456 * time.Nanosecond,
		clientAddr: "192.0.2.7", userAgent: "curl \"x\" & \x01\xff",
	}
	keyed := line
	keyed.keyID = "key_abc"
	for _, tc := range []struct {
		name string
		line accessLine
		with func(slog.Handler) slog.Handler
	}{
		{"no key", line, func(h slog.Handler) slog.Handler { return h }},
		{"key", keyed, func(h slog.Handler) slog.Handler { return h }},
		{"WithAttrs", line, func(h slog.Handler) slog.Handler { return h.WithAttrs([]slog.Attr{slog.String("svc", "cdnapi")}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attrs [11]slog.Attr
			rec := slog.NewRecord(at, slog.LevelInfo, "request", 0)
			rec.AddAttrs(tc.line.attrs(&attrs)...)

			var fast, handled, std countingBuffer
			if err := tc.with(NewAccessLogHandler(&fast, nil)).(*accessLogHandler).writeRequest(at, slog.LevelInfo, &tc.line); err != nil {
				t.Fatal(err)
			}
			if err := tc.with(NewAccessLogHandler(&handled, nil)).Handle(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			if err := tc.with(slog.NewJSONHandler(&std, nil)).Handle(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			if fast.writes != 1 || fast.String() != handled.String() {
				t.Errorf("writeRequest: %d writes of\n%s want Handle's\n%s", fast.writes, fast.String(), handled.String())
			}
			var f, s map[string]any
			if err := json.Unmarshal(fast.Bytes(), &f); err != nil {
				t.Fatalf("%q: %v", fast.String(), err)
			}
			if err := json.Unmarshal(std.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f, s) {
				t.Errorf("writeRequest wrote\n%s slog.JSONHandler\n%s", fast.String(), std.String())
			}
			if _, ok := f["key_id"]; ok != (tc.line.keyID != "") {
				t.Errorf("key_id present %v for key %q", ok, tc.line.keyID)
			}
		})
	}
}
