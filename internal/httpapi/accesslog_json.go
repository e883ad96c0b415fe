package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// NewAccessLogHandler returns a slog.Handler that writes each record as one
// JSON line to w, in one Write, the way slog.NewJSONHandler does: time (RFC
// 3339 with nanoseconds), level, msg, then the attributes in order, groups as
// nested objects. It is for the access log, one line per request: slog's
// JSON handler spent about a fifth of a cached page's CPU on that line
// (BenchmarkHotPage), and this one encodes the attribute kinds the access
// log uses (strings, numbers, times) with the appenders of the bodies.
// Other values (KindAny) go through encoding/json, as with slog; a float
// that is not finite is written as a string ("+Inf").
func NewAccessLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &accessLogHandler{out: &lockedWriter{w: w}, level: level}
}

// lockedWriter serialises the Writes of a handler and its derivatives,
// as slog's handlers do, for writers that are not safe for concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type accessLogHandler struct {
	out   *lockedWriter
	level slog.Leveler
	pre   []byte // the attributes of WithAttrs and the groups of WithGroup, encoded
	open  int    // groups opened in pre, closed at the end of each line
	comma bool   // pre ends with a member, so the next needs a comma
}

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *accessLogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *accessLogHandler) Handle(_ context.Context, r slog.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, r.Message)
	if len(h.pre) > 0 {
		b = append(b, ',')
		b = append(b, h.pre...)
	}
	comma := len(h.pre) == 0 || h.comma
	r.Attrs(func(a slog.Attr) bool {
		b, comma = appendAttr(b, a, comma)
		return true
	})
	for range h.open {
		b = append(b, '}')
	}
	b = append(b, '}', '\n')
	_, err := h.out.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		lineBuffers.Put(bp)
	}
	return err
}

// appendAttr appends a as a member of an object; comma tells whether a
// member comes before it. It returns whether one does now.
func appendAttr(b []byte, a slog.Attr, comma bool) ([]byte, bool) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return b, comma // slog drops empty attributes
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
		if len(attrs) == 0 {
			return b, comma
		}
		if a.Key == "" { // inline the group's members
			for _, ga := range attrs {
				b, comma = appendAttr(b, ga, comma)
			}
			return b, comma
		}
		if comma {
			b = append(b, ',')
		}
		b = appendString(b, a.Key)
		b = append(b, ':', '{')
		inner := false
		for _, ga := range attrs {
			b, inner = appendAttr(b, ga, inner)
		}
		return append(b, '}'), true
	}
	if comma {
		b = append(b, ',')
	}
	b = appendString(b, a.Key)
	b = append(b, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		b = appendString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		if f := v.Float64(); math.IsInf(f, 0) || math.IsNaN(f) {
			b = appendString(b, strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	default: // KindAny, as slog does it: an error's text, else encoding/json
		switch x := v.Any().(type) {
		case error:
			b = appendString(b, x.Error())
		default:
			j, err := json.Marshal(x)
			if err != nil {
				b = appendString(b, "!ERROR:"+err.Error())
			} else {
				b = append(b, j...)
			}
		}
	}
	return b, true
}

func (h *accessLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.pre = append([]byte(nil), h.pre...)
	for _, a := range attrs {
		h2.pre, h2.comma = appendAttr(h2.pre, a, h2.comma)
	}
	return &h2
}

func (h *accessLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.pre = append([]byte(nil), h.pre...)
	if h2.comma {
		h2.pre = append(h2.pre, ',')
	}
	h2.pre = appendString(h2.pre, name)
	h2.pre = append(h2.pre, ':', '{')
	h2.open++
	h2.comma = false
	return &h2
}
