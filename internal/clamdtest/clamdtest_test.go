package clamdtest_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
)

func TestStopStart(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{TCP: true, Database: 7})
	sock := strings.TrimPrefix(s.Addr(), "unix:")
	ping := func(addr string) error {
		c, err := clamd.New(addr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return c.Ping(ctx)
	}
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		if err := ping(addr); err != nil {
			t.Fatal(err)
		}
	}
	s.Stop(t)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket after Stop: %v, want it gone", err)
	}
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		if err := ping(addr); err == nil {
			t.Errorf("%s answers after Stop", addr)
		}
	}
	s.Start(t)
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		if err := ping(addr); err != nil {
			t.Errorf("%s after Start: %v", addr, err)
		}
	}
	c, _ := clamd.New(s.Addr())
	v, err := c.Version(t.Context())
	if err != nil || v.Database != 7 || time.Since(v.Signatures) > time.Hour {
		t.Errorf("Version after Start = %+v, %v; want database 7 built now", v, err)
	}
}

func TestWriteTestDatabase(t *testing.T) {
	if err := clamd.WriteTestDatabase(t.TempDir(), time.Now(), 0); err == nil {
		t.Error("a dated database of version 0 was written")
	}
	if err := clamd.WriteTestDatabase("/nonexistent", time.Time{}, 0); err == nil {
		t.Error("a database was written into a missing directory")
	}
}
