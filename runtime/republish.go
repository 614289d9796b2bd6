package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// clockSkew allows for the NATS server's clock (message times) and this
// host's (row times) to differ.
const clockSkew = time.Minute

// staleAfter is the age past which an unsent outbox row may have been
// published before JetStream's duplicate window began: the relay then
// looks for it in its stream before publishing it again (a row is never
// published before it was written, so a younger row's first try is inside
// the window, give or take the clocks).
const staleAfter = bridge.DuplicateWindow - clockSkew

// earlierPublishes is what the relay found of its rows in their streams,
// gathered for one batch: each subject's last message and, where that
// did not tell, all its outbox message ids; and the streams looked up.
type earlierPublishes struct {
	last    map[string]*jetstream.RawStreamMsg // nil: the subject holds none
	ids     map[string]map[string]struct{}
	streams map[string]jetstream.Stream
}

// storedEarlier reports whether row's message is already in its stream.
// A crash between publishing a row and marking it sent leaves the row
// unsent; a restart within the duplicate window publishes it again and
// JetStream drops the copy, but after a longer stop (or NATS away that
// long with the acknowledgement lost) the copy would be stored, and the
// job would read its resume twice.
//
// The subject's last message settles most rows in one request: it is the
// row's own (a crash soon after publishing), or it was stored before the
// row was written (the row never reached the stream). Otherwise every
// message on the subject is read. An event every adapter acknowledged has
// left the events stream (interest retention) and is published again: the
// adapters handle it as any repeated event (docs/design.md).
func (rl *relay) storedEarlier(ctx context.Context, row record.OutboxRow, seen *earlierPublishes) (bool, error) {
	if seen.streams == nil {
		seen.last = make(map[string]*jetstream.RawStreamMsg)
		seen.ids = make(map[string]map[string]struct{})
		seen.streams = make(map[string]jetstream.Stream)
	}
	id := row.MsgID()
	last, ok := seen.last[row.Subject]
	if !ok {
		s, err := rl.streamOf(ctx, row.Subject, seen.streams)
		if err != nil {
			return false, fmt.Errorf("look for %s in its stream: %w", id, err)
		}
		last, err = s.GetLastMsgForSubject(ctx, row.Subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			last, err = nil, nil
		}
		if err != nil {
			return false, fmt.Errorf("look for %s in its stream: %w", id, err)
		}
		seen.last[row.Subject] = last
	}
	switch {
	case last == nil:
		return false, nil
	case last.Header.Get(jetstream.MsgIDHeader) == id:
		return true, nil
	case last.Time.Before(time.UnixMilli(row.OldAt).Add(-clockSkew)):
		return false, nil
	}
	ids, ok := seen.ids[row.Subject]
	if !ok {
		var err error
		if ids, err = rl.msgIDsOn(ctx, row.Subject, seen.streams); err != nil {
			return false, fmt.Errorf("look for %s in its stream: %w", id, err)
		}
		seen.ids[row.Subject] = ids
	}
	_, ok = ids[id]
	return ok, nil
}

// streamOf returns the stream that holds subject.
func (rl *relay) streamOf(ctx context.Context, subject string, streams map[string]jetstream.Stream) (jetstream.Stream, error) {
	name := bridge.StreamOf(subject)
	if name == "" {
		return nil, fmt.Errorf("no stream holds %s", subject)
	}
	s, ok := streams[name]
	if !ok {
		var err error
		if s, err = rl.js.Stream(ctx, name); err != nil {
			return nil, err
		}
		streams[name] = s
	}
	return s, nil
}

// msgIDsOn returns the message ids of every message its stream holds on
// subject. askbridge's subjects are one job's each, so they are few.
func (rl *relay) msgIDsOn(ctx context.Context, subject string, streams map[string]jetstream.Stream) (map[string]struct{}, error) {
	s, err := rl.streamOf(ctx, subject, streams)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]struct{})
	for seq := uint64(1); ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return ids, nil
		}
		if err != nil {
			return nil, err
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != "" {
			ids[id] = struct{}{}
		}
		seq = m.Sequence + 1
	}
}

// publishRow publishes row, or, when it is old and found already in its
// stream, stands for JetStream's acknowledgement without publishing it.
func (rl *relay) publishRow(ctx context.Context, row record.OutboxRow, seen *earlierPublishes) (jetstream.PubAckFuture, error) {
	if row.OldAt != 0 {
		stored, err := rl.storedEarlier(ctx, row, seen)
		if err != nil {
			return nil, err
		}
		if stored {
			rl.log.Info("outbox relay: message already in its stream, not published again", "msg_id", row.MsgID(), "subject", row.Subject)
			return newStoredAck(), nil
		}
	}
	f, err := rl.js.PublishMsgAsync(&nats.Msg{
		Subject: row.Subject,
		Data:    row.Data,
		Header:  nats.Header{jetstream.MsgIDHeader: []string{row.MsgID()}},
	})
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", row.MsgID(), err)
	}
	return f, nil
}

// storedAck stands for JetStream's acknowledgement of a row found already
// in its stream: the relay counts it acknowledged and marks it sent.
type storedAck struct{ ok chan *jetstream.PubAck }

func newStoredAck() storedAck {
	ok := make(chan *jetstream.PubAck, 1)
	ok <- &jetstream.PubAck{}
	return storedAck{ok: ok}
}

func (a storedAck) Ok() <-chan *jetstream.PubAck { return a.ok }
func (a storedAck) Err() <-chan error            { return nil }
func (a storedAck) Msg() *nats.Msg               { return nil }

var _ jetstream.PubAckFuture = storedAck{}
