package fleet

import (
	"net/http"
	"testing"
)

func TestOutcome(t *testing.T) {
	tests := []struct {
		name string
		s    sample
		want string
	}{
		{"a page", sample{status: http.StatusOK}, "ok"},
		{"over the limit", sample{status: http.StatusTooManyRequests, code: "rate_limited", retryAfter: true}, "limited"},
		{"storage out, as the contract says", sample{status: http.StatusServiceUnavailable, code: "storage_unavailable", retryAfter: true}, "unavailable"},
		{"storage out without Retry-After", sample{status: http.StatusServiceUnavailable, code: "storage_unavailable"}, "failed"},
		{"haproxy's own 503 (no server)", sample{status: http.StatusServiceUnavailable, retryAfter: false}, "failed"},
		{"haproxy's 502", sample{status: http.StatusBadGateway}, "failed"},
		{"no answer", sample{status: 0}, "failed"},
		{"a cursor refused", sample{status: http.StatusBadRequest, code: "cursor_invalid"}, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcome(tt.s); got != tt.want {
				t.Errorf("outcome = %q, want %q", got, tt.want)
			}
		})
	}
}
