package cdnapi

import (
	"strings"
	"testing"
	"time"
)

func goodQuarantine() Quarantine {
	return Quarantine{Project: "acme", Path: "uploads/invoice.pdf", Bytes: 68,
		Checksum:  "sha256:" + strings.Repeat("ab", 32),
		Signature: "Eicar-Test-Signature", At: time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC)}
}

func TestQuarantineValidate(t *testing.T) {
	if err := goodQuarantine().Validate(); err != nil {
		t.Fatalf("a good quarantine: %v", err)
	}
	for name, change := range map[string]func(q *Quarantine){
		"empty project":           func(q *Quarantine) { q.Project = "" },
		"bad project":             func(q *Quarantine) { q.Project = "-acme" },
		"empty path":              func(q *Quarantine) { q.Path = "" },
		"path with a newline":     func(q *Quarantine) { q.Path = "a\nb" },
		"path too long":           func(q *Quarantine) { q.Path = strings.Repeat("a", MaxQuarantinePath+1) },
		"path not UTF-8":          func(q *Quarantine) { q.Path = "a\xffb" },
		"negative bytes":          func(q *Quarantine) { q.Bytes = -1 },
		"empty checksum":          func(q *Quarantine) { q.Checksum = "" },
		"checksum without sha256": func(q *Quarantine) { q.Checksum = strings.Repeat("ab", 32) },
		"upper-case checksum":     func(q *Quarantine) { q.Checksum = "sha256:" + strings.Repeat("AB", 32) },
		"short checksum":          func(q *Quarantine) { q.Checksum = "sha256:" + strings.Repeat("ab", 31) },
		"empty signature":         func(q *Quarantine) { q.Signature = "" },
		"signature with a C1":     func(q *Quarantine) { q.Signature = "Eicar\u0085" },
		"no time":                 func(q *Quarantine) { q.At = time.Time{} },
	} {
		q := goodQuarantine()
		change(&q)
		if err := q.Validate(); err == nil {
			t.Errorf("%s: Validate accepts %+v", name, q)
		}
	}
}

func TestQuarantineEventID(t *testing.T) {
	q := goodQuarantine()
	id := QuarantineEventID(q.Project, q.Path, q.Checksum)
	if !ValidEventID(id) {
		t.Fatalf("QuarantineEventID = %q, not a valid event ID", id)
	}
	if again := QuarantineEventID(q.Project, q.Path, q.Checksum); again != id {
		t.Errorf("not deterministic: %q then %q", id, again)
	}
	for _, other := range [][3]string{
		{"acme2", q.Path, q.Checksum},
		{q.Project, q.Path + "x", q.Checksum},
		{q.Project, q.Path, "sha256:" + strings.Repeat("cd", 32)},
		{"acm", "e" + q.Path, q.Checksum}, // the fields are kept apart
	} {
		if QuarantineEventID(other[0], other[1], other[2]) == id {
			t.Errorf("%q has the same ID as %+v", other, q)
		}
	}
	if err := CheckQuarantine(id, q); err != nil {
		t.Errorf("CheckQuarantine: %v", err)
	}
	if err := CheckQuarantine("evt_x", q); err == nil {
		t.Error("CheckQuarantine accepts a bad id")
	}
}

func TestValidEventID(t *testing.T) {
	for id, want := range map[string]bool{
		"evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60":  true,
		"evt_5F0C1A9E2B7D4C3E8A6F1B2C3D4E5F60":  false,
		"evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f6":   false,
		"evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f600": false,
		"evx_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60":  false,
		"evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5fzz":  false,
		"":                                      false,
	} {
		if got := ValidEventID(id); got != want {
			t.Errorf("ValidEventID(%q) = %v, want %v", id, got, want)
		}
	}
}
