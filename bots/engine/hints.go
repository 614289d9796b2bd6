package engine

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// ThreadHintTTL is how long the threads bucket names a job's new thread:
// as long as a claim to show a question, past the restart of a run killed
// while it showed the job's first question. By then the card's delivery
// report has told the runtime, which names the thread on later events.
const ThreadHintTTL = ShowClaimTTL

// FollowHints copies into put the hints of the threads bucket whose keys
// start with prefix (a platform's: "slack."), with the prefix cut off, as
// any replica or run writes them: a chat adapter then knows the threads
// other runs opened lately without a read of the bucket for each new job.
// It returns once the hints already there are copied (or after wait, or
// when the bucket cannot be watched: an adapter without them opens a
// second thread now and then, nothing worse), and follows until ctx ends,
// watching again after a second when the watch ends (the bucket deleted
// and made again).
func FollowHints(ctx context.Context, kv *bridge.KV, prefix string, wait time.Duration, log *slog.Logger, put func(key string, value []byte)) {
	caught := make(chan struct{})
	go func() {
		once := false
		for ctx.Err() == nil {
			followOnce(ctx, kv, prefix, put, func() {
				if !once {
					once = true
					close(caught)
				}
			}, log)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	select {
	case <-caught:
	case <-ctx.Done():
	case <-time.After(wait):
	}
}

// followOnce follows one watch of the bucket until it ends; caughtUp is
// called once the hints already there are copied.
func followOnce(ctx context.Context, kv *bridge.KV, prefix string, put func(string, []byte), caughtUp func(), log *slog.Logger) {
	w, err := kv.Watch(ctx, prefix+">")
	if err != nil {
		if ctx.Err() == nil {
			log.Debug("could not follow the threads bucket", "err", err)
		}
		return
	}
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e == nil {
			caughtUp()
			continue
		}
		if len(e.Value()) > 0 {
			put(strings.TrimPrefix(e.Key(), prefix), e.Value())
		}
	}
}
