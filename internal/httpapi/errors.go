package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/cdnapi/cdnapi"
)

// errorStatus maps each error code of API.md to its HTTP status. It is the
// only place that knows that mapping.
var errorStatus = map[string]int{
	cdnapi.CodeParameterInvalid:       http.StatusBadRequest,
	cdnapi.CodeParameterUnknown:       http.StatusBadRequest,
	cdnapi.CodeCursorInvalid:          http.StatusBadRequest,
	cdnapi.CodeRegionUnknown:          http.StatusBadRequest,
	cdnapi.CodeAuthenticationRequired: http.StatusUnauthorized,
	cdnapi.CodeAPIKeyInvalid:          http.StatusUnauthorized,
	cdnapi.CodePermissionDenied:       http.StatusForbidden,
	cdnapi.CodeNotFound:               http.StatusNotFound,
	cdnapi.CodeMethodNotAllowed:       http.StatusMethodNotAllowed,
	cdnapi.CodeBodyTooLarge:           http.StatusRequestEntityTooLarge,
	cdnapi.CodeEncodingUnsupported:    http.StatusUnsupportedMediaType,
	cdnapi.CodeRateLimited:            http.StatusTooManyRequests,
	cdnapi.CodeInternal:               http.StatusInternalServerError,
	cdnapi.CodeStorageUnavailable:     http.StatusServiceUnavailable,
	// 503, not 408 or 400: shippers send again what got a 5xx (syslog-ng's
	// http() by default, and deploy/syslog-ng's response-action), and drop
	// what got a 4xx, while a body cut off in transit is no client's fault.
	cdnapi.CodeBodyIncomplete: http.StatusServiceUnavailable,
}

// errorType returns the error type of API.md for an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// retryAfterSeconds is the Retry-After of a 503: long enough for a store
// blip or a failover to pass, short enough that clients do not give up.
const retryAfterSeconds = "5"

// allowedMethods is the Allow header of every 405.
const allowedMethods = "GET, HEAD"

// The errors that do not depend on the request.
var (
	errInternal = cdnapi.Errorf(cdnapi.CodeInternal, "",
		"an internal error occurred; try again later, and quote the request_id if it persists")
	errStorageUnavailable = cdnapi.Errorf(cdnapi.CodeStorageUnavailable, "",
		"storage is unavailable; retry after the number of seconds in the Retry-After header")
	errMethodNotAllowed = cdnapi.Errorf(cdnapi.CodeMethodNotAllowed, "",
		"this endpoint answers only GET and HEAD")
)

// writeError answers r with err as the error body of API.md: the status and
// type that err's code maps to, Content-Type application/json,
// Cache-Control no-store, and the request ID.
//
// err should be a *cdnapi.Error. Any other error is logged, with the request
// ID, and reaches the client only as internal_error, so no internals leak.
// Middleware that runs before the handlers (authentication, rate limiting)
// answers through writeError too; headers it set before calling, such as
// Retry-After or WWW-Authenticate, are kept, and missing required ones are
// added.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := errors.AsType[*cdnapi.Error](err)
	if !ok {
		logger(r.Context()).LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", loggedRequestID(r.Context())), slog.Any("err", err))
		e = errInternal
	}
	status, known := errorStatus[e.Code]
	if !known {
		logger(r.Context()).LogAttrs(r.Context(), slog.LevelError, "error with unknown code",
			slog.String("request_id", loggedRequestID(r.Context())), slog.String("code", e.Code))
		e, status = errInternal, http.StatusInternalServerError
	}

	buf := getBuffer()
	defer putBuffer(buf)
	*buf = appendErrorBody(*buf, errorType(status), e.Code, e.Message, e.Param, requestID(r.Context()))
	*buf = append(*buf, '\n')

	h := w.Header()
	// A handler may have begun to describe a success before it failed;
	// none of that applies to the error.
	for _, k := range []string{"ETag", "Link", "Content-Encoding", "Last-Modified"} {
		h.Del(k)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(*buf)))
	switch status {
	case http.StatusMethodNotAllowed:
		if h.Get("Allow") == "" { // the ingest listener's route takes POST
			h.Set("Allow", allowedMethods)
		}
	case http.StatusUnauthorized:
		if h.Get("WWW-Authenticate") == "" {
			h.Set("WWW-Authenticate", `Bearer realm="cdnapi"`)
		}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if h.Get("Retry-After") == "" {
			h.Set("Retry-After", retryAfterSeconds)
		}
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(*buf)
	}
}

// storeError turns an error from the store into the error a client sees.
// An *cdnapi.Error (cdnapi.ErrNotFound among them) passes through, and
// anything else means the store could not answer: it is logged once, with
// the request ID, and becomes storage_unavailable.
func storeError(r *http.Request, err error) error {
	if _, ok := errors.AsType[*cdnapi.Error](err); ok {
		return err
	}
	level, msg := slog.LevelError, "store failed"
	if errors.Is(r.Context().Err(), context.Canceled) {
		// The client went away; nothing is wrong with the store.
		level, msg = slog.LevelInfo, "store call abandoned by the client"
	}
	logger(r.Context()).LogAttrs(r.Context(), level, msg,
		slog.String("request_id", loggedRequestID(r.Context())), slog.Any("err", err))
	return errStorageUnavailable
}

// notFound returns the not_found error whose message is message.
func notFound(message string) *cdnapi.Error {
	return cdnapi.Errorf(cdnapi.CodeNotFound, "", "%s", message)
}
