package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error is an error answer of the API, as its contract describes them:
//
//	{"error":{"type":…,"code":…,"message":…,"param":…,"request_id":…}}
//
// Find it with errors.As. An answer that is not in that shape (say, from a
// proxy in front of the API) still becomes an *Error, with the HTTP status,
// the X-Request-Id header if any, an empty Code and the status text as the
// Message. Transport errors are not *Error: they come wrapped as they are.
type Error struct {
	StatusCode int    // the HTTP status, such as 400
	Type       string // invalid_request_error, authentication_error, rate_limit_error or api_error
	Code       string // such as "parameter_invalid"; the cdnapi.Code constants
	Message    string // one sentence that says what to change
	Param      string // the query parameter at fault, if any
	RequestID  string // quote it when asking the operators
}

// Error returns the message, the code, the parameter and the request ID, as
// in "limit must be an integer from 1 to 100 (400 parameter_invalid, param
// limit, request req_8Kq2)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	fmt.Fprintf(&b, " (%d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Param != "" {
		b.WriteString(", param " + e.Param)
	}
	if e.RequestID != "" {
		b.WriteString(", request " + e.RequestID)
	}
	b.WriteString(")")
	return b.String()
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error struct {
		Type      string `json:"type"`
		Code      string `json:"code"`
		Message   string `json:"message"`
		Param     string `json:"param"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

// newError makes the *Error of an answer whose status is not 200 or 304
// from its status, headers and (possibly empty) body.
func newError(res *http.Response, body []byte) *Error {
	e := &Error{StatusCode: res.StatusCode, RequestID: res.Header.Get("X-Request-Id")}
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.Type, e.Code, e.Message, e.Param = eb.Error.Type, eb.Error.Code, eb.Error.Message, eb.Error.Param
		if eb.Error.RequestID != "" {
			e.RequestID = eb.Error.RequestID
		}
		return e
	}
	e.Message = http.StatusText(res.StatusCode)
	if e.Message == "" {
		e.Message = "unexpected HTTP status"
	}
	return e
}
