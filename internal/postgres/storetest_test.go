package postgres

import (
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// TestStore runs the behaviour suite that every engine passes, each case on
// a fresh database of the shared cluster.
func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) cdnapi.Store { return newStore(t) })
}

// TestKeyStore runs the key storage suite on a fresh database of the shared
// cluster.
func TestKeyStore(t *testing.T) {
	t.Parallel()
	storetest.RunKeys(t, func(t *testing.T) cdnapi.KeyStore { return newStore(t) })
}
