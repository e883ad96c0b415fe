package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnectFailure returns, when err is a failure to connect to PostgreSQL
// at all, one line that says where and why: "cannot connect to PostgreSQL
// at 127.0.0.1:1: connection refused", or the server's own refusal, such as
// `password authentication failed for user "cdnapi"`.
//
// pgx's own text for it spans a line per attempt: sslmode=prefer tries TLS
// and then plain text, and each try to each address adds its line. The
// cause is the same in all of them, so one line of it is what a person
// needs. ok is false for any other error.
func ConnectFailure(err error) (line string, ok bool) {
	ce, ok := errors.AsType[*pgconn.ConnectError](err)
	if !ok {
		return "", false
	}
	where := "PostgreSQL"
	if cfg := ce.Config; cfg != nil {
		if strings.HasPrefix(cfg.Host, "/") {
			where += " at the socket in " + cfg.Host
		} else {
			where += " at " + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
		}
	}
	return fmt.Sprintf("cannot connect to %s: %s", where, connectCause(ce.Unwrap())), true
}

// connectCause is the reason inside a connect error, without the attempts'
// addresses: the server's message when it answered, else the network's.
func connectCause(err error) string {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgErr.Message
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return "no such host"
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "timed out"
	}
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		return errno.Error()
	}
	// Unknown: the last attempt's line, whose cause is the final one.
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
