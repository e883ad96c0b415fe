package sqlite

import (
	"testing"

	"github.com/cdnapi/cdnapi/internal/storetest"
)

func TestWebhookStore(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) storetest.WebhookStore {
		s, _ := openTemp(t, Options{})
		return s
	})
}
