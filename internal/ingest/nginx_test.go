package ingest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// edgeLine is a line as deploy/nginx/cdnapi-log.conf makes nginx write it,
// with fields replaced by over.
func edgeLine(over map[string]string) string {
	fields := [][2]string{
		{"request_id", `"0123456789abcdef0123456789abcdef"`},
		{"msec", `1764072187.042`},
		{"region", `"FRA1"`},
		{"request_method", `"GET"`},
		{"uri", `"/img/logo.png"`},
		{"status", `200`},
		{"body_bytes_sent", `5120`},
		{"upstream_cache_status", `"MISS"`},
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		v, ok := over[f[0]]
		if !ok {
			v = f[1]
		}
		if v == "-" { // leave the field out
			continue
		}
		if i > 0 && b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + f[0] + `":` + v)
	}
	b.WriteByte('}')
	return b.String()
}

func TestEdgeParser(t *testing.T) {
	regions := []cdnapi.Region{{Code: "FRA1"}, {Code: "IAD1"}}
	at := time.Date(2025, 11, 25, 12, 3, 7, 42_000_000, time.UTC)
	tests := []struct {
		name     string
		over     map[string]string
		listed   bool
		cache    cdnapi.CacheStatus
		badField string // "" for a valid line
	}{
		{name: "a miss", listed: true, cache: cdnapi.CacheMiss},
		{name: "a hit", over: map[string]string{"upstream_cache_status": `"HIT"`}, listed: true, cache: cdnapi.CacheHit},
		{name: "uncached is dynamic", over: map[string]string{"upstream_cache_status": `""`}, listed: true, cache: cdnapi.CacheDynamic},
		{name: "HEAD", over: map[string]string{"request_method": `"HEAD"`, "body_bytes_sent": "0"}, listed: true, cache: cdnapi.CacheMiss},
		{name: "not modified", over: map[string]string{"status": "304", "upstream_cache_status": `"REVALIDATED"`}, listed: true, cache: cdnapi.CacheRevalidated},
		{name: "partial content", over: map[string]string{"status": "206"}, listed: true, cache: cdnapi.CacheMiss},
		{name: "not found is not listed", over: map[string]string{"status": "404"}},
		{name: "POST is not listed", over: map[string]string{"request_method": `"POST"`}},
		{name: "an odd method is not listed", over: map[string]string{"request_method": `"PROPFIND"`}},
		{name: "escaped uri", over: map[string]string{"uri": `"/a b/\"q\"/caf\u00e9"`}, listed: true, cache: cdnapi.CacheMiss},
		{name: "unknown region", over: map[string]string{"region": `"SIN1"`}, badField: "region"},
		{name: "empty region", over: map[string]string{"region": `""`}, badField: "region"},
		{name: "short request id", over: map[string]string{"request_id": `"abc"`}, badField: "request_id"},
		{name: "upper-case request id", over: map[string]string{"request_id": `"0123456789ABCDEF0123456789ABCDEF"`}, badField: "request_id"},
		{name: "msec as a string", over: map[string]string{"msec": `"1764072187.042"`}, badField: "msec"},
		{name: "msec with digits past the millisecond", over: map[string]string{"msec": `1764072187.0429`}, listed: true, cache: cdnapi.CacheMiss},
		{name: "msec with an exponent", over: map[string]string{"msec": `1.764072187042e9`}, listed: true, cache: cdnapi.CacheMiss},
		{name: "msec as a string", over: map[string]string{"msec": `"1764072187.042"`}, badField: "msec"},
		{name: "extra fields", over: map[string]string{"uri": `"/img/logo.png","remote_addr":"192.0.2.1","http_user_agent":"curl/8","request_time":0.002,"tags":["a"],"x":{"y":null}`}, listed: true, cache: cdnapi.CacheMiss},
		{name: "a field twice", over: map[string]string{"uri": `"/img/logo.png","uri":"/other"`}, badField: "uri"},
		{name: "msec negative", over: map[string]string{"msec": `-1.000`}, badField: "msec"},
		{name: "uri not a path", over: map[string]string{"uri": `"img"`}, badField: "uri"},
		{name: "uri with a control", over: map[string]string{"uri": `"/a\u0007"`}, badField: "uri"},
		{name: "status out of range", over: map[string]string{"status": "600"}, badField: "status"},
		{name: "bytes negative", over: map[string]string{"body_bytes_sent": "-1"}, badField: "body_bytes_sent"},
		{name: "unknown cache status", over: map[string]string{"upstream_cache_status": `"PURGED"`}, badField: "upstream_cache_status"},
		{name: "missing field", over: map[string]string{"status": "-"}, badField: "status"},
	}
	p := ingest.NewEdgeParser(regions)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.Parse([]byte(edgeLine(tt.over)))
			if tt.badField != "" {
				fe, ok := errors.AsType[*ingest.FieldError](err)
				if !ok || fe.Field != tt.badField {
					t.Fatalf("Parse = %+v, %v; want an error of field %s", r, err, tt.badField)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !r.At.Equal(at) {
				t.Errorf("At = %v, want %v", r.At, at)
			}
			if r.Listed != tt.listed {
				t.Fatalf("Listed = %v, want %v", r.Listed, tt.listed)
			}
			if !tt.listed {
				return
			}
			a := r.Asset
			if a.ID != "ast_0123456789abcdef0123456789abcdef" || !a.CreatedAt.Equal(at.Truncate(time.Second)) ||
				a.CacheStatus != tt.cache || a.Region != "FRA1" || a.Path[0] != '/' {
				t.Errorf("Asset = %+v", a)
			}
		})
	}
}

// TestEdgeParserMsec reads $msec as shippers that re-encode JSON write it:
// any JSON number, to the millisecond.
func TestEdgeParserMsec(t *testing.T) {
	p := ingest.NewEdgeParser([]cdnapi.Region{{Code: "FRA1"}})
	for _, tt := range []struct {
		msec string
		want int64 // Unix milliseconds; -1: refused
	}{
		{"1732000000.140", 1732000000140},
		{"1732000000.14", 1732000000140},
		{"1732000000.1", 1732000000100},
		{"1732000000", 1732000000000},
		{"1732000000.0", 1732000000000},
		{"1732000000.1239", 1732000000123},
		{"1.73200000014e9", 1732000000140},
		{"17320000001400E-4", 1732000000140},
		{"-1732000000", -1},
		{"1e30", -1},
		{`"1732000000"`, -1},
		{"null", -1},
	} {
		r, err := p.Parse([]byte(edgeLine(map[string]string{"msec": tt.msec})))
		switch {
		case tt.want < 0 && err == nil:
			t.Errorf("msec %s: Parse = %v, want an error", tt.msec, r.At)
		case tt.want >= 0 && err != nil:
			t.Errorf("msec %s: Parse: %v", tt.msec, err)
		case tt.want >= 0 && r.At.UnixMilli() != tt.want:
			t.Errorf("msec %s: At = %d ms, want %d", tt.msec, r.At.UnixMilli(), tt.want)
		}
	}
}

// TestEdgeParserCombined turns nginx's default combined (and common) lines
// away with one line that says what cdnapi reads and where to find it.
func TestEdgeParserCombined(t *testing.T) {
	p := ingest.NewEdgeParser([]cdnapi.Region{{Code: "FRA1"}})
	for _, line := range []string{
		`192.0.2.1 - - [25/Nov/2025:12:03:07 +0000] "GET /img/logo.png HTTP/1.1" 200 5120 "-" "curl/8.5.0"`,
		`2001:db8::1 - alice [25/Nov/2025:12:03:07 +0000] "GET / HTTP/2.0" 304 0`,
	} {
		_, err := p.Parse([]byte(line))
		if err != ingest.ErrCombinedFormat {
			t.Errorf("Parse(%q) = %v, want ErrCombinedFormat", line, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "combined") ||
			!strings.Contains(msg, "deploy/nginx/cdnapi-log.conf") || !strings.Contains(msg, "docs/data.md") {
			t.Errorf("the rejection says %q", msg)
		}
	}
	if _, err := p.Parse([]byte("not a log line")); err == ingest.ErrCombinedFormat {
		t.Error("a line of no format was taken for combined")
	}
}

func TestEdgeParserUnknownRegion(t *testing.T) {
	p := ingest.NewEdgeParser([]cdnapi.Region{{Code: "FRA1"}})
	_, err := p.Parse([]byte(edgeLine(map[string]string{"region": `"SIN1"`})))
	if !ingest.UnknownRegion(err) {
		t.Errorf("UnknownRegion(%v) = false", err)
	}
	_, err = p.Parse([]byte(edgeLine(map[string]string{"region": `"sin"`})))
	if ingest.UnknownRegion(err) {
		t.Errorf("UnknownRegion(%v) = true for a malformed code", err)
	}
}

func FuzzEdgeParser(f *testing.F) {
	f.Add([]byte(edgeLine(nil)))
	f.Add([]byte(edgeLine(map[string]string{"uri": `"/\u00e9\"x"`, "upstream_cache_status": `""`})))
	p := ingest.NewEdgeParser([]cdnapi.Region{{Code: "FRA1"}})
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := p.Parse(line)
		if err != nil {
			if _, ok := errors.AsType[*ingest.FieldError](err); !ok {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			return
		}
		if r.Listed && (r.Asset.Region != "FRA1" || !r.Asset.CacheStatus.Valid() || r.Asset.Path == "") {
			t.Fatalf("listed an invalid asset %+v", r.Asset)
		}
	})
}
