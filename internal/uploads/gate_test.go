package uploads

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// upload writes a file into the tree's incoming folder as the upload server
// does: whole, under a temporary name, then renamed into place.
func upload(t *testing.T, root, project, rel, content string) {
	t.Helper()
	dst := filepath.Join(root, Incoming, project, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(root, Incoming, ".tmp-"+strings.ReplaceAll(rel, "/", "_"))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether the file at the path under root exists.
func exists(root string, elem ...string) bool {
	_, err := os.Lstat(filepath.Join(append([]string{root}, elem...)...))
	return err == nil
}

// newGate returns a Gate on a new tree, scanning with the clamd at addr and
// recording quarantines in st.
func newGate(t *testing.T, addr string, st Recorder) (*Gate, string) {
	t.Helper()
	root := t.TempDir()
	tree, err := OpenTree(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	c, err := clamd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	return New(tree, Options{Scanner: c, Recorder: st, Retry: 10 * time.Millisecond}), root
}

func TestGate(t *testing.T) {
	clam := clamdtest.Start(t, clamdtest.Options{})
	st := teststore.SQLite(t)
	ctx := context.Background()
	g, root := newGate(t, clam.Addr(), st)
	hook := cdnapi.Webhook{ID: cdnapi.NewWebhookID(), URL: "http://127.0.0.1:1/", Secret: cdnapi.NewWebhookSecret(),
		Events: []cdnapi.EventType{cdnapi.EventFileQuarantined}, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if err := st.AddWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}

	t.Run("clean file is promoted", func(t *testing.T) {
		upload(t, root, "p", "img/logo.png", "a logo")
		out, err := g.Handle(ctx, "p", "img/logo.png")
		if err != nil || out != Promoted {
			t.Fatalf("Handle = %v, %v; want promoted", out, err)
		}
		b, err := os.ReadFile(filepath.Join(root, Origin, "p", "img", "logo.png"))
		if err != nil || string(b) != "a logo" {
			t.Fatalf("origin holds %q, %v; want the upload", b, err)
		}
		if exists(root, Incoming, "p", "img", "logo.png") || exists(root, Staging, "p", "img", "logo.png") {
			t.Error("the upload is still in incoming or staging")
		}
	})

	t.Run("infected file is quarantined and told once", func(t *testing.T) {
		upload(t, root, "p", "docs/eicar.txt", clamdtest.EICAR)
		out, err := g.Handle(ctx, "p", "docs/eicar.txt")
		if err != nil || out != Quarantined {
			t.Fatalf("Handle = %v, %v; want quarantined", out, err)
		}
		if exists(root, Origin, "p", "docs", "eicar.txt") {
			t.Fatal("the infected file is in the origin")
		}
		kept, _ := filepath.Glob(filepath.Join(root, Quarantine, "p", "docs", "eicar.txt.*.quarantined"))
		if len(kept) != 1 {
			t.Fatalf("quarantine holds %v, want the file", kept)
		}
		// The same bytes at the same path again, as after a crash
		// between the event and the move: still one event.
		upload(t, root, "p", "docs/eicar.txt", clamdtest.EICAR)
		if out, err := g.Handle(ctx, "p", "docs/eicar.txt"); err != nil || out != Quarantined {
			t.Fatalf("Handle again = %v, %v", out, err)
		}
		ds, err := st.ClaimDeliveries(ctx, hook.ID, 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].Event.Type != cdnapi.EventFileQuarantined || ds[0].Event.Quarantine == nil {
			t.Fatalf("deliveries %+v, want one file.quarantined", ds)
		}
		q := ds[0].Event.Quarantine
		if q.Project != "p" || q.Path != "docs/eicar.txt" || !strings.Contains(q.Signature, "Eicar") ||
			q.Bytes != int64(len(clamdtest.EICAR)) || !strings.HasPrefix(q.Checksum, "sha256:") {
			t.Errorf("quarantine %+v", q)
		}
	})

	t.Run("nothing there", func(t *testing.T) {
		if out, err := g.Handle(ctx, "p", "nothing.txt"); err != nil || out != Nothing {
			t.Fatalf("Handle = %v, %v; want nothing", out, err)
		}
	})

	t.Run("a link in incoming is never followed", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "secret.txt")
		os.WriteFile(secret, []byte("root's"), 0o600)
		os.MkdirAll(filepath.Join(root, Incoming, "p"), 0o755)
		if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, Incoming, "p", "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(root, Incoming, "p", "leak.txt")); err != nil {
			t.Fatal(err)
		}
		for _, rel := range []string{"sub/secret.txt", "leak.txt"} {
			out, err := g.Handle(ctx, "p", rel)
			if out == Promoted {
				t.Errorf("%s: promoted through a link", rel)
			}
			if err != nil && !errors.Is(err, errSymlink) {
				t.Errorf("%s: %v", rel, err)
			}
		}
		if exists(root, Origin, "p", "sub") || exists(root, Origin, "p", "leak.txt") {
			t.Error("a file from outside the tree reached the origin")
		}
	})
}

// TestGateScannerDown checks that an upload made while clamd is down stays
// out of the origin, waiting in staging, and is promoted once clamd is back.
func TestGateScannerDown(t *testing.T) {
	clam := clamdtest.Start(t, clamdtest.Options{})
	g, root := newGate(t, clam.Addr(), teststore.SQLite(t))
	ctx := context.Background()
	clam.Stop(t)
	upload(t, root, "p", "a.txt", "clean")
	out, err := g.Handle(ctx, "p", "a.txt")
	if err != nil || out != Waiting {
		t.Fatalf("Handle with clamd down = %v, %v; want waiting", out, err)
	}
	if exists(root, Origin, "p", "a.txt") || !exists(root, Staging, "p", "a.txt") {
		t.Fatal("an unscanned upload left staging")
	}
	// A newer upload of the same path waits in incoming behind it.
	upload(t, root, "p", "a.txt", "newer")
	if out, _ := g.Handle(ctx, "p", "a.txt"); out != Waiting {
		t.Fatalf("Handle = %v, want waiting", out)
	}
	if oldest, err := OldestWaiting(root); err != nil || oldest.IsZero() {
		t.Errorf("OldestWaiting = %v, %v; want the waiting uploads' time", oldest, err)
	}

	clam.Start(t)
	if out, err := g.Handle(ctx, "p", "a.txt"); err != nil || out != Promoted {
		t.Fatalf("Handle with clamd back = %v, %v; want promoted", out, err)
	}
	b, _ := os.ReadFile(filepath.Join(root, Origin, "p", "a.txt"))
	if string(b) != "newer" {
		t.Errorf("origin holds %q, want the newer upload, promoted after the older", b)
	}
	if oldest, err := OldestWaiting(root); err != nil || !oldest.IsZero() {
		t.Errorf("OldestWaiting = %v, %v; want none waiting", oldest, err)
	}
}

// TestGateRun checks Run end to end: uploads written while it runs, and
// those it finds at start in staging and incoming, are promoted.
func TestGateRun(t *testing.T) {
	clam := clamdtest.Start(t, clamdtest.Options{})
	g, root := newGate(t, clam.Addr(), teststore.SQLite(t))
	// Left by a crash: one staged, one not.
	os.MkdirAll(filepath.Join(root, Staging, "p"), 0o700)
	os.WriteFile(filepath.Join(root, Staging, "p", "staged.txt"), []byte("s"), 0o644)
	upload(t, root, "p", "before.txt", "b")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	upload(t, root, "p", "new/deep/during.txt", "d")
	upload(t, root, "q", "other.txt", "o")
	upload(t, root, "p", "eicar.com", clamdtest.EICAR)

	deadline := time.Now().Add(30 * time.Second)
	for _, f := range [][]string{{"p", "staged.txt"}, {"p", "before.txt"}, {"p", "new", "deep", "during.txt"}, {"q", "other.txt"}} {
		for !exists(root, append([]string{Origin}, f...)...) {
			if time.Now().After(deadline) {
				t.Fatalf("%v not promoted", f)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for {
		if kept, _ := filepath.Glob(filepath.Join(root, Quarantine, "p", "eicar.com.*")); len(kept) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("EICAR not quarantined")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if exists(root, Origin, "p", "eicar.com") {
		t.Error("EICAR in the origin")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
