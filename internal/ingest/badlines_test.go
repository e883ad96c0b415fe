package ingest

import (
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// Valid lines of each kind, which the bad lines below spoil one way each.
const (
	goodAsset  = `{"id":"ast_Good1","created_at":"2026-11-20T14:03:07Z","path":"/static/app.js","bytes":1024,"cache_status":"HIT","region":"FRA1"}`
	goodFile   = `{"id":"fil_Good1","created_at":"2026-11-20T14:03:07Z","filename":"report.pdf","bytes":1024,"checksum":"sha256:` + hex64 + `"}`
	goodRegion = `{"code":"TST1","name":"Testville","zone":"eu-central","country":"DE","status":"operational"}`

	hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// spoil returns line with old replaced by new, and fails loudly (by
// returning an unparseable marker) if old is not in it, so that a typo in
// the table cannot turn a case into a valid line.
func spoil(line, old, new string) string {
	if !strings.Contains(line, old) {
		return "spoil: " + old + " not found"
	}
	return strings.Replace(line, old, new, 1)
}

// badLine is one kind of invalid input line and the exact error it gets.
type badLine struct {
	name string
	kind Kind
	line string
	want string // the error, without the "line N: " prefix
}

var badLines = []badLine{
	// Lines that are not one JSON object.
	{"empty line", Assets, "", "empty line; want one JSON object per line"},
	{"blank line", Assets, " \t ", "empty line; want one JSON object per line"},
	{"malformed JSON", Assets, `{"id":"ast_1",`, "malformed JSON (unexpected end of line); want one JSON object per line"},
	{"missing colon", Assets, `{"id" "ast_1"}`, `malformed JSON at byte 7 (unexpected character '"' after object key); want one JSON object per line`},
	{"single quotes", Assets, `{'id':'ast_1'}`, `malformed JSON at byte 2 (unexpected character '\'' looking for beginning of object key string); want one JSON object per line`},
	{"trailing garbage", Assets, goodAsset + ` x`, "text after the JSON object; want one JSON object per line"},
	{"two objects", Assets, goodAsset + goodAsset, "text after the JSON object; want one JSON object per line"},
	{"array", Assets, `[` + goodAsset + `]`, "want a JSON object, not an array"},
	{"string", Assets, `"ast_1"`, "want a JSON object, not a string"},
	{"invalid UTF-8", Assets, spoil(goodAsset, "app.js", "app\xff.js"), "invalid UTF-8; want UTF-8 text"},
	{"raw control character", Assets, spoil(goodAsset, "app.js", "app\x01.js"), "malformed JSON at byte 74 (unexpected character '\\x01' in string literal); want one JSON object per line"},
	{"byte-order mark", Assets, "\ufeff" + goodAsset, "a byte-order mark (U+FEFF) starts the line; want no byte-order mark, or only one at the start of the input"},
	{"non-ASCII outside a string", Assets, spoil(goodAsset, `"id"`, `é"id"`), "malformed JSON at byte 2 (unexpected character 'é' looking for beginning of object key string); want one JSON object per line"},
	{"byte-order mark inside", Assets, spoil(goodAsset, `"id"`, "\ufeff\"id\""), "malformed JSON at byte 2 (unexpected byte-order mark (U+FEFF) looking for beginning of object key string); want one JSON object per line"},
	{"line too long", Assets, spoil(goodAsset, "/static/app.js", "/"+strings.Repeat("a", MaxLineBytes)), "longer than 65536 bytes; want one JSON object per line of at most 64 KiB"},

	// Fields that are unknown, doubled or missing.
	{"unknown field", Assets, spoil(goodAsset, `"bytes"`, `"colour":"red","bytes"`), `"colour": unknown field; want only the fields of an asset: id, created_at, path, bytes, cache_status, region`},
	{"field in another case", Assets, spoil(goodAsset, `"id"`, `"ID"`), `"ID": unknown field; want only the fields of an asset: id, created_at, path, bytes, cache_status, region`},
	{"file field on an asset", Assets, spoil(goodAsset, `"path"`, `"checksum":"x","path"`), `"checksum": unknown field; want only the fields of an asset: id, created_at, path, bytes, cache_status, region`},
	{"duplicate field", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":1024,"bytes":1024`), "bytes: given twice; want each field once"},
	{"duplicate field by escape", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":1024,"byt\u0065s":1024`), "bytes: given twice; want each field once"},
	{"missing field", Assets, spoil(goodAsset, `,"region":"FRA1"`, ``), "region: missing; want a region code of three upper-case letters and a digit, such as FRA1"},
	{"missing checksum", Files, spoil(goodFile, `,"checksum":"sha256:`+hex64+`"`, ``), `checksum: missing; want "sha256:" and 64 lower-case hex characters`},

	// IDs.
	{"id of the other kind", Assets, spoil(goodAsset, "ast_Good1", "fil_Good1"), `id: want "ast_" and 1 to 64 letters or digits`},
	{"id without suffix", Files, spoil(goodFile, "fil_Good1", "fil_"), `id: want "fil_" and 1 to 64 letters or digits`},
	{"id too long", Assets, spoil(goodAsset, "ast_Good1", "ast_"+strings.Repeat("x", 65)), `id: want "ast_" and 1 to 64 letters or digits`},
	{"id with a hyphen", Assets, spoil(goodAsset, "ast_Good1", "ast_Go-od1"), `id: want "ast_" and 1 to 64 letters or digits`},
	{"id as a number", Assets, spoil(goodAsset, `"ast_Good1"`, `17`), `id: want "ast_" and 1 to 64 letters or digits`},

	// Timestamps.
	{"time with an offset", Assets, spoil(goodAsset, "14:03:07Z", "16:03:07+02:00"), "created_at: want " + wantTime},
	{"time with a fraction", Assets, spoil(goodAsset, "14:03:07Z", "14:03:07.250Z"), "created_at: want " + wantTime},
	{"time with a lower-case z", Assets, spoil(goodAsset, "14:03:07Z", "14:03:07z"), "created_at: want " + wantTime},
	{"date only", Files, spoil(goodFile, "2026-11-20T14:03:07Z", "2026-11-20"), "created_at: want " + wantTime},
	{"February 30", Assets, spoil(goodAsset, "2026-11-20", "2026-02-30"), "created_at: want " + wantTime},
	{"before 1970", Assets, spoil(goodAsset, "2026-11-20", "1969-12-31"), "created_at: want " + wantTime},
	{"time as a number", Assets, spoil(goodAsset, `"2026-11-20T14:03:07Z"`, `1795269787`), "created_at: want " + wantTime},

	// Sizes.
	{"negative bytes", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":-1`), "bytes: want " + wantBytes},
	{"fractional bytes", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":1.5`), "bytes: want " + wantBytes},
	{"bytes with .0", Files, spoil(goodFile, `"bytes":1024`, `"bytes":1024.0`), "bytes: want " + wantBytes},
	{"bytes with an exponent", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":1e3`), "bytes: want " + wantBytes},
	{"bytes as a string", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":"1024"`), "bytes: want " + wantBytes},
	{"bytes beyond int64", Files, spoil(goodFile, `"bytes":1024`, `"bytes":9223372036854775808`), "bytes: want " + wantBytes},
	{"bytes null", Assets, spoil(goodAsset, `"bytes":1024`, `"bytes":null`), "bytes: want " + wantBytes},

	// Checksums, names and paths.
	{"upper-case checksum", Files, spoil(goodFile, hex64, strings.ToUpper(hex64)), `checksum: want "sha256:" and 64 lower-case hex characters`},
	{"short checksum", Files, spoil(goodFile, hex64, hex64[:63]), `checksum: want "sha256:" and 64 lower-case hex characters`},
	{"other digest", Files, spoil(goodFile, "sha256:", "sha512:"), `checksum: want "sha256:" and 64 lower-case hex characters`},
	{"empty filename", Files, spoil(goodFile, `"report.pdf"`, `""`), "filename: want a non-empty string without control characters"},
	{"filename with a newline", Files, spoil(goodFile, `report.pdf`, `report\n.pdf`), "filename: want a non-empty string without control characters"},
	{"bad project", Files, spoil(goodFile, `"checksum"`, `"project":"my project","checksum"`), "project: want " + wantProject},
	{"relative path", Assets, spoil(goodAsset, `"/static/app.js"`, `"static/app.js"`), `path: want a string that starts with "/" and has no control characters`},
	{"path with an escaped C1 control", Assets, spoil(goodAsset, `app.js`, `app\u0085.js`), `path: want a string that starts with "/" and has no control characters`},
	{"path as an object", Assets, spoil(goodAsset, `"/static/app.js"`, `{"p":"/"}`), `path: want a string that starts with "/" and has no control characters`},

	// Cache statuses and regions.
	{"lower-case cache status", Assets, spoil(goodAsset, `"HIT"`, `"hit"`), "cache_status: want " + wantCacheStatus},
	{"unknown cache status", Assets, spoil(goodAsset, `"HIT"`, `"WARM"`), "cache_status: want " + wantCacheStatus},
	{"malformed region", Assets, spoil(goodAsset, `"FRA1"`, `"fra1"`), "region: want a region code of three upper-case letters and a digit, such as FRA1"},
	{"unknown region", Assets, spoil(goodAsset, `"FRA1"`, `"XYZ9"`), "region: no region XYZ9 exists; want the code of a known region (ingest regions first)"},
	{"region code too short", Regions, spoil(goodRegion, `"TST1"`, `"TST"`), "code: want a region code of three upper-case letters and a digit, such as FRA1"},
	{"empty region name", Regions, spoil(goodRegion, `"Testville"`, `""`), "name: want a non-empty string without control characters"},
	{"zone with an underscore", Regions, spoil(goodRegion, `"eu-central"`, `"eu_central"`), "zone: want two lower-case words joined by a hyphen, such as eu-central"},
	{"lower-case country", Regions, spoil(goodRegion, `"DE"`, `"de"`), "country: want an upper-case ISO 3166-1 alpha-2 country code, such as DE"},
	{"unassigned country", Regions, spoil(goodRegion, `"DE"`, `"XX"`), "country: want an upper-case ISO 3166-1 alpha-2 country code, such as DE"},
	{"unknown region status", Regions, spoil(goodRegion, `"operational"`, `"ok"`), "status: want " + wantStatus},
}

// The checks of a line, run without a store: every bad line that fits the
// reader's buffer gets exactly its error from parse and the Validator.
func TestBadLineMessages(t *testing.T) {
	v := NewValidator([]cdnapi.Region{{Code: "FRA1"}})
	for _, tt := range badLines {
		if len(tt.line) > MaxLineBytes {
			continue // the line reader's to refuse; see TestBadLinesLeaveStoreUnchanged
		}
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch tt.kind {
			case Files:
				err = parseAndCheck(&fileFormat, v, tt.line)
			case Assets:
				err = parseAndCheck(&assetFormat, v, tt.line)
			case Regions:
				err = parseAndCheck(&regionFormat, v, tt.line)
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("%s\n got: %v\nwant: %s", tt.line, err, tt.want)
			}
		})
	}
}

func parseAndCheck[T any](f *format[T], v *Validator, line string) error {
	rec, err := f.parse([]byte(line), make([]rawValue, len(f.fields)), "default")
	if err != nil {
		return err
	}
	return f.check(v, &rec)
}
