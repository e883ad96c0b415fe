//go:build ignore

// dbsize.go is scripts/soak's look at the assets table on disk, built by it:
//
//	dbsize DSN    prints "BYTES ROWS DEAD" for the database at DSN
//
// DSN is sqlite:PATH or a postgres:// URL, as serve takes it. BYTES is what
// the engine holds on disk for the assets: SQLite's whole main file (its
// page count times its page size; the free pages a pruner leaves are
// inside it, and the -wal file is not), PostgreSQL's table, indexes and
// TOAST of every partition of assets. ROWS is the live assets, counted.
// DEAD is what is held but no longer live: SQLite's free pages in bytes,
// PostgreSQL's dead tuples as its statistics count them.
package main

import (
	"database/sql"
	"fmt"
	"log"
	"os"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) != 2 {
		log.Fatal("usage: dbsize DSN")
	}
	bytes, rows, dead, err := measure(os.Args[1])
	if err != nil {
		log.Fatal("dbsize: ", err)
	}
	fmt.Println(bytes, rows, dead)
}

func measure(dsn string) (bytes, rows, dead int64, err error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		// Read-only, and waiting out the writer's locks: the soak's
		// follower and pruner write all the time.
		db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
		if err != nil {
			return 0, 0, 0, err
		}
		defer db.Close()
		var pages, size, free int64
		err = db.QueryRow(`SELECT (SELECT page_count FROM pragma_page_count()),
			(SELECT page_size FROM pragma_page_size()),
			(SELECT freelist_count FROM pragma_freelist_count()),
			(SELECT count(*) FROM assets)`).Scan(&pages, &size, &free, &rows)
		return pages * size, rows, free * size, err
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0, 0, 0, err
	}
	defer db.Close()
	err = db.QueryRow(`SELECT
		(SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('assets') WHERE isleaf),
		(SELECT count(*) FROM assets),
		(SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables
		  WHERE relid IN (SELECT relid FROM pg_partition_tree('assets')))`).Scan(&bytes, &rows, &dead)
	return bytes, rows, dead, err
}
