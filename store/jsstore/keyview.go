package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keyView is a replica's in-memory view of the keys one pattern matches,
// kept by a watch of them: the due steps' heap (duewatch.go) and the
// questions by state (stateview.go). A read first brings the watch up
// to the last write of any matching key, so a replica reads its own writes
// and every other replica's that committed before the read began.
type keyView struct {
	// filter is the key pattern; what names the view in errors.
	filter, what string
	// mark, when set, is a literal key filter matches, written last in
	// every batch that writes another: a read waits for its last revision
	// instead of the last of all filter's keys, and apply never sees it.
	mark string
	// reset empties the view for a new watch; apply applies one entry,
	// initial tells whether it is one of the watch's initial values (the
	// last write of each key, deletes included) or a later write. Both
	// run under mu.
	reset func()
	apply func(e jetstream.KeyValueEntry, initial bool)

	mu      sync.Mutex
	running bool
	// initial is set until the watch has delivered its initial values.
	initial bool
	rev     uint64
	// moved is closed (and replaced) whenever rev moves or the watch ends.
	moved chan struct{}
	// failed is why the watch ended on its own; the next read starts it
	// again.
	failed error
	// gen counts the watches started: a watch's entries and end count
	// only while it is the current one. stop ends the current one.
	gen  int
	stop func() error
}

// viewStall is how long a view may lag the record without moving before
// a read waiting on it starts a new watch.
const viewStall = 2 * time.Second

// apiTimeout bounds a request the store makes to JetStream's API itself.
const apiTimeout = 5 * time.Second

// startView starts v's watch unless it runs. It stops with the store
// (Close).
func (s *Store) startView(v *keyView) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.running {
		return nil
	}
	if s.bg.Err() != nil {
		return fmt.Errorf("jsstore: the store is closed")
	}
	// The watch outlives the call that starts it: it is made with the
	// store's context.
	w, err := s.kv.WatchFiltered(s.bg, []string{v.filter})
	if err != nil {
		return fmt.Errorf("jsstore: watch %s: %w", v.what, err)
	}
	v.running, v.initial, v.failed, v.rev = true, true, nil, 0
	v.reset()
	if v.moved == nil {
		v.moved = make(chan struct{})
	}
	v.gen++
	v.stop = w.Stop
	go s.followView(v, w, v.gen)
	return nil
}

// followView applies the watch's entries to the view until the store
// closes or the watch ends.
func (s *Store) followView(v *keyView, w jetstream.KeyWatcher, gen int) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-s.bg.Done():
			v.end(gen, fmt.Errorf("jsstore: the store is closed"))
			return
		case e, open := <-w.Updates():
			if !open {
				v.end(gen, fmt.Errorf("jsstore: the watch of %s ended", v.what))
				return
			}
			v.applyEntry(gen, e)
		}
	}
}

// end marks the watch stopped, so that the next read starts it again.
func (v *keyView) end(gen int, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if gen != v.gen || !v.running {
		return // a watch stopped and replaced already
	}
	if v.stop != nil {
		_ = v.stop()
	}
	v.running, v.failed = false, err
	v.reset()
	close(v.moved)
	v.moved = make(chan struct{})
}

// applyEntry applies one entry of watch gen; nil marks the end of the
// initial values.
func (v *keyView) applyEntry(gen int, e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if gen != v.gen || !v.running {
		return
	}
	if e == nil {
		v.initial = false
		close(v.moved)
		v.moved = make(chan struct{})
		return
	}
	if e.Key() != v.mark {
		v.apply(e, v.initial)
	}
	v.rev = max(v.rev, e.Revision())
	close(v.moved)
	v.moved = make(chan struct{})
}

// read brings v up to date with every matching key written before it was
// called and runs f on the view, under its lock.
func (s *Store) read(ctx context.Context, v *keyView, f func()) error {
	var p viewProgress
	for {
		if err := s.startView(v); err != nil {
			return err
		}
		last, err := s.lastRev(ctx, cmp.Or(v.mark, v.filter))
		if err != nil {
			return fmt.Errorf("jsstore: read the last of %s: %w", v.what, err)
		}
		if done, err := v.waitFor(ctx, last, &p, f); done || err != nil {
			return err
		}
	}
}

// viewProgress is where a read last saw its view, and when.
type viewProgress struct {
	gen int
	rev uint64
	at  time.Time
}

// waitFor runs f, under v's lock, once v has applied the write at
// revision last (and, with a mark, all of its watch's initial values: the
// keys written before the first mark are among them). It returns false
// for the caller to read last again when the watch ended or stalled, or
// after a second: the last matching key may have gone (an expired delete
// marker) before the watch saw it.
func (v *keyView) waitFor(ctx context.Context, last uint64, p *viewProgress, f func()) (bool, error) {
	again := time.After(time.Second)
	for {
		v.mu.Lock()
		if !v.running {
			v.mu.Unlock()
			return false, nil // it ended meanwhile: start it again
		}
		if v.rev >= last && (v.mark == "" || !v.initial) {
			f()
			v.mu.Unlock()
			return true, nil
		}
		if v.gen != p.gen || v.rev != p.rev {
			p.gen, p.rev, p.at = v.gen, v.rev, time.Now()
		} else if time.Since(p.at) > viewStall {
			// The watch is behind and has not moved: its consumer is gone
			// with a server that went away, and the client would notice
			// only after missing its heartbeats. A new one reads the keys
			// afresh.
			v.mu.Unlock()
			v.end(p.gen, fmt.Errorf("jsstore: the watch of %s stalled", v.what))
			return false, nil
		}
		moved := v.moved
		v.mu.Unlock()
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("jsstore: wait for %s: %w", v.what, ctx.Err())
		case <-moved:
		case <-again:
			return false, nil
		}
	}
}

// lastRev is the revision of the last write of any key filter matches, 0
// when there is none. One request to the stream's leader: the direct get
// API takes no wildcard subject.
func (s *Store) lastRev(ctx context.Context, filter string) (uint64, error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": subjectPrefix + filter})
	// As the jetstream package's own requests, it gives up in time when
	// the stream has no leader; the caller tries again shortly.
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	msg, err := s.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+streamName, req)
	if err != nil {
		return 0, err
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, nil
	case resp.Error != nil:
		return 0, resp.Error
	case resp.Message == nil:
		return 0, fmt.Errorf("an empty reply")
	}
	return resp.Message.Seq, nil
}
