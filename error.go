package cdnapi

import (
	"errors"
	"fmt"
)

// The error codes of API.md. The HTTP edge maps each to its status code and
// error type; nothing else needs to know about HTTP.
const (
	CodeParameterInvalid       = "parameter_invalid"
	CodeParameterUnknown       = "parameter_unknown"
	CodeCursorInvalid          = "cursor_invalid"
	CodeRegionUnknown          = "region_unknown"
	CodeAuthenticationRequired = "authentication_required"
	CodeAPIKeyInvalid          = "api_key_invalid"
	CodePermissionDenied       = "permission_denied"
	CodeNotFound               = "not_found"
	CodeMethodNotAllowed       = "method_not_allowed"
	CodeBodyTooLarge           = "body_too_large"
	CodeEncodingUnsupported    = "encoding_unsupported"
	CodeRateLimited            = "rate_limited"
	CodeInternal               = "internal_error"
	CodeStorageUnavailable     = "storage_unavailable"
	// CodeBodyIncomplete is the ingest address's: a batch whose body did
	// not arrive whole (the connection was cut, or the read timed out).
	CodeBodyIncomplete = "body_incomplete"
)

// Error is an error that a client may see. Its Message is one plain sentence
// that says what to change; it never carries internals. Any error that is not
// an *Error reaches clients only as "internal_error".
type Error struct {
	Code    string // one of the Code constants
	Message string
	Param   string // the query parameter at fault, if any
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("cdnapi: %s (%s): %s", e.Code, e.Param, e.Message)
	}
	return fmt.Sprintf("cdnapi: %s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with a formatted message.
func Errorf(code, param, format string, args ...any) *Error {
	return &Error{Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err if it is, or wraps, an *Error, and
// CodeInternal otherwise.
func ErrorCode(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return CodeInternal
}

// ErrDegraded is wrapped in the error of a Store's Ping that answered, but
// without part of itself: on PostgreSQL with a read replica, the replica
// does not answer and reads go to the primary alone. The API still serves
// (readiness holds), and the status of Storage reads degraded_performance,
// because one more failure would be an outage.
var ErrDegraded = errors.New("degraded")

// ErrNotFound is returned by a Store when the one record asked for does not
// exist. It is the one way to say "not found": an *Error of CodeNotFound,
// which reaches clients as it is. Test for it with errors.Is.
var ErrNotFound = &Error{Code: CodeNotFound, Message: "the requested record does not exist"}
