package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// streamSpecs are askbridge's durable subjects. Resumes are kept long
// enough for an agent that was down for days to re-attach.
//
// JetStream keeps an index entry in memory for every subject a stream
// holds, one per job here, so a stream that kept every message for its
// maxAge would cost memory for each job long after it ended. Hence the
// retentions:
//
//   - Work queues hold what only the runtime reads, and it keeps what it
//     reads in the store: a message waits until the runtime has
//     acknowledged it (however long it is away, up to maxAge) and goes.
//   - The events stream keeps an event until every consumer with interest
//     in it has acknowledged it (the chat adapters', see EventConsumer),
//     at most maxAge: a pending question whose cards are shown leaves
//     nothing in it. An event published while no consumer exists goes at
//     once; the runtime makes the adapters' consumers before it publishes
//     (docs/design.md).
//   - The answers stream is a limits stream: a message that goes writes a
//     tombstone, fsync'd in sync always, and on the answer path that one
//     more fsync cost a fifth of the throughput and the ability to keep up
//     with 1,000 answers a second (docs/benchmarks.md).
//
// async marks the streams written in async persist mode with
// AsyncPersist.
var streamSpecs = []streamSpec{
	{StreamQuestions, PrefixQuestion + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
	{StreamCancels, PrefixCancel + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
	{StreamAnswers, PrefixAnswer + ".>", 30 * 24 * time.Hour, jetstream.LimitsPolicy, false},
	{StreamEvents, PrefixEvent + ".>", EventRetention, jetstream.InterestPolicy, true},
	{StreamResumes, PrefixResume + ".>", 30 * 24 * time.Hour, jetstream.LimitsPolicy, true},
	{StreamDelivery, PrefixDelivery + ".>", 7 * 24 * time.Hour, jetstream.WorkQueuePolicy, true},
	{StreamExecuted, PrefixExecuted + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
	{StreamNotices, PrefixNotice + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
}

// StreamNames lists the streams EnsureStreams creates.
func StreamNames() []string {
	names := make([]string, len(streamSpecs))
	for i, s := range streamSpecs {
		names[i] = s.name
	}
	return names
}

// StreamOf names the stream that holds subject; "" for a subject none of
// askbridge's streams holds.
func StreamOf(subject string) string {
	for _, s := range streamSpecs {
		prefix := strings.TrimSuffix(s.subjects, ">")
		if strings.HasPrefix(subject, prefix) && len(subject) > len(prefix) {
			return s.name
		}
	}
	return ""
}

// EventRetention is how long the events stream keeps an event at most:
// one an adapter's consumer has not acknowledged (its adapter is away, or
// its platform switched off) waits that long for it, so an adapter's
// record of what it did for an event must live at least as long.
const EventRetention = 7 * 24 * time.Hour

// EventRecordTTL is how long a front-end keeps its record of what it did
// for an event (a card settled, a DM sent): a day longer than the events
// stream keeps the event, so a consumer reading the stream again finds
// the record and does nothing twice.
const EventRecordTTL = EventRetention + 24*time.Hour

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id.
const DuplicateWindow = 10 * time.Minute

// StreamOptions shape the streams EnsureStreams makes.
type StreamOptions struct {
	Replicas int
	// AsyncPersist: see NATSOptions.AsyncPersist. It applies to a new
	// stream with one replica only.
	AsyncPersist bool
	// Logger hears what EnsureStreams changed in, or left of, a stream
	// that existed with other settings; nil discards it.
	Logger *slog.Logger
}

// EnsureStreams creates askbridge's streams, or adopts them when they
// exist; safe to call from every replica at every start.
//
// An existing stream keeps what an operator may have tuned (limits on
// bytes or messages, compression, placement, description) and its persist
// mode, which JetStream does not let an update change. askbridge sets only
// what it relies on: its subjects, a duplicate window and a max age at
// least its own, acknowledged publishes, and the replica count asked for.
// Each change is logged; a stream in memory, or one of the work queues
// made with another retention, is refused. The events stream made with
// limits retention is turned into an interest stream (JetStream allows
// that change, not one to or from a work queue).
//
// A stream refused does not keep the others from being made: the error
// names each stream refused. Only JetStream not answering stops the
// round at once.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, o StreamOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	for _, s := range streamSpecs {
		err := ensureStream(ctx, js, s, o)
		if err == nil {
			continue
		}
		errs = append(errs, err)
		if unreachable(ctx, err) {
			// JetStream does not answer now: the other streams would
			// wait out the same silence, one after the other.
			break
		}
	}
	return errors.Join(errs...)
}

// streamSpec is what askbridge wants of one of its streams.
type streamSpec struct {
	name, subjects string
	maxAge         time.Duration
	retention      jetstream.RetentionPolicy
	async          bool
}

// ensureStream creates the stream s, or adopts it as it exists. A stream
// that already has what askbridge relies on is not updated: an update is
// a proposal to the cluster's meta leader, and every replica's heal would
// make one for each stream.
func ensureStream(ctx context.Context, js jetstream.JetStream, s streamSpec, o StreamOptions) error {
	replicas := max(o.Replicas, 1)
	cfg := jetstream.StreamConfig{
		Name:       s.name,
		Subjects:   []string{s.subjects},
		Storage:    jetstream.FileStorage,
		Retention:  s.retention,
		MaxAge:     s.maxAge,
		Duplicates: DuplicateWindow,
		Replicas:   replicas,
	}
	if s.async && o.AsyncPersist && replicas == 1 {
		cfg.PersistMode = jetstream.AsyncPersistMode
	}
	existing, err := js.Stream(ctx, s.name)
	switch {
	case err == nil:
		if o.Replicas == 0 {
			cfg.Replicas = 0 // not asked for: the stream keeps its count
		}
		adopted, changes, err := adoptStream(existing.CachedInfo().Config, cfg)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		o.Logger.Warn("nats: stream "+s.name+" existed with other settings; askbridge changed what it relies on", "changes", strings.Join(changes, "; "))
		if kept := operatorLimits(adopted); len(kept) > 0 {
			o.Logger.Info("nats: stream "+s.name+" keeps the limits it was given", "limits", strings.Join(kept, "; "))
		}
		cfg = adopted
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("nats: stream %s: %w", s.name, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("nats: stream %s: %w", s.name, replicasRefused(err, replicas))
	}
	return nil
}

// unreachable reports whether err is JetStream not answering at all (or
// ctx ended), rather than a refusal of one stream.
func unreachable(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionClosed)
}

// JetStream's refusals of a replica count (nats-server's error codes).
const (
	jsErrReplicasNotSupported  = 10074 // replicas > 1 not supported in non-clustered mode
	jsErrInsufficientResources = 10023
)

// replicasRefused explains JetStream's refusal of a replica count in the
// terms of ASK_NATS_REPLICAS; other errors are returned as they are.
func replicasRefused(err error, replicas int) error {
	var apiErr *jetstream.APIError
	if replicas <= 1 || !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode {
	case jsErrReplicasNotSupported:
		return &SettingError{fmt.Errorf("ASK_NATS_REPLICAS is %d, but the NATS server at ASK_NATS_URL is not part of a JetStream cluster and keeps one copy of a stream: "+
			"set ASK_NATS_REPLICAS=1, or point ASK_NATS_URL at a cluster of at least %d servers (%w)", replicas, replicas, err)}
	case jsErrInsufficientResources:
		return &SettingError{fmt.Errorf("ASK_NATS_REPLICAS is %d, and the NATS cluster at ASK_NATS_URL has not that many JetStream servers with room for a copy: "+
			"lower ASK_NATS_REPLICAS, or add servers or storage (%w)", replicas, err)}
	}
	return err
}

// adoptStream is the configuration an existing stream (have) is updated
// to: have, with what askbridge relies on taken from want, and each
// change said in words. A stream askbridge cannot use is refused.
func adoptStream(have, want jetstream.StreamConfig) (jetstream.StreamConfig, []string, error) {
	if have.Storage != jetstream.FileStorage {
		return have, nil, fmt.Errorf("nats: stream %s exists with %s storage, and askbridge keeps questions and answers on disk "+
			"(JetStream cannot change a stream's storage): delete the stream while askbridge is stopped and idle to have it made anew", have.Name, have.Storage)
	}
	if want.Retention == jetstream.WorkQueuePolicy && have.Retention != jetstream.WorkQueuePolicy {
		return have, nil, fmt.Errorf("nats: stream %s exists with %s retention, and askbridge keeps what only its runtime reads in a work queue "+
			"(JetStream cannot change a stream's retention): delete the stream while askbridge is stopped and idle to have it made anew", have.Name, have.Retention)
	}
	if want.Retention == jetstream.InterestPolicy && have.Retention == jetstream.WorkQueuePolicy {
		return have, nil, fmt.Errorf("nats: stream %s exists with %s retention, and askbridge keeps it until every adapter has read it (interest retention) "+
			"(JetStream cannot change a work queue's retention): delete the stream while askbridge is stopped and idle to have it made anew", have.Name, have.Retention)
	}
	out := have
	var changes []string
	if want.Retention == jetstream.InterestPolicy && have.Retention == jetstream.LimitsPolicy {
		// Messages every consumer has acknowledged go at once; those one
		// has not stay for it.
		out.Retention = want.Retention
		changes = append(changes, fmt.Sprintf("retention %s -> %s (an event goes once every consumer has acknowledged it)", have.Retention, want.Retention))
	}
	if !slices.Equal(have.Subjects, want.Subjects) {
		out.Subjects = want.Subjects
		changes = append(changes, fmt.Sprintf("subjects %v -> %v", have.Subjects, want.Subjects))
	}
	if have.Duplicates < want.Duplicates {
		out.Duplicates = want.Duplicates
		changes = append(changes, fmt.Sprintf("duplicate window %v -> %v", have.Duplicates, want.Duplicates))
	}
	// A longer max age only keeps more; none at all would keep every
	// message (and its subject's index entry) for ever.
	if have.MaxAge == 0 || have.MaxAge < want.MaxAge {
		out.MaxAge = want.MaxAge
		changes = append(changes, fmt.Sprintf("max age %v -> %v", ageWords(have.MaxAge), want.MaxAge))
	}
	if have.NoAck {
		out.NoAck = false
		changes = append(changes, "publishes acknowledged again (no_ack was set)")
	}
	if want.Replicas != 0 && have.Replicas != want.Replicas {
		out.Replicas = want.Replicas
		changes = append(changes, fmt.Sprintf("replicas %d -> %d (ASK_NATS_REPLICAS)", have.Replicas, want.Replicas))
	}
	return out, changes, nil
}

func ageWords(d time.Duration) string {
	if d == 0 {
		return "unlimited"
	}
	return d.String()
}

// operatorLimits says which limits beyond askbridge's a stream carries:
// when reached, JetStream drops or refuses messages askbridge keeps.
func operatorLimits(c jetstream.StreamConfig) []string {
	var out []string
	if c.MaxBytes > 0 {
		out = append(out, fmt.Sprintf("max bytes %d", c.MaxBytes))
	}
	if c.MaxMsgs > 0 {
		out = append(out, fmt.Sprintf("max messages %d", c.MaxMsgs))
	}
	if c.MaxMsgsPerSubject > 0 {
		out = append(out, fmt.Sprintf("max messages per subject %d", c.MaxMsgsPerSubject))
	}
	if c.MaxMsgSize > 0 {
		out = append(out, fmt.Sprintf("max message size %d", c.MaxMsgSize))
	}
	return out
}

// CheckStreams reports the first missing stream, for readiness.
func CheckStreams(ctx context.Context, js jetstream.JetStream) error {
	checks := make([]func() error, len(streamSpecs))
	for i, s := range streamSpecs {
		checks[i] = func() error {
			if _, err := js.Stream(ctx, s.name); err != nil {
				return fmt.Errorf("nats: stream %s: %w", s.name, err)
			}
			return nil
		}
	}
	return CheckAll(checks...)
}

// CheckAll runs the checks at once and returns the first error in their
// order, or nil: a readiness probe waits about one round trip to NATS,
// not one for each stream and consumer (a probe's timeout is often a
// second).
func CheckAll(checks ...func() error) error {
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Go(func() { errs[i] = check() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
