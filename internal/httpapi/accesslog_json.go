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
//
// w must be safe for concurrent use, as *os.File and *logbuf.Writer are:
// the handler takes no lock of its own, because the buffered writer it is
// made for already holds one, and a second lock per line is measurable on
// a busy hot page.
func NewAccessLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &accessLogHandler{out: w, level: level}
}

type accessLogHandler struct {
	out   io.Writer
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
	bp, b, comma := h.begin(r.Time, r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b, comma = appendAttr(b, a, comma)
		return true
	})
	return h.end(bp, b)
}

// writeRequest writes the access-log line of one request: what Handle
// writes for a record of message "request" at t with l's attributes (see
// accessLine.attrs), without building the record, whose attributes beyond
// the fifth take an allocation and are each resolved and switched on kind.
// logRequests calls it once per request.
func (h *accessLogHandler) writeRequest(t time.Time, level slog.Level, l *accessLine) error {
	bp, b, comma := h.begin(t, level, "request")
	member := func(key string) {
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = append(b, '"')
		b = append(b, key...) // the keys are plain ASCII
		b = append(b, '"', ':')
	}
	member("request_id")
	b = appendString(b, l.requestID)
	member("listener")
	b = appendString(b, l.listener)
	member("method")
	b = appendString(b, l.method)
	member("path")
	b = appendString(b, l.path)
	member("route")
	b = appendString(b, l.route)
	member("status")
	b = strconv.AppendInt(b, int64(l.status), 10)
	member("bytes")
	b = strconv.AppendInt(b, l.bytes, 10)
	member("duration_seconds")
	b = strconv.AppendFloat(b, l.duration.Seconds(), 'g', -1, 64)
	member("client_addr")
	b = appendString(b, l.clientAddr)
	member("user_agent")
	b = appendString(b, l.userAgent)
	if l.keyID != "" {
		member("key_id")
		b = appendString(b, l.keyID)
	}
	return h.end(bp, b)
}

// begin starts a line in a pooled buffer: the opening brace, time, level,
// msg and the attributes of WithAttrs. It returns the buffer, the line so
// far and whether the next member needs a comma.
func (h *accessLogHandler) begin(t time.Time, level slog.Level, msg string) (*[]byte, []byte, bool) {
	bp := lineBuffers.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !t.IsZero() {
		b = append(b, `"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, msg)
	if len(h.pre) > 0 {
		b = append(b, ',')
		b = append(b, h.pre...)
	}
	return bp, b, len(h.pre) == 0 || h.comma
}

// end closes the groups of WithGroup and the line, writes it in one Write
// and returns the buffer to the pool.
func (h *accessLogHandler) end(bp *[]byte, b []byte) error {
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
