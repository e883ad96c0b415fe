package clamd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// EICAR is the EICAR anti-virus test file, the 68 bytes every scanner
// reports without being dangerous: the one signature of WriteTestDatabase.
const EICAR = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// eicarSignature names EICAR in the database of WriteTestDatabase. clamd
// reports it with ".UNOFFICIAL" appended, as it does every signature that
// does not come from a signed .cvd (clamdtest.EICARSignature).
const eicarSignature = "Eicar-Test-Signature"

// testDBFunctionality is the functionality level the test database asks
// for: any clamd of the last decade has more (1.4 has 220-odd), so it never
// warns that the engine is outdated.
const testDBFunctionality = 60

// WriteTestDatabase writes into dir a signature database that detects EICAR
// and nothing else, for tests and the local demo CDN only: ClamAV's real
// databases cannot be downloaded here, and a scanner that finds nothing
// cannot be tested.
//
// With a zero built, the database is a bare test.hdb (an MD5 signature) and
// clamd's VERSION shows no database ("ClamAV 1.4.6"). Otherwise it is
// daily.cud, an unsigned container in the layout of ClamAV's own daily.cvd,
// which is where clamd takes the database version and build time that
// VERSION shows ("ClamAV 1.4.6/<version>/<built>"):
//
//   - a 512-byte header, space-padded, "ClamAV-VDB:<build time as
//     text>:<version>:<signatures>:<functionality level>:<MD5 of the rest>:
//     <digital signature>:<builder>:<build time in Unix seconds>";
//   - then a gzipped tar of daily.info (the header again, then a
//     "name:size:SHA-256" line for each file) and the signature files.
//
// clamd only honours the version and time of a file whose name contains
// "daily.", and skips the RSA signatures of .cud and .info files, which is
// what lets a test build one.
func WriteTestDatabase(dir string, built time.Time, version int) error {
	hdb := []byte(fmt.Sprintf("%x:%d:%s\n", md5.Sum([]byte(EICAR)), len(EICAR), eicarSignature))
	if built.IsZero() {
		return writeFile(dir, "test.hdb", hdb)
	}
	if version <= 0 {
		return fmt.Errorf("clamd test database: version %d, want 1 or more", version)
	}
	const sigs = 1
	fields := fmt.Sprintf("%s:%d:%d:%d", built.UTC().Format("02 Jan 2006 15-04 -0700"),
		version, sigs, testDBFunctionality)
	tail := fmt.Sprintf("unsigned:cdnapi:%d", built.Unix())
	sum := sha256.Sum256(hdb)
	// In .info, the header's MD5 and signature fields are not checked, but
	// must be there for the fields after them to be read.
	info := fmt.Sprintf("ClamAV-VDB:%s:%s:%s\ndaily.hdb:%d:%s\n",
		fields, strings.Repeat("0", 32), tail, len(hdb), hex.EncodeToString(sum[:]))

	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		data []byte
	}{{"daily.info", []byte(info)}, {"daily.hdb", hdb}} {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)),
			ModTime: built, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	header := fmt.Sprintf("ClamAV-VDB:%s:%x:%s", fields, md5.Sum(body.Bytes()), tail)
	if len(header) > 512 {
		return fmt.Errorf("clamd test database: header of %d bytes, at most 512", len(header))
	}
	out := append([]byte(header+strings.Repeat(" ", 512-len(header))), body.Bytes()...)
	return writeFile(dir, "daily.cud", out)
}

// writeFile writes data to dir/name through a temporary file, so that a
// clamd reloading its database never reads half of it.
func writeFile(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("clamd test database: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("clamd test database: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("clamd test database: %w", err)
	}
	// CreateTemp makes it 0600; a clamd running as another user reads it.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("clamd test database: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("clamd test database: %w", err)
	}
	return nil
}
