//go:build !linux

package origin

import "errors"

// openat2Beneath: only Linux has openat2; openBeneath goes one name at a
// time instead.
func openat2Beneath(int, string, int) (int, error) { return -1, errors.ErrUnsupported }
