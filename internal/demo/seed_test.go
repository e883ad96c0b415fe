package demo

import (
	"context"
	"testing"
	"time"
)

// Invalid options are refused before the writer is touched, so a nil
// writer is enough here.
func TestSeedRefusesInvalidOptions(t *testing.T) {
	valid := SeedOptions{Project: "default", Files: 1, Assets: 1, Now: testNow}
	tests := []struct {
		name   string
		change func(*SeedOptions)
	}{
		{"no project", func(o *SeedOptions) { o.Project = "" }},
		{"negative files", func(o *SeedOptions) { o.Files = -1 }},
		{"negative assets", func(o *SeedOptions) { o.Assets = -1 }},
		{"no reference time", func(o *SeedOptions) { o.Now = time.Time{} }},
		{"negative batch size", func(o *SeedOptions) { o.BatchSize = -5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := valid
			tt.change(&opts)
			if err := Seed(context.Background(), nil, opts); err == nil {
				t.Error("Seed accepted the options")
			}
		})
	}
}
