package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/health"
	"github.com/cdnapi/cdnapi/internal/uploads"
)

// uploadFlags are serve's flags of the upload path: the authorization the
// upload server asks, and the measurements of the Upload Service and Virus
// Scanning components.
type uploadFlags struct {
	authAddr        *string
	root            *string
	url             *string
	clamd           *string
	maxSignatureAge *time.Duration
	maxScanWait     *time.Duration
	canaryInterval  *time.Duration
	canaryTimeout   *time.Duration
	canarySlow      *time.Duration
}

func addUploadFlags(fs *flag.FlagSet) uploadFlags {
	return uploadFlags{
		authAddr: fs.String("upload-auth-addr", "", "address of the listener the upload server's auth_request asks (deploy/nginx/upload.conf); needs --uploads (default: off)"),
		root:     fs.String("uploads", "", "the uploads root that cdnapi uploads scans (incoming/, origin/ …): the upload authorization checks it for links, and Virus Scanning how long uploads wait"),
		url:      fs.String("upload-url", "", "the upload server's base URL: the Upload Service is then measured by a canary uploaded, scanned, listed and deleted (default: not deployed, reads under_maintenance)"),
		clamd:    fs.String("clamd", "", "clamd's socket (unix:/run/clamav/clamd.ctl or host:port): Virus Scanning is then measured (default: not deployed, reads under_maintenance)"),

		maxSignatureAge: fs.Duration("scan-max-signature-age", health.DefaultMaxSignatureAge, "Virus Scanning is degraded_performance when clamd's signatures are older"),
		maxScanWait:     fs.Duration("scan-max-wait", health.DefaultMaxScanWait, "Virus Scanning is degraded_performance when an upload has waited longer for its scan (needs --uploads)"),
		canaryInterval:  fs.Duration("upload-canary-interval", health.DefaultCanaryInterval, "time between two upload canaries"),
		canaryTimeout:   fs.Duration("upload-canary-timeout", health.DefaultCanaryTimeout, "an upload canary not listed by then is an outage of the Upload Service"),
		canarySlow:      fs.Duration("upload-canary-slow", health.DefaultCanarySlow, "an upload canary listed later than this is degraded_performance"),
	}
}

func (f uploadFlags) validate() error {
	if *f.authAddr != "" && *f.root == "" {
		return usageError{"--upload-auth-addr needs --uploads, the root whose folders it checks"}
	}
	for _, d := range []*time.Duration{f.maxSignatureAge, f.maxScanWait, f.canaryInterval, f.canaryTimeout, f.canarySlow} {
		if *d <= 0 {
			return usageError{"--scan-max-signature-age, --scan-max-wait and the --upload-canary-* durations must be positive"}
		}
	}
	return nil
}

// uploadPath is serve's wired upload path.
type uploadPath struct {
	tree      *uploads.Tree // nil without --uploads
	upload    health.Probe  // nil: no upload service deployed
	scanning  health.Probe  // nil: no scanner deployed
	canary    *health.Canary
	canaryKey string // the ID of the canary's key, revoked at stop
}

// canaryStore is what the canary needs of the store: its key, and the list
// it looks for its file in.
type canaryStore interface {
	cdnapi.KeyStore
	cdnapi.FileReader
}

// wire opens the uploads root, and makes the canary's key and the probes.
// keys is the verifier the upload authorization checks keys with; the
// canary's key is known to it before wire returns.
func (f uploadFlags) wire(ctx context.Context, st canaryStore, keys *auth.Verifier, logger *slog.Logger) (*uploadPath, error) {
	p := &uploadPath{}
	if *f.root != "" {
		t, err := uploads.OpenTree(*f.root)
		if err != nil {
			return nil, fmt.Errorf("--uploads: %w", err)
		}
		p.tree = t
	}
	if *f.clamd != "" {
		c, err := clamd.New(*f.clamd)
		if err != nil {
			return nil, usageError{"--clamd: " + err.Error()}
		}
		cfg := health.ScannerConfig{Scanner: c, MaxSignatureAge: *f.maxSignatureAge, MaxScanWait: *f.maxScanWait}
		if *f.root != "" {
			root := *f.root
			cfg.Backlog = func() (time.Time, error) { return uploads.OldestWaiting(root) }
		}
		p.scanning = health.ScannerProbe(cfg)
	}
	if *f.url != "" {
		host, _ := os.Hostname()
		key, rec := auth.NewKey(cdnapi.CanaryProject, cdnapi.ScopeUpload, "upload canary of serve on "+host, time.Now(), time.Time{})
		if err := st.CreateKey(ctx, rec); err != nil {
			return nil, fmt.Errorf("create the upload canary's key: %w", err)
		}
		p.canaryKey = rec.ID
		if keys != nil {
			if err := keys.Refresh(ctx); err != nil {
				return nil, fmt.Errorf("load the API keys: %w", err)
			}
		}
		p.canary = health.NewCanary(health.CanaryConfig{UploadURL: *f.url, Key: key, Files: st,
			Interval: *f.canaryInterval, Timeout: *f.canaryTimeout, Slow: *f.canarySlow, Logger: logger})
		p.upload = p.canary.Probe()
	}
	return p, nil
}

// close revokes the canary's key: it is this process's, and no other
// process will use it.
func (p *uploadPath) close(st cdnapi.KeyStore) {
	if p.canaryKey != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st.RevokeKey(ctx, p.canaryKey, time.Now())
	}
	if p.tree != nil {
		p.tree.Close()
	}
}
