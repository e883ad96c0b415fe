package health

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/clamd"
)

// The defaults of ScannerConfig.
const (
	DefaultMaxSignatureAge = 3 * 24 * time.Hour
	DefaultMaxScanWait     = time.Minute
)

// Scanner is what the virus scanning probe asks of clamd
// (internal/clamd's Client).
type Scanner interface {
	Ping(ctx context.Context) error
	Version(ctx context.Context) (clamd.Version, error)
}

// ScannerConfig configures ScannerProbe. Zero fields take their defaults.
type ScannerConfig struct {
	Scanner Scanner
	// MaxSignatureAge is the age of the signature database past which
	// scanning is degraded_performance: a scanner with old signatures
	// misses what is new. DefaultMaxSignatureAge.
	MaxSignatureAge time.Duration
	// Backlog, when set, returns since when the upload that has waited
	// longest for a scan has waited (uploads.OldestWaiting); zero when
	// none waits.
	Backlog func() (time.Time, error)
	// MaxScanWait is how long an upload may wait for its scan before
	// scanning is degraded_performance. DefaultMaxScanWait.
	MaxScanWait time.Duration
	Now         func() time.Time // time.Now if nil
}

// ScannerProbe measures virus scanning: clamd not answering PING or
// VERSION is an outage; signatures older than MaxSignatureAge, or of no
// stated age, and uploads waiting longer than MaxScanWait are
// degraded_performance.
func ScannerProbe(cfg ScannerConfig) Probe {
	if cfg.MaxSignatureAge <= 0 {
		cfg.MaxSignatureAge = DefaultMaxSignatureAge
	}
	if cfg.MaxScanWait <= 0 {
		cfg.MaxScanWait = DefaultMaxScanWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return func(ctx context.Context) error {
		if err := cfg.Scanner.Ping(ctx); err != nil {
			return fmt.Errorf("clamd does not answer PING: %w", err)
		}
		v, err := cfg.Scanner.Version(ctx)
		if err != nil {
			return fmt.Errorf("clamd does not answer VERSION: %w", err)
		}
		now := cfg.Now()
		switch age := now.Sub(v.Signatures); {
		case v.Signatures.IsZero():
			return fmt.Errorf("%w: clamd does not say how old its signatures are (%q): run freshclam",
				cdnapi.ErrDegraded, v.Raw)
		case age > cfg.MaxSignatureAge:
			return fmt.Errorf("%w: the signatures are from %s, older than %s: run freshclam",
				cdnapi.ErrDegraded, v.Signatures.UTC().Format(time.RFC3339), cfg.MaxSignatureAge)
		}
		if cfg.Backlog == nil {
			return nil
		}
		oldest, err := cfg.Backlog()
		if err != nil {
			return fmt.Errorf("%w: cannot tell how long uploads wait for a scan: %v", cdnapi.ErrDegraded, err)
		}
		if wait := now.Sub(oldest); !oldest.IsZero() && wait > cfg.MaxScanWait {
			return fmt.Errorf("%w: an upload has waited %s for its scan, over %s",
				cdnapi.ErrDegraded, wait.Round(time.Second), cfg.MaxScanWait)
		}
		return nil
	}
}
