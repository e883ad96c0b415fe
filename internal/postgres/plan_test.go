package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/jackc/pgx/v5"
)

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	IndexName string     `json:"Index Name"`
	Relation  string     `json:"Relation Name"`
	IndexCond string     `json:"Index Cond"`
	Filter    string     `json:"Filter"`
	Direction string     `json:"Scan Direction"`
	HitBlocks int        `json:"Shared Hit Blocks"`
	ReadBlock int        `json:"Shared Read Blocks"`
	Plans     []planNode `json:"Plans"`
}

// walk calls fn on n and every node below it.
func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// seedPlanData fills s with enough rows, spread over projects and regions
// like real data, that the planner weighs its options on statistics.
func seedPlanData(t *testing.T, s *Store) {
	t.Helper()
	const n = 30_000
	files := make([]cdnapi.File, n)
	assets := make([]cdnapi.Asset, n)
	for i := range n {
		at := t0.Add(-time.Duration(i) * 7 * time.Second)
		files[i] = file(fmt.Sprintf("fil_%d", i), at)
		files[i].Project = fmt.Sprintf("project%d", i%3)
		assets[i] = asset(fmt.Sprintf("ast_%d", i), fmt.Sprintf("REG%d", i%10), at)
	}
	ctx := t.Context()
	// The assets fill the day partitions of their times, which the plans
	// merge, and the default partition of a new database.
	if _, err := s.MakeAssetPartitions(ctx, t0.Add(-n*7*time.Second), t0); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(s).PutFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(s).PutAssets(ctx, assets); err != nil {
		t.Fatal(err)
	}
	if _, err := s.primary.Exec(ctx, `ANALYZE files, assets`); err != nil {
		t.Fatal(err)
	}
}

// Every list query is a range scan of its index, in index order, that needs
// no sort: its cost does not grow with the depth of the page. The plans are
// checked as custom plans (the parameters' values known) and as the generic
// plan PostgreSQL switches a prepared statement to after five runs.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	seedPlanData(t, s)
	mid := t0.Add(-15_000 * 7 * time.Second)

	tests := []struct {
		name     string
		query    string
		types    string // of the parameters, for PREPARE
		args     []any
		index    string
		keyConds []string // what the Index Cond must bound the scan by
	}{
		{"files first", listFilesFirst, "text, bigint", []any{"project1", 20},
			"files_by_project_created", []string{"project ="}},
		{"files after", listFilesAfter, "text, timestamptz, text, bigint", []any{"project1", mid, "fil_15000", 20},
			"files_by_project_created", []string{"project =", rowBound}},
		{"assets first", listAssetsFirst, "bigint", []any{20},
			"assets_by_created", nil},
		{"assets after", listAssetsAfter, "timestamptz, text, bigint", []any{mid, "ast_15000", 20},
			"assets_by_created", []string{rowBound}},
		{"region assets first", listRegionAssetsFirst, "text, bigint", []any{"REG3", 20},
			"assets_by_region_created", []string{"region >=", "region <="}},
		{"region assets after", listRegionAssetsAfter, "text, timestamptz, text, bigint", []any{"REG3", mid, "ast_15003", 20},
			"assets_by_region_created", []string{"region >=", "region <=", rowBound}},
	}
	parents := indexParents(t, s)
	conn, err := s.primary.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for i, tt := range tests {
		stmt := fmt.Sprintf("plan_%d", i)
		if _, err := conn.Exec(t.Context(), fmt.Sprintf("PREPARE %s (%s) AS %s", stmt, tt.types, tt.query)); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				if _, err := conn.Exec(t.Context(), "SET plan_cache_mode = "+mode); err != nil {
					t.Fatal(err)
				}
				placeholders := make([]string, len(tt.args))
				for i := range placeholders {
					placeholders[i] = fmt.Sprintf("$%d", i+1)
				}
				var raw []byte
				explain := fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE %s (%s)", stmt, strings.Join(placeholders, ", "))
				// The simple protocol sends EXPLAIN as text, so that its
				// parameters reach EXECUTE as values.
				args := append([]any{pgx.QueryExecModeSimpleProtocol}, tt.args...)
				if err := conn.QueryRow(t.Context(), explain, args...).Scan(&raw); err != nil {
					t.Fatal(err)
				}
				var plans []struct{ Plan planNode }
				if err := json.Unmarshal(raw, &plans); err != nil {
					t.Fatal(err)
				}
				checkPlan(t, plans[0].Plan, parents, tt.index, tt.keyConds)
				if t.Failed() {
					t.Logf("plan: %s", raw)
					return
				}
				plans[0].Plan.walk(func(n planNode) {
					if n.IndexName != "" {
						t.Logf("Limit -> %s using %s, Index Cond: %s", n.NodeType, n.IndexName, n.IndexCond)
					}
				})
			})
		}
	}
}

// rowBound is how EXPLAIN shows the keyset bound as an index condition.
const rowBound = "ROW(created_at, id) < ROW("

// indexParents maps the name of every index of s's schema to the name of
// the partitioned index it is a partition of, or to its own name: the
// plans of the assets scan each partition's index.
func indexParents(t *testing.T, s *Store) map[string]string {
	t.Helper()
	rows, err := s.primary.Query(t.Context(), `SELECT c.relname, coalesce(p.relname, c.relname)
		FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
		WHERE c.relkind IN ('i', 'I') AND c.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	parents := map[string]string{}
	for rows.Next() {
		var name, parent string
		if err := rows.Scan(&name, &parent); err != nil {
			t.Fatal(err)
		}
		parents[name] = parent
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return parents
}

// checkPlan asserts that plan scans index forwards (for the assets, the
// partitions of index, merged in order), bounded by every one of keyConds
// and with no filter, and sorts nothing.
func checkPlan(t *testing.T, plan planNode, parents map[string]string, index string, keyConds []string) {
	t.Helper()
	scans := 0
	plan.walk(func(n planNode) {
		switch n.NodeType {
		case "Sort", "Incremental Sort":
			t.Errorf("the plan sorts: %s", n.NodeType)
		case "Index Scan", "Index Only Scan":
			scans++
			if parents[n.IndexName] != index {
				t.Errorf("scans index %s, a partition of %s, want %s", n.IndexName, parents[n.IndexName], index)
			}
			if n.Direction != "Forward" {
				t.Errorf("scans %s, want Forward", n.Direction)
			}
			for _, c := range keyConds {
				if !strings.Contains(n.IndexCond, c) {
					t.Errorf("Index Cond %q does not bound the scan by %q", n.IndexCond, c)
				}
			}
			if n.Filter != "" {
				t.Errorf("the scan filters rows: %s", n.Filter)
			}
		case "Limit", "Merge Append":
		default:
			t.Errorf("unexpected plan node %s", n.NodeType)
		}
	})
	if scans == 0 {
		t.Error("the plan scans no index")
	}
}

// An index condition is not yet a start key: PostgreSQL can show a bound in
// Index Cond and still walk the index from its start, checking the bound on
// every entry. A deep page must read about as many buffers as the first;
// walking to it would read hundreds more on this data.
func TestDeepPagesReadNoMore(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	seedPlanData(t, s)
	ctx := t.Context()
	// slack allows for a deep page's rows lying on one more heap page, or
	// one more index level, than the first page's.
	const slack = 5

	tests := []struct {
		name         string
		first, after string
		filter       []any  // the leading arguments of both queries
		where        string // to find the deep position with OFFSET
		depth        int
	}{
		{"files", listFilesFirst, listFilesAfter, []any{"project1"}, "FROM files WHERE project = 'project1'", 9_500},
		{"assets", listAssetsFirst, listAssetsAfter, nil, "FROM assets", 28_500},
		{"region assets", listRegionAssetsFirst, listRegionAssetsAfter, []any{"REG3"}, "FROM assets WHERE region = 'REG3'", 2_850},
	}
	buffers := func(t *testing.T, query string, args ...any) int {
		t.Helper()
		var raw []byte
		if err := s.read.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal(raw, &plans); err != nil {
			t.Fatal(err)
		}
		return plans[0].Plan.HitBlocks + plans[0].Plan.ReadBlock
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var at time.Time
			var id string
			err := s.read.QueryRow(ctx, "SELECT created_at, id "+tt.where+
				" ORDER BY created_at DESC, id DESC OFFSET $1 LIMIT 1", tt.depth).Scan(&at, &id)
			if err != nil {
				t.Fatal(err)
			}
			first := buffers(t, tt.first, append(tt.filter, 20)...)
			deep := buffers(t, tt.after, append(tt.filter, at, id, 20)...)
			t.Logf("first page: %d buffers; page at row %d: %d buffers", first, tt.depth, deep)
			if deep > first+slack {
				t.Errorf("the page at row %d reads %d buffers, the first page %d: the scan does not start at the cursor",
					tt.depth, deep, first)
			}
		})
	}
}

// The delete of retention (assets_delete_before, migration 00011) finds
// its batch by walking each partition's assets_by_created from the old end,
// bounded by the cutoff and merged, and deletes each partition's share by
// physical address: no sort, no scan of a table. The selection is checked
// as a custom and as a generic plan, and the delete of a partition's rows
// as the TID scan it is.
func TestDeleteAssetsBeforePlan(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	seedPlanData(t, s)
	parents := indexParents(t, s)
	conn, err := s.primary.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The selection of assets_delete_before, as the function runs it.
	const pick = `SELECT tableoid, ctid FROM assets WHERE created_at < $1 ORDER BY created_at, id LIMIT $2`
	if _, err := conn.Exec(t.Context(), "PREPARE prune (timestamptz, bigint) AS "+pick); err != nil {
		t.Fatal(err)
	}
	explain := func(t *testing.T, query string, args ...any) planNode {
		t.Helper()
		var raw []byte
		if err := conn.QueryRow(t.Context(), query, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal(raw, &plans); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("plan: %s", raw)
			}
		})
		return plans[0].Plan
	}
	cutoff := t0.Add(-20_000 * 7 * time.Second)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			if _, err := conn.Exec(t.Context(), "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			indexScans := 0
			explain(t, "EXPLAIN (FORMAT JSON) EXECUTE prune ($1, $2)", cutoff, 1000).walk(func(n planNode) {
				switch n.NodeType {
				case "Limit", "Merge Append", "Append", "Result":
				case "Index Scan", "Index Only Scan":
					indexScans++
					if parents[n.IndexName] != "assets_by_created" || n.Direction != "Backward" || !strings.Contains(n.IndexCond, "created_at <") {
						t.Errorf("%s of %s %s, Index Cond %q; want a backward scan of a partition of assets_by_created bounded by created_at <",
							n.NodeType, n.IndexName, n.Direction, n.IndexCond)
					}
				default:
					t.Errorf("unexpected plan node %s", n.NodeType)
				}
			})
			if indexScans == 0 {
				t.Error("the selection scans no index")
			}
		})
	}
	t.Run("delete", func(t *testing.T) {
		tids := 0
		part := "assets_p" + utcDay(cutoff).Format("20060102") // holds rows
		explain(t, "EXPLAIN (FORMAT JSON) DELETE FROM "+part+" WHERE ctid = ANY ($1) AND created_at < $2",
			[]string{"(0,1)", "(0,2)"}, cutoff).walk(func(n planNode) {
			switch n.NodeType {
			case "ModifyTable":
			case "Tid Scan":
				tids++
			default:
				t.Errorf("unexpected plan node %s", n.NodeType)
			}
		})
		if tids != 1 {
			t.Errorf("the delete has %d TID scans, want 1", tids)
		}
	})
}

// The read of Ping walks each list's index for one row: no sort, and no
// sequential scan of files or assets.
func TestProbePlan(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	seedPlanData(t, s)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	var raw []byte
	if err := s.primary.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON) "+probeQuery).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &plans); err != nil {
		t.Fatal(err)
	}
	indexParents := indexParents(t, s)
	indexes := map[string]bool{}
	plans[0].Plan.walk(func(n planNode) {
		switch n.NodeType {
		case "Sort", "Incremental Sort":
			t.Errorf("the probe's plan sorts: %s", n.NodeType)
		case "Seq Scan":
			if n.Relation != "regions" { // a few dozen rows: a scan is the right plan
				t.Errorf("the probe's plan scans all of %s", n.Relation)
			}
		case "Index Scan", "Index Only Scan":
			indexes[indexParents[n.IndexName]] = true
		}
	})
	for _, want := range []string{"files_by_project_created", "assets_by_created"} {
		if !indexes[want] {
			t.Errorf("the probe does not read index %s", want)
		}
	}
	if t.Failed() {
		t.Logf("plan: %s", raw)
	}
}
