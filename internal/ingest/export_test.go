package ingest

import (
	"io"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// Exports for the tests of package ingest_test, which may import packages
// (internal/demo) that import this one.

// EngineNames lists the engines of OpenEngines, in a fixed order.
func EngineNames() []string {
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = e.Name
	}
	return names
}

// OpenEngine opens a fresh store of the named engine.
func OpenEngine(t testing.TB, name string) cdnapi.Store {
	for _, e := range engines {
		if e.Name == name {
			return e.Open(t)
		}
	}
	t.Fatalf("no engine %q", name)
	return nil
}

// ParseAssets reads, parses and checks asset lines as Run does, without
// writing them, and returns the number of valid lines.
func ParseAssets(r io.Reader, regions []cdnapi.Region) (int, error) {
	v := NewValidator(regions)
	in := newLineReader(r, new(Progress))
	vals := make([]rawValue, len(assetFormat.fields))
	n := 0
	for {
		line, _, err := in.next(nil)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		rec, err := assetFormat.parse(line, vals, "")
		if err != nil {
			return n, err
		}
		if err := v.Asset(&rec); err != nil {
			return n, err
		}
		n++
	}
}
