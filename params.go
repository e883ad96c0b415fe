package cdnapi

// The limits of the list endpoints.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

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

// ValidProject reports whether name can name a project: 1 to 64 ASCII
// letters, digits, '.', '_' or '-', starting with a letter or digit. API.md
// leaves projects open; a slug this plain is safe in logs, URLs and shells.
func ValidProject(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ProjectRule says what ValidProject accepts, for messages.
const ProjectRule = `1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`
