package jsstore

import (
	"context"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// Snoozes are the snoozes on a question still to end at now: who, until
// when. The ladder's reminders skip them.
func (s *Store) Snoozes(ctx context.Context, question int64, now time.Time) (map[string]time.Time, error) {
	d, _, _, err := s.getQuestion(ctx, question)
	if err != nil {
		return nil, fmt.Errorf("jsstore: snoozes of question %d: %w", question, err)
	}
	out := map[string]time.Time{}
	if d == nil {
		return out, nil
	}
	for who, sn := range d.Snoozes {
		// Compared in milliseconds, as SQLite keeps times.
		if sn.Until.UnixMilli() > now.UnixMilli() {
			out[who] = sn.Until
		}
	}
	return out, nil
}

// SnoozeOf is the snooze a snooze step ends: who snoozed, until when.
// ErrNotFound when there is none.
func (s *Store) SnoozeOf(ctx context.Context, question int64, step int) (string, time.Time, error) {
	d, _, _, err := s.getQuestion(ctx, question)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("jsstore: snooze step %d of question %d: %w", step, question, err)
	}
	if d != nil {
		for who, sn := range d.Snoozes {
			if sn.Step == step {
				return who, sn.Until, nil
			}
		}
	}
	return "", time.Time{}, record.ErrNotFound
}
