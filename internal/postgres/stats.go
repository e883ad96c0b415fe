package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// PoolStats returns the statistics of the primary's pool and of the read
// replica's, which is nil when the lists read from the primary.
func (s *Store) PoolStats() (primary, replica *pgxpool.Stat) {
	primary = s.primary.Stat()
	if s.read != s.primary {
		replica = s.read.Stat()
	}
	return primary, replica
}
