package cdnapi

// The limits of the list endpoints.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// ParseLimit parses the limit query parameter. Only a plain decimal integer
// from 1 to MaxLimit is accepted: no sign, no spaces, no fraction. The caller
// passes DefaultLimit's absence itself; ParseLimit sees only given values.
func ParseLimit(s string) (int, error) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errLimit
		}
		n = n*10 + int(c-'0')
		if n > MaxLimit {
			return 0, errLimit // stops long inputs before they can overflow
		}
	}
	if n < 1 {
		return 0, errLimit // also the empty string
	}
	return n, nil
}

var errLimit = Errorf(CodeParameterInvalid, "limit", "limit must be an integer from 1 to %d", MaxLimit)

// ValidRegionCode reports whether s has the shape of a region code: three
// upper-case ASCII letters and one digit, such as "FRA1".
func ValidRegionCode(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := range 3 {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return s[3] >= '0' && s[3] <= '9'
}

// ParseRegionCode checks the region query parameter of the assets list. It
// checks only the shape; whether the region exists is the store's to say.
func ParseRegionCode(s string) (string, error) {
	if !ValidRegionCode(s) {
		return "", Errorf(CodeParameterInvalid, "region",
			"region must be a region code of three upper-case letters and a digit, such as FRA1")
	}
	return s, nil
}

// MaxIDSuffix is the longest suffix an ID may have after its prefix.
const MaxIDSuffix = 64

// ValidID reports whether id is prefix followed by 1 to MaxIDSuffix ASCII
// letters and digits, as in "fil_8Kq2" for the prefix "fil_".
func ValidID(prefix, id string) bool {
	if len(id) <= len(prefix) || len(id) > len(prefix)+MaxIDSuffix || id[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// The ID prefixes.
const (
	FileIDPrefix  = "fil_"
	AssetIDPrefix = "ast_"
)
