package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// routeRedisLog sends go-redis's own log through logger, at debug level.
// Left alone, the library prints plain text to stderr, outside the JSON
// log, such as a failed dial once a second for as long as Redis is away.
// The rate limiter already says once that Redis went away and once that it
// came back (internal/ratelimit), so these lines add nothing at info;
// --log-level debug shows them. go-redis has one logger per process.
func routeRedisLog(logger *slog.Logger) {
	redis.SetLogger(redisLogger{logger})
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...), "source", "go-redis")
}
