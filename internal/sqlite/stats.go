package sqlite

import (
	"database/sql"
	"os"

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

// WAL returns the size of the database's -wal file (0 when there is
// none) and the size over which the Store checkpoints it (see
// checkpoint.go), for the metrics of serve: a WAL that stays over its
// limit is one the checkpoints cannot empty, because a reader or another
// process's writer keeps them out.
func (s *Store) WAL() (bytes, limit int64) {
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		bytes = fi.Size()
	}
	return bytes, s.checkpoints.limit
}
