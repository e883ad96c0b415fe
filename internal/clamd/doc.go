// Package clamd is a client of ClamAV's scanning daemon.
package clamd
