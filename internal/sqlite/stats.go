package sqlite

import "database/sql"

// PoolStats returns the statistics of the read pool and of the writer's
// pool (one connection), for the metrics of serve.
func (s *Store) PoolStats() (read, write sql.DBStats) {
	return s.read.Stats(), s.write.Stats()
}
