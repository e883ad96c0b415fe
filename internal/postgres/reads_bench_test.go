package postgres

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkStandbyReturn compares two ways for reads to survive the
// standby: this package's fallback pool (reads.go), and pgx's multi-host
// DSN with target_session_attrs=prefer-standby, with pgxpool's default
// connection lifetime (an hour) and with a short one (5 s). Under a steady
// read load it stops the standby for 3 s and starts it again, and reports
// the reads that failed while it was down (failed/op), those that failed
// once it was back (failed-after/op), and how long after its return reads
// came from it again (ms-back/op; 10000 means not within the 10 s watched).
// Each run starts its own two servers, so -benchtime=1x is enough:
//
//	go test -run '^$' -bench StandbyReturn -benchtime=1x ./internal/postgres
func BenchmarkStandbyReturn(b *testing.B) {
	for _, bb := range []struct {
		name string
		open func(b *testing.B, primary, replica *pgtest.Cluster, db string) func(context.Context) (bool, error)
	}{
		{"fallback", func(b *testing.B, primary, replica *pgtest.Cluster, db string) func(context.Context) (bool, error) {
			s := openStore(b, primary.DSN(db), Options{ReadDSN: replica.DSN(db)})
			return func(ctx context.Context) (standby bool, err error) {
				err = s.reading(ctx, func(p *pgxpool.Pool) error {
					return p.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby)
				})
				return standby, err
			}
		}},
		{"multihost-1h", multiHost(0)},
		{"multihost-5s", multiHost(5 * time.Second)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for range b.N {
				failed, failedAfter, back := standbyReturn(b, bb.open)
				b.ReportMetric(float64(failed), "failed/op")
				b.ReportMetric(float64(failedAfter), "failed-after/op")
				b.ReportMetric(float64(back.Milliseconds()), "ms-back/op")
			}
		})
	}
}

// multiHost opens a pool on both servers, the standby first, with
// target_session_attrs=prefer-standby and, if set, a connection lifetime.
func multiHost(lifetime time.Duration) func(*testing.B, *pgtest.Cluster, *pgtest.Cluster, string) func(context.Context) (bool, error) {
	return func(b *testing.B, primary, replica *pgtest.Cluster, db string) func(context.Context) (bool, error) {
		u := url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + db,
			Host:     fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", replica.Port(), primary.Port()),
			RawQuery: "sslmode=disable&connect_timeout=2&target_session_attrs=prefer-standby"}
		cfg, err := pgxpool.ParseConfig(u.String())
		if err != nil {
			b.Fatal(err)
		}
		if lifetime > 0 {
			cfg.MaxConnLifetime, cfg.MaxConnLifetimeJitter = lifetime, lifetime/5
		}
		pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		return func(ctx context.Context) (standby bool, err error) {
			err = pool.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby)
			return standby, err
		}
	}
}

// standbyReturn runs one stop and start of the standby under 4 readers
// that read every 2 ms, each read within 2 s (cdnapi's --store-timeout).
func standbyReturn(b *testing.B, open func(*testing.B, *pgtest.Cluster, *pgtest.Cluster, string) func(context.Context) (bool, error)) (failed, failedAfter int, back time.Duration) {
	b.StopTimer()
	primary := pgtest.Start(b)
	replica := primary.StartReplica(b)
	db := replica.CreateDatabase(b)
	read := open(b, primary, replica, db)
	b.StartTimer()

	type result struct {
		at      time.Time
		standby bool
		err     error
	}
	var mu sync.Mutex
	var results []result
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				standby, err := read(rctx)
				rcancel()
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				results = append(results, result{time.Now(), standby, err})
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second)
	stopped := time.Now()
	if err := replica.Stop(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := replica.Restart(); err != nil {
		b.Fatal(err)
	}
	restarted := time.Now()
	back = 10 * time.Second
	for time.Since(restarted) < 10*time.Second {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		for _, r := range results {
			if r.at.After(restarted) && r.err == nil && r.standby && r.at.Sub(restarted) < back {
				back = r.at.Sub(restarted)
			}
		}
		mu.Unlock()
		if back < 10*time.Second {
			break
		}
	}
	cancel()
	wg.Wait()
	for _, r := range results {
		switch {
		case r.err == nil || r.at.Before(stopped):
		case r.at.Before(restarted):
			failed++
		default:
			failedAfter++
		}
	}
	return failed, failedAfter, back
}
