package postgres

import (
	"testing"

	"github.com/cdnapi/cdnapi/internal/storetest"
)

// TestWebhookStore runs the outbox suite on a fresh schema of the shared
// cluster.
func TestWebhookStore(t *testing.T) {
	t.Parallel()
	storetest.RunWebhooks(t, func(t *testing.T) storetest.WebhookStore { return newStore(t) })
}
