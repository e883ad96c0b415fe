package postgres

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdnapi/cdnapi"
)

// Name is the engine's name in metrics and messages.
func (s *Store) Name() string { return "postgres" }

// PoolStats returns the statistics of the primary's pool and, when the
// lists read from a replica, of the replica's.
func (s *Store) PoolStats() []cdnapi.PoolStats {
	stats := []cdnapi.PoolStats{pool("primary", s.primary.Stat())}
	if s.read != s.primary {
		stats = append(stats, pool("replica", s.read.Stat()))
	}
	return stats
}

func pool(name string, s *pgxpool.Stat) cdnapi.PoolStats {
	return cdnapi.PoolStats{Pool: name, InUse: int(s.AcquiredConns()), Idle: int(s.IdleConns()),
		Max: int(s.MaxConns()), Waits: s.EmptyAcquireCount()}
}
