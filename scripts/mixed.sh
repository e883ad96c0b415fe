# mixed.sh: the setup that scripts/bench-mixed and scripts/soak share, sourced
# by them (not run). It builds cdnapi and the helpers, makes a database on
# one engine, seeds it, serves it, and starts and stops the writer: a
# generated nginx access log that grows at RATE lines a second, tailed into
# the assets by `cdnapi follow`, while serve's pruner deletes the assets
# older than RETENTION.
#
# Settings (environment):
#   FILES=1000000 ASSETS=200000   what is seeded; the assets are older than RETENTION,
#                                 so the pruner has them to delete from the start
#   RATE=5000                     asset rows a second the writer adds
#   RETENTION=2m PRUNE_EVERY=10s  serve's --asset-retention and --prune-interval
#   FOLLOW_ARGS=                  more flags of `cdnapi follow`, e.g. "--batch-lines 1000"
#   BENCH_PORT=18190              the first of 8 loopback ports used
#   MIXED_DSN=                    serve a database made before (say, by KEEP=1
#                                 scripts/bench-week: 100 million assets) instead
#                                 of a fresh one: its assets stay as they are,
#                                 FILES files are added (ASSETS is not used), and
#                                 it is not removed at the end
#
# After mixed_start ENGINE: $work (a temporary directory), $cdnapi, $helper
# (scripts/bench-http.go), $mixed (scripts/mixed.go), $dsn, $api, $edge,
# $admin (URLs of serve), $api_pid, $static (the static server's URL) and
# $static_pid are set. mixed_writer_start and mixed_writer_stop start and
# stop the writer ($follow_pid, $follow_metrics); wal_bytes prints the
# size of the engine's write-ahead log; mixed_stop ends it all.

files=${FILES:-1000000}
assets=${ASSETS:-200000}
rate=${RATE:-5000}
retention=${RETENTION:-2m}
prune_every=${PRUNE_EVERY:-10s}
base_port=${BENCH_PORT:-18190}

work=$(mktemp -d /tmp/cdnapi-mixed.XXXXXX)
chmod 755 "$work" # the postgres user must reach its directory inside
pids=()
engine=""
pg_bin="" pg_data=""

mixed_cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  if [ -n "$pg_data" ]; then as_postgres "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null 2>&1 || true; fi
  pg_data=""
}
trap 'mixed_cleanup; rm -rf "$work"' EXIT

echo "== building cdnapi and the helpers"
go build -o "$work/cdnapi" ./cmd/cdnapi
go build -o "$work/helper" scripts/bench-http.go
go build -o "$work/mixed" scripts/mixed.go
cdnapi="$work/cdnapi" helper="$work/helper" mixed="$work/mixed"

# as_postgres CMD...: runs CMD as the postgres user when we are root.
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# wait_for URL LOG: waits until URL answers.
wait_for() {
  for _ in $(seq 200); do curl -sf -o /dev/null "$1" && return; sleep 0.1; done
  echo "nothing answers on $1:"; tail -20 "$2"; exit 1
}

# mixed_start ENGINE: a fresh database on ENGINE (sqlite or postgres),
# seeded, served, with the static server beside it.
mixed_start() {
  engine=$1
  local dir="$work/$engine"
  mkdir -p "$dir"
  chmod 755 "$dir"
  if [ -n "${MIXED_DSN:-}" ]; then
    dsn=$MIXED_DSN
    echo "== $engine: $dsn as it is, and $files files"
    "$cdnapi" seed --db "$dsn" --files "$files" --assets 0 --seed 1 >/dev/null
  else
    mixed_fresh
  fi
  mixed_serve
}

# mixed_fresh: a database of its own on $engine, seeded with $files files
# and $assets assets.
mixed_fresh() {
  local dir="$work/$engine" seed_now
  case "$engine" in
  sqlite) dsn="sqlite:$dir/cdnapi.db" ;;
  postgres)
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -x "$pg_bin/postgres" ] || { echo "no PostgreSQL server programs (apt-get install postgresql)"; exit 1; }
    pg_data="$dir/data"
    mkdir "$pg_data" && chmod 700 "$pg_data"
    [ "$(id -u)" = 0 ] && chown postgres "$dir" "$pg_data"
    as_postgres "$pg_bin/initdb" -D "$pg_data" -U postgres --auth=trust --encoding=UTF8 --locale=C >/dev/null
    # PostgreSQL's defaults, durable (fsync on), on loopback.
    as_postgres "$pg_bin/pg_ctl" -D "$pg_data" -l "$dir/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $((base_port + 7)) -k $dir" start >/dev/null
    as_postgres "$pg_bin/createdb" -h 127.0.0.1 -p $((base_port + 7)) -U postgres cdnapi
    dsn="postgres://postgres@127.0.0.1:$((base_port + 7))/cdnapi?sslmode=disable"
    ;;
  *) echo "unknown engine $engine: sqlite or postgres"; exit 1 ;;
  esac
  # The seeded data ends a day ago: every seeded asset is past RETENTION.
  seed_now=$(date -u -d '1 day ago' +%Y-%m-%dT%H:00:00Z)
  echo "== $engine: seeding $files files and $assets assets"
  "$cdnapi" seed --db "$dsn" --files "$files" --assets "$assets" --seed 1 --now "$seed_now" >/dev/null
}

# mixed_serve: serve on $dsn, and the static server beside it.
mixed_serve() {
  api="http://127.0.0.1:$base_port" edge="http://127.0.0.1:$((base_port + 1))" admin="http://127.0.0.1:$((base_port + 2))"
  "$cdnapi" serve --db "$dsn" --api-addr "127.0.0.1:$base_port" --edge-addr "127.0.0.1:$((base_port + 1))" \
    --admin-addr "127.0.0.1:$((base_port + 2))" --asset-retention "$retention" --prune-interval "$prune_every" \
    2>"$work/$engine.serve.log" &
  api_pid=$!
  pids+=("$api_pid")
  wait_for "$api/api/v1/status" "$work/$engine.serve.log"
  static="http://127.0.0.1:$((base_port + 3))"
  "$helper" static "127.0.0.1:$((base_port + 3))" "$api/api/v1/files?limit=20" 2>"$work/static.log" &
  static_pid=$!
  pids+=("$static_pid")
  wait_for "$static/" "$work/static.log"
  regions=$(curl -sf "$edge/api/v1/regions" | jq -r '[.data[].code] | join(",")')
  # The assets pages the read load asks for: the whole list and each region's.
  {
    echo "/api/v1/assets?limit=20"
    tr ',' '\n' <<<"$regions" | sed 's|^|/api/v1/assets?limit=20\&region=|'
  } >"$work/assets.paths"
}

# mixed_writer_start: the edge log grows at RATE lines a second and
# `cdnapi follow` tails it into the store.
mixed_writer_start() {
  : >"$work/edge.log"
  follow_metrics="http://127.0.0.1:$((base_port + 4))/metrics"
  # shellcheck disable=SC2086 # FOLLOW_ARGS is split into flags on purpose
  "$cdnapi" follow --db "$dsn" --metrics-addr "127.0.0.1:$((base_port + 4))" ${FOLLOW_ARGS:-} "$work/edge.log" \
    2>"$work/$engine.follow.log" &
  follow_pid=$!
  pids+=("$follow_pid")
  wait_for "$follow_metrics" "$work/$engine.follow.log"
  "$mixed" edgelog "$work/edge.log" "$rate" "$regions" &
  writer_pid=$!
  pids+=("$writer_pid")
  writer_started=$(date +%s.%N)
  listed_before=$("$mixed" metric "$follow_metrics" 'cdnapi_follow_lines_total{result="listed"')
}

# mixed_writer_stop: stops the log and, once it has caught up, the
# follower; prints what it listed a second.
mixed_writer_stop() {
  local listed now lag
  kill "$writer_pid"; wait "$writer_pid" 2>/dev/null || true
  now=$(date +%s.%N)
  listed=$("$mixed" metric "$follow_metrics" 'cdnapi_follow_lines_total{result="listed"')
  lag=$("$mixed" metric "$follow_metrics" cdnapi_follow_lag_seconds)
  kill "$follow_pid"; wait "$follow_pid" 2>/dev/null || true
  awk -v n="$((${listed%.*} - ${listed_before%.*}))" -v s="$writer_started" -v e="$now" -v lag="$lag" \
    'BEGIN { printf "writer: %d rows listed by cdnapi follow in %.0f s: %.0f rows/s; follower lag at the end %.2f s\n", n, e - s, n / (e - s), lag }'
}

# wal_bytes: the size of the write-ahead log: SQLite's -wal file, or
# PostgreSQL's pg_wal directory.
wal_bytes() {
  case "$engine" in
  sqlite) stat -c %s "${dsn#sqlite:}-wal" 2>/dev/null || echo 0 ;;
  postgres) du -sb "$pg_data/pg_wal" 2>/dev/null | cut -f1 ;;
  esac
}

# wal_watch_start: the WAL's size every 0.2 s, a line each, into
# $work/ENGINE.waltrace, until wal_watch_stop or the end: a WAL that passes
# its bound between two samples of a script is seen all the same. wal_max
# sets wal_max_bytes to the largest size seen since its last call (not in
# a subshell, which would lose where it got to).
wal_watch_start() {
  : >"$work/$engine.waltrace"
  wal_seen=0
  while :; do wal_bytes; sleep 0.2; done >>"$work/$engine.waltrace" &
  wal_watcher=$!
  pids+=("$wal_watcher")
}
wal_watch_stop() { kill "$wal_watcher" 2>/dev/null || true; wait "$wal_watcher" 2>/dev/null || true; }
wal_max() {
  local n
  n=$(wc -l <"$work/$engine.waltrace")
  wal_max_bytes=$(sed -n "$((wal_seen + 1)),${n}p" "$work/$engine.waltrace" | awk '$1 > m { m = $1 } END { print m + 0 }')
  wal_seen=$n
}

# log_problems: ERROR lines and SQLITE_BUSY mentions in serve's and the
# follower's logs.
log_problems() {
  local f errors busy
  for f in "$work/$engine.serve.log" "$work/$engine.follow.log"; do
    [ -f "$f" ] || continue
    errors=$(grep -c '"level":"ERROR"' "$f" || true)
    busy=$(grep -ciE 'SQLITE_BUSY|database is locked|\(5\)' "$f" || true)
    echo "log $(basename "$f"): $errors lines at ERROR, $busy mentioning SQLITE_BUSY"
    grep '"level":"ERROR"' "$f" | head -3 | cut -c1-300 || true
  done
}

# mixed_stop: ends everything of the engine.
mixed_stop() { mixed_cleanup; }

# cputicks PID: the CPU time PID has used, user and system, in clock ticks.
cputicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

cat >"$work/paths.lua" <<'LUA'
local paths = {}
-- Each thread of wrk has a Lua state of its own, whose random numbers are
-- the same sequence unless seeded: both threads would then ask for the
-- same paths in step, and one of each pair would find the page the other
-- just put in the page cache.
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("id", threads)
end
init = function(args)
  math.randomseed(id)
  for line in io.lines(args[1]) do paths[#paths + 1] = line end
end
request = function()
  return wrk.format("GET", paths[math.random(#paths)])
end
LUA
