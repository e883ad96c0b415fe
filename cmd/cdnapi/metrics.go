package main

import (
	"database/sql"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storemetrics"
)

// measureStore returns st with its calls measured in reg, and registers
// the collector of its connection pools.
func measureStore(st store, reg prometheus.Registerer) store {
	var engine string
	var pools func() []storemetrics.PoolStats
	switch s := st.(type) {
	case *sqlite.Store:
		engine = "sqlite"
		pools = func() []storemetrics.PoolStats {
			read, write := s.PoolStats()
			return []storemetrics.PoolStats{sqlPool("read", read), sqlPool("write", write)}
		}
	case *postgres.Store:
		engine = "postgres"
		pools = func() []storemetrics.PoolStats {
			primary, replica := s.PoolStats()
			stats := []storemetrics.PoolStats{pgxPool("primary", primary)}
			if replica != nil {
				stats = append(stats, pgxPool("replica", replica))
			}
			return stats
		}
	default:
		panic("measureStore: unknown engine") // open returns one of the two
	}
	reg.MustRegister(storemetrics.NewPoolCollector(engine, pools))
	return storemetrics.Wrap(st, engine, storemetrics.NewMetrics(reg))
}

func sqlPool(name string, s sql.DBStats) storemetrics.PoolStats {
	return storemetrics.PoolStats{Pool: name, InUse: s.InUse, Idle: s.Idle, Max: s.MaxOpenConnections, Waits: s.WaitCount}
}

func pgxPool(name string, s *pgxpool.Stat) storemetrics.PoolStats {
	return storemetrics.PoolStats{Pool: name, InUse: int(s.AcquiredConns()), Idle: int(s.IdleConns()),
		Max: int(s.MaxConns()), Waits: s.EmptyAcquireCount()}
}
