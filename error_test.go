package cdnapi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// TestErrNotFound checks that not found is said one way: ErrNotFound is the
// *Error of CodeNotFound, found through wrapping by errors.Is and ErrorCode.
func TestErrNotFound(t *testing.T) {
	wrapped := fmt.Errorf("regions: %w", cdnapi.ErrNotFound)
	if !errors.Is(wrapped, cdnapi.ErrNotFound) {
		t.Error("errors.Is does not find a wrapped ErrNotFound")
	}
	if code := cdnapi.ErrorCode(wrapped); code != cdnapi.CodeNotFound {
		t.Errorf("ErrorCode(wrapped ErrNotFound) = %q, want %q", code, cdnapi.CodeNotFound)
	}
	if errors.Is(cdnapi.Errorf(cdnapi.CodeNotFound, "", "no such thing"), cdnapi.ErrNotFound) {
		t.Error("another not_found error is ErrNotFound")
	}
}
