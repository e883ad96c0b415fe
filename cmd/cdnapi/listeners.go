package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// listener is one address of serve and the server that answers on it.
type listener struct {
	name string // api, edge or admin: the "listener" of the logs
	addr string
	srv  *http.Server
	l    net.Listener
}

// listeners are serve's addresses: the public API, the public edge, the
// private admin one, the upload server's authorization and the edges'
// log ingest when they are on.
type listeners struct {
	api, edge, admin *listener
	uploadAuth       *listener // nil: off
	ingest           *listener // nil: off
}

// all returns the listeners in the order they are bound and logged.
func (ls listeners) all() []*listener {
	all := []*listener{ls.api, ls.edge, ls.admin}
	if ls.uploadAuth != nil {
		all = append(all, ls.uploadAuth)
	}
	if ls.ingest != nil {
		all = append(all, ls.ingest)
	}
	return all
}

// listen binds every address before anything is served, so that a port in
// use ends the program at once with one clear line.
func (ls listeners) listen() error {
	all := ls.all()
	for i, l := range all {
		var err error
		if l.l, err = net.Listen("tcp", l.addr); err != nil {
			for _, bound := range all[:i] {
				bound.l.Close()
			}
			return fmt.Errorf("listen on %s: %w", l.addr, errors.Unwrap(err))
		}
	}
	return nil
}

// drainPolicy says how serve stops.
type drainPolicy struct {
	// begin runs as soon as shutdown begins: it makes the process report
	// that it is draining (/readyz fails, the status shows maintenance).
	begin func()
	// delay keeps serving that long after begin, so that load balancers
	// notice before the listeners close. It is at least keepAliveGrace.
	delay time.Duration
	// timeout bounds how long the requests in flight may take to finish.
	timeout time.Duration
}

// keepAliveGrace is the shortest time between the start of a drain and the
// closing of the listeners. From the start of a drain every answer carries
// Connection: close, so a client busy on a keep-alive connection gets its
// answer and closes; only then are the connections that stayed idle closed.
// Closing an idle connection at once would race a request the client may be
// sending on it, and cut that request.
const keepAliveGrace = 500 * time.Millisecond

// serveUntilDone serves every listener until ctx ends or one of them fails,
// then drains: begin, the delay (at least keepAliveGrace), and a graceful
// Shutdown of every server within the timeout, closing the connections still
// open after it. It returns the failure of a listener, if one failed.
func serveUntilDone(ctx context.Context, logger *slog.Logger, ls []*listener, p drainPolicy) error {
	errc := make(chan error, len(ls))
	for _, l := range ls {
		logger.Info("listening", "listener", l.name, "addr", l.l.Addr().String())
		go func() {
			if err := l.srv.Serve(l.l); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s listener: %w", l.name, err)
			}
		}()
	}

	var err error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "timeout", p.timeout.String())
	case err = <-errc:
		logger.Error("listener failed", "err", err)
	}
	p.begin()
	if err == nil {
		delay := max(p.delay, keepAliveGrace)
		logger.Info("draining: /readyz fails, answers carry Connection: close; listeners close after the delay", "delay", delay.String())
		select {
		case <-time.After(delay):
		case err = <-errc:
		}
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			if l.srv.Shutdown(shutdownCtx) != nil {
				l.srv.Close() // the timeout passed: cut what is left
			}
		})
	}
	wg.Wait()
	return err
}

// newServer returns an http.Server with every timeout set, so that slow or
// idle clients cannot hold connections and goroutines forever. Once draining
// is true, its answers carry Connection: close, and net/http closes each
// connection after its answer.
func newServer(h http.Handler, logger *slog.Logger, draining *atomic.Bool) *http.Server {
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isHTTP2Preface(r) {
				refusePreface(w)
				return
			}
			if draining.Load() {
				w.Header().Set("Connection", "close")
			}
			h.ServeHTTP(w, r)
		}),
		// OPTIONS * reaches the handlers, which answer it as the contract
		// says (204), rather than net/http's empty 200.
		DisableGeneralOptionsHandler: true,
		ReadHeaderTimeout:            5 * time.Second,
		ReadTimeout:                  10 * time.Second,
		WriteTimeout:                 30 * time.Second,
		IdleTimeout:                  120 * time.Second,
		MaxHeaderBytes:               32 << 10,
		ErrorLog:                     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// isHTTP2Preface reports whether r is the start of the HTTP/2 connection
// preface ("PRI * HTTP/2.0"), which net/http's HTTP/1 server hands to the
// handler, for handlers that upgrade by themselves, when it does not speak
// h2c itself, or when the preface comes after a first HTTP/1.1 request.
func isHTTP2Preface(r *http.Request) bool {
	return r.Method == "PRI" && r.ProtoMajor == 2 && r.RequestURI == "*"
}

// refusePreface answers an HTTP/2 preface that net/http left to the handler
// as net/http answers any other protocol version it does not speak: 505 in
// plain text, and the connection closed. The API's handlers never see it.
func refusePreface(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusHTTPVersionNotSupported)
	io.WriteString(w, "unsupported protocol version")
}

// baseURL returns the URL at which people reach a bound listener, for the
// pages to name: its address, with a wildcard host (0.0.0.0, ::) replaced by
// the machine's name, since no one can connect to a wildcard.
func baseURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
