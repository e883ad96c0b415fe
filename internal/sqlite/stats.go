package sqlite

import (
	"database/sql"

	"github.com/cdnapi/cdnapi"
)

// Name is the engine's name in metrics and messages.
func (s *Store) Name() string { return "sqlite" }

// PoolStats returns the statistics of the read pool and of the writer's
// pool (one connection), for the metrics of serve.
func (s *Store) PoolStats() []cdnapi.PoolStats {
	return []cdnapi.PoolStats{pool("read", s.read.Stats()), pool("write", s.write.Stats())}
}

func pool(name string, s sql.DBStats) cdnapi.PoolStats {
	return cdnapi.PoolStats{Pool: name, InUse: s.InUse, Idle: s.Idle, Max: s.MaxOpenConnections, Waits: s.WaitCount}
}
