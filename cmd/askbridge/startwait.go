package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// A start that meets a NATS cluster not ready yet (no JetStream meta
// leader, a stream without its leader: calls time out) waits and tries
// again, saying so in its log and on /readyz, and never exits for it; it
// exits only for a setting that cannot work (docs/deploy.md, "A start
// that waits").
const (
	startRetryFirst = 250 * time.Millisecond
	startRetryMax   = 10 * time.Second
	// startStepTimeout bounds one try of one step.
	startStepTimeout = 10 * time.Second
	// accountSettle is how long a start waits out JetStream "not enabled
	// for account": a server of a cluster that has just started enables
	// JetStream for an account of its resolver when it first meets it,
	// and answers so until then; past this, it is a setting.
	accountSettle = 30 * time.Second
)

// waitable says whether a start step's error is waited out: a cluster not
// ready yet (bridge.Transient), or, within accountSettle of the step's
// first try, JetStream not enabled for askbridge's account yet.
func waitable(err error, sinceFirst time.Duration) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount {
		return sinceFirst < accountSettle
	}
	return bridge.Transient(err)
}

// startState is what /readyz says while the service starts.
type startState struct {
	waiting atomic.Pointer[string]
	handler atomic.Pointer[http.Handler]
}

// serveHTTP hands requests to the service's routes once it has started;
// before, /healthz says the process is alive and everything else, /readyz
// first, answers 503 naming what the start waits for.
func (st *startState) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := st.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.URL.Path == "/healthz" {
		fmt.Fprintln(w, "ok")
		return
	}
	why := "starting"
	if p := st.waiting.Load(); p != nil {
		why = "starting: waiting for NATS JetStream to " + *p
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintln(w, "not ready: "+why)
}

// started makes h the service's handler: the start is over.
func (st *startState) started(h http.Handler) { st.handler.Store(&h) }

// await runs step until it succeeds, trying again with a growing pause
// while its error is a cluster not ready yet (bridge.Transient). what
// says what the step waits for ("make its streams"), in the log and on
// /readyz. A step that never returns by itself must watch ctx, not the
// context it is given, which ends after startStepTimeout.
func (s *service) await(ctx context.Context, what string, step func(context.Context) error) error {
	pause := startRetryFirst
	first := time.Now()
	for try := 1; ; try++ {
		sctx, cancel := context.WithTimeout(ctx, startStepTimeout)
		err := step(sctx)
		cancel()
		if err == nil {
			if try > 1 {
				s.log.Info("NATS JetStream ready; the start goes on", "step", what, "tries", try)
			}
			s.start.waiting.Store(nil)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !waitable(err, time.Since(first)) {
			return err
		}
		why := what + ": " + err.Error()
		s.start.waiting.Store(&why)
		s.log.Warn("waiting for NATS JetStream (a cluster electing its leaders, or out of reach); trying again",
			"step", what, "try", try, "next_in", pause, "err", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, startRetryMax)
	}
}

// headerTimeout bounds the reading of a request's header. On a new
// connection net/http runs it from the accept, so a client that opens a
// connection and sends nothing for that long is closed unanswered.
const headerTimeout = 5 * time.Second

// serveHTTP serves the listener from the start: /readyz answers 503
// while the start waits, the service's routes once it has started.
func (s *service) serveHTTP() {
	s.http = &http.Server{
		Handler:           &s.start,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errs <- fmt.Errorf("http: %w", err)
		}
	}()
	s.log.Info("http listening; starting", "http", s.ln.Addr().String())
}

// ready reports whether this replica can do its work: NATS connected, the
// streams present, the store taking writes. It names the failing check.
func (s *service) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	// The checks at once: a probe's timeout is often a second.
	var streamsErr, runtimeErr, recordErr error
	var wg sync.WaitGroup
	if st := s.nats.Conn.Status(); st != nats.CONNECTED {
		streamsErr = errors.New("nats: " + st.String())
	} else {
		wg.Go(func() { streamsErr = bridge.CheckStreams(ctx, s.nats.JS) })
		wg.Go(func() { runtimeErr = s.rt.Check(ctx) })
	}
	wg.Go(func() { recordErr = s.record.Ping(ctx) })
	wg.Wait()
	var problems []string
	for _, err := range []error{cmp.Or(streamsErr, runtimeErr), recordErr} {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: "+strings.Join(problems, "; "))
		return
	}
	fmt.Fprintln(w, "ready")
}
