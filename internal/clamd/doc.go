// Package clamd is a client of clamd, ClamAV's scanning daemon: PING,
// VERSION, and scanning an open file or a stream, one connection per
// command, over a unix socket or TCP.
//
// A file is passed to clamd as a descriptor (FILDES, over the unix socket
// only), so clamd reads it where it lies and never needs a path it may not
// be allowed to open; over TCP, and for an io.Reader, its bytes are streamed
// (INSTREAM).
//
// Why not a library: the Go clients of clamd were looked at in November
// 2026. github.com/dutchcoders/go-clamd has had no release since 2017, has
// no context support and no FILDES; github.com/elvinchan/clamd (a fork of
// baruwa-enterprise/clamd, MPL-2.0) scans paths or descriptors it opens
// itself rather than an *os.File we hold, and its INSTREAM sends 1 KiB
// chunks; github.com/PyYoshi/go-clamav is young and does INSTREAM only. The
// few commands needed here are a page of code on the standard library, and
// take no dependency.
//
// WriteTestDatabase writes a database that detects only the EICAR test
// file, for tests (internal/clamdtest) and the local demo CDN.
package clamd
