package origin_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/origin"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const project = "site"

// past is the modification time the tests give their files: long settled.
var past = time.Now().Add(-time.Hour).Truncate(time.Second)

// writeFile writes content to rel under root, making its folders, and dates
// it past.
func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
}

// sha256sum returns the checksums GNU sha256sum gives the files at rels, as
// the list shows them.
func sha256sum(t *testing.T, root string, rels ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("sha256sum", append([]string{"--"}, rels...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sha256sum: %v", err)
	}
	sums := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || strings.HasPrefix(sum, "\\") {
			t.Fatalf("sha256sum printed %q", line)
		}
		sums[name] = "sha256:" + sum
	}
	return sums
}

// listed returns every file of the project, by filename.
func listed(t *testing.T, st cdnapi.FileReader) map[string]cdnapi.File {
	t.Helper()
	files, err := st.ListFiles(context.Background(), cdnapi.FileQuery{Project: project, Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]cdnapi.File)
	for _, f := range files {
		if _, dup := byName[f.Filename]; dup {
			t.Fatalf("%q listed twice", f.Filename)
		}
		byName[f.Filename] = f
	}
	return byName
}

// checkListed fails unless the list holds exactly the files of want, each
// with the size of its file, want's checksum, created_at its modification
// time and the ID of its path.
func checkListed(t *testing.T, st cdnapi.FileReader, root string, want map[string]string) {
	t.Helper()
	got := listed(t, st)
	for name, f := range got {
		sum, ok := want[name]
		if !ok {
			t.Errorf("%q is listed; want it left out", name)
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if f.Checksum != sum || f.Bytes != fi.Size() || !f.CreatedAt.Equal(fi.ModTime().Truncate(time.Second)) ||
			f.ID != origin.ID(project, name) || f.CreatedAt.Location() != time.UTC {
			t.Errorf("%q listed as %+v; want %s, %d bytes, created %s, id %s", name, f, sum, fi.Size(), fi.ModTime(), origin.ID(project, name))
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%q is not listed", name)
		}
	}
}

// sync runs a fresh Syncer, as a new process would, and returns its result.
func sync1(t *testing.T, st origin.Store, root string) origin.Result {
	t.Helper()
	s, err := origin.New(st, root, origin.Options{Project: project, Warn: func(m string) { t.Log(m) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSync indexes a tree of every kind of entry on each engine, then runs
// again unchanged, after a change, and after a removal.
// (The large file has a test of its own, on one engine: hashing it is the
// slow part, and the same on both.)
func TestSync(t *testing.T) {
	root := t.TempDir()
	kept := []string{
		"index.html",
		"empty.txt",
		"css/site.css",
		"img/deep/er/logo.png",
		"docs/annual report 2026.pdf",
		"docs/Übersicht – café ☕.txt",
	}
	for i, rel := range kept {
		switch rel {
		case "empty.txt":
			writeFile(t, root, rel, "")
		default:
			writeFile(t, root, rel, strings.Repeat(rel+"\n", 100*i+1))
		}
	}
	// Left out, each by its rule.
	writeFile(t, root, ".hidden", "hidden")
	writeFile(t, root, ".git/config", "hidden folder")
	writeFile(t, root, "img/.upload.png.Xy12", "an upload under way")
	os.Symlink("index.html", filepath.Join(root, "link.html"))
	os.Symlink("img", filepath.Join(root, "imglink"))
	os.Symlink("/etc", filepath.Join(root, "etc"))
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "bad-\xff-name.txt", "not UTF-8")
	writeFile(t, root, "bad\nname.txt", "a newline")

	var want map[string]string
	var sumOnce sync.Once
	sums := func() map[string]string {
		sumOnce.Do(func() { want = sha256sum(t, root, kept...) })
		return want
	}
	for _, e := range teststore.Engines {
		t.Run(e.Name, func(t *testing.T) {
			// Every engine reads stamps (cdnapi.Engine has it; Open's type is
			// the narrower cdnapi.Store).
			st := e.Open(t).(interface {
				cdnapi.Store
				cdnapi.FileStampReader
			})
			// A file of the project the tree lacks: the project belongs
			// to its origin, so the sync removes it.
			stale := cdnapi.File{ID: origin.ID(project, "old.txt"), Project: project, CreatedAt: past.UTC(),
				Filename: "old.txt", Bytes: 1, Checksum: "sha256:" + strings.Repeat("0", 64)}
			other := stale
			other.ID, other.Project = origin.ID("other", "old.txt"), "other"
			if err := st.Write(t.Context(), func(w cdnapi.Writer) error { return w.PutFiles(t.Context(), []cdnapi.File{stale, other}) }); err != nil {
				t.Fatal(err)
			}

			res := sync1(t, st, root)
			checkListed(t, st, root, sums())
			if res.Files != int64(len(kept)) || res.Hashed != int64(len(kept)) || res.Put != int64(len(kept)) || res.Deleted != 1 {
				t.Errorf("first run: %+v; want %d files hashed and written, 1 deleted", res, len(kept))
			}
			if got, err := st.ListFiles(t.Context(), cdnapi.FileQuery{Project: "other", Limit: 10}); err != nil || len(got) != 1 {
				t.Errorf("another project's files: %v, %v; want its one file left alone", got, err)
			}

			res = sync1(t, st, root)
			if res.Written() != 0 || res.Hashed != 0 || res.Unchanged != int64(len(kept)) {
				t.Errorf("second run: %+v; want nothing hashed or written", res)
			}

			// Changed content, same size, a later time; one removed.
			writeFile(t, root, "css/site.css", strings.ToUpper(strings.Repeat("css/site.css\n", 201)))
			later := past.Add(time.Minute)
			os.Chtimes(filepath.Join(root, "css/site.css"), later, later)
			os.Remove(filepath.Join(root, "index.html"))
			res = sync1(t, st, root)
			after := maps.Clone(sums())
			delete(after, "index.html")
			after["css/site.css"] = sha256sum(t, root, "css/site.css")["css/site.css"]
			if after["css/site.css"] == sums()["css/site.css"] {
				t.Fatal("the change did not change the checksum")
			}
			checkListed(t, st, root, after)
			if res.Hashed != 1 || res.Put != 1 || res.Deleted != 1 {
				t.Errorf("after a change and a removal: %+v; want 1 hashed, 1 written, 1 deleted", res)
			}
			// Put the tree back for the next engine.
			writeFile(t, root, "css/site.css", strings.Repeat("css/site.css\n", 201))
			writeFile(t, root, "index.html", strings.Repeat("index.html\n", 1))
		})
	}
}

// TestLargeFile indexes a file of 1 GiB and a few bytes, sparse but for its
// last bytes, beside a small one: its checksum is sha256sum's, read through
// a worker's buffer.
func TestLargeFile(t *testing.T) {
	st := teststore.SQLite(t)
	root := t.TempDir()
	writeFile(t, root, "small.txt", "small")
	big := filepath.Join(root, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("the end\n"), 1<<30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Chtimes(big, past, past)
	// sha256sum reads it at a few hundred MB/s: run it beside the sync.
	sums := make(chan map[string]string, 1)
	go func() {
		cmd := exec.Command("sha256sum", "small.txt", "big.bin")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("sha256sum: %v", err)
		}
		m := make(map[string]string)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			sum, name, _ := strings.Cut(line, "  ")
			m[name] = "sha256:" + sum
		}
		sums <- m
	}()
	// Hashing streams: what the sync allocates, in all, is a small part
	// of the 1 GiB it reads (reading the file whole would allocate it all).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := sync1(t, st, root)
	runtime.ReadMemStats(&after)
	if res.HashedBytes != 1<<30+8+5 || res.Put != 2 {
		t.Errorf("result %+v; want 2 files and 1 GiB + 13 bytes hashed", res)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("the sync of a 1 GiB file allocated %d MiB; want it to stream through a small buffer", alloc>>20)
	} else {
		t.Logf("the sync of a 1 GiB file allocated %d KiB", alloc>>10)
	}
	want := <-sums
	checkListed(t, st, root, want)
}

// TestSettle: a file modified less than Settle ago is not indexed until it
// has stayed unchanged that long; Sync waits for it.
func TestSettle(t *testing.T) {
	st := teststore.SQLite(t)
	root := t.TempDir()
	writeFile(t, root, "old.txt", "old")
	p := filepath.Join(root, "growing.log")
	if err := os.WriteFile(p, []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Keep writing for a while, as an upload in place does.
	stop := time.Now().Add(1500 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		defer f.Close()
		for time.Now().Before(stop) {
			f.WriteString("more\n")
			time.Sleep(50 * time.Millisecond)
		}
	}()
	start := time.Now()
	res := sync1(t, st, root)
	<-done
	if took := time.Since(start); took < 1500*time.Millisecond+origin.Settle-200*time.Millisecond {
		t.Errorf("the sync ended %s after it began: before the file stopped changing and settled", took)
	}
	if res.Pending != 0 || res.Put != 2 {
		t.Errorf("result %+v; want both files written, none pending", res)
	}
	checkListed(t, st, root, sha256sum(t, root, "old.txt", "growing.log"))
}

// TestSettleGivesUp: a file that is still being written 10 s on is left as
// the list had it, counted as pending and said; the sync does not wait for
// it longer.
func TestSettleGivesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 10s for a file that keeps changing")
	}
	st := teststore.SQLite(t)
	root := t.TempDir()
	writeFile(t, root, "growing.log", "first\n")
	sync1(t, st, root)
	old := listed(t, st)["growing.log"]

	f, err := os.OpenFile(filepath.Join(root, "growing.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("more\n") // it changes from now on
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				f.WriteString("more\n")
			}
		}
	}()
	defer func() { close(stop); <-done }()

	var mu sync.Mutex
	var warnings []string
	s, err := origin.New(st, root, origin.Options{Project: project, Warn: func(m string) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, m)
	}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := s.Sync(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took < 9*time.Second || took > 15*time.Second {
		t.Errorf("the sync took %s; want it to give up about 10s on", took)
	}
	if res.Pending != 1 || res.Put != 0 {
		t.Errorf("result %+v; want the file pending and nothing written", res)
	}
	if got := listed(t, st)["growing.log"]; got != old {
		t.Errorf("growing.log is listed as %+v; want it left as %+v", got, old)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"growing.log" is still being written: left as the list had it`) {
		t.Errorf("warnings %q; want one saying growing.log is left as it was", warnings)
	}
}

// TestFollow: with Follow running, a file created, replaced by rename,
// appended to and removed, and a folder made and removed, each show in the
// list within 2 s.
func TestFollow(t *testing.T) {
	st := teststore.SQLite(t)
	root := t.TempDir()
	writeFile(t, root, "a/first.txt", "first")
	s, err := origin.New(st, root, origin.Options{Project: project, Warn: func(m string) { t.Log(m) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		followed <- s.Follow(ctx, time.Hour, func(origin.Result) { once.Do(func() { close(started) }) })
	}()
	defer func() {
		cancel()
		if err := <-followed; err != nil {
			t.Errorf("Follow: %v", err)
		}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the first sync did not end")
	}
	checkListed(t, st, root, sha256sum(t, root, "a/first.txt"))

	want := map[string]string{"a/first.txt": sha256sum(t, root, "a/first.txt")["a/first.txt"]}
	var lags []time.Duration
	// step does change, then waits until the list is want.
	step := func(what string, change func()) {
		t.Helper()
		change()
		start := time.Now()
		for {
			got := listed(t, st)
			same := len(got) == len(want)
			for name, sum := range want {
				same = same && got[name].Checksum == sum
			}
			if same {
				lags = append(lags, time.Since(start))
				t.Logf("%s: listed after %s", what, time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("%s: after 2s the list holds %v; want %v", what, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	write := func(rel, content string) string {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return sha256sum(t, root, rel)[rel]
	}
	step("create", func() { want["a/new.txt"] = write("a/new.txt", "new") })
	step("replace by rename", func() {
		write("a/.new.txt.tmp", "replaced")
		want["a/new.txt"] = sha256sum(t, root, "a/.new.txt.tmp")["a/.new.txt.tmp"]
		if err := os.Rename(filepath.Join(root, "a/.new.txt.tmp"), filepath.Join(root, "a/new.txt")); err != nil {
			t.Fatal(err)
		}
	})
	step("append", func() {
		f, err := os.OpenFile(filepath.Join(root, "a/new.txt"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(" and more")
		f.Close()
		want["a/new.txt"] = sha256sum(t, root, "a/new.txt")["a/new.txt"]
	})
	step("remove", func() {
		os.Remove(filepath.Join(root, "a/new.txt"))
		delete(want, "a/new.txt")
	})
	step("new folder", func() {
		want["b/c/deep.txt"] = write("b/c/deep.txt", "deep")
		want["b/top.txt"] = write("b/top.txt", "top")
	})
	step("folder moved out", func() {
		if err := os.Rename(filepath.Join(root, "b"), filepath.Join(t.TempDir(), "b")); err != nil {
			t.Fatal(err)
		}
		delete(want, "b/c/deep.txt")
		delete(want, "b/top.txt")
	})
	step("folder removed", func() {
		if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
		delete(want, "a/first.txt")
	})
	slices.Sort(lags)
	t.Logf("lags: %v", lags)
}

// TestFollowRescan: a change inotify does not report, a write through a
// hard link outside the tree, shows at the next rescan; without rescans it
// would not show at all (checked first, for a while).
func TestFollowRescan(t *testing.T) {
	st := teststore.SQLite(t)
	root := t.TempDir()
	writeFile(t, root, "page.html", "first")
	outside := filepath.Join(t.TempDir(), "page.html")
	if err := os.Link(filepath.Join(root, "page.html"), outside); err != nil {
		t.Fatal(err)
	}
	follow := func(rescan time.Duration) (stop func()) {
		s, err := origin.New(st, root, origin.Options{Project: project})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		started := make(chan struct{})
		var once sync.Once
		go func() { done <- s.Follow(ctx, rescan, func(origin.Result) { once.Do(func() { close(started) }) }) }()
		<-started
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Follow: %v", err)
			}
		}
	}
	write := func(content string) string {
		if err := os.WriteFile(outside, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return sha256sum(t, root, "page.html")["page.html"]
	}

	stop := follow(0) // no rescans
	want := write("changed behind inotify's back")
	time.Sleep(origin.Settle + 1500*time.Millisecond)
	if got := listed(t, st)["page.html"].Checksum; got == want {
		t.Fatal("the change showed without a rescan: the test does not test the rescan")
	}
	stop()

	stop = follow(500 * time.Millisecond)
	defer stop()
	want = write("changed again")
	for deadline := time.Now().Add(10 * time.Second); listed(t, st)["page.html"].Checksum != want; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("10s on, the rescans have not listed the change")
		}
	}
}
