package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/bridge"
)

// Card is what an adapter remembers of a question it showed or settled:
// enough to settle its card and answer a click without asking the runtime.
type Card struct {
	Ref      bridge.Ref
	Question *bridge.Question
	AskedAt  time.Time
	Deadline time.Time
	// Message is where the card is, nil before it is posted.
	Message *bridge.MessageRef
	// Ended is the event that ended the question, nil while it waits.
	Ended *bridge.Event
	// Updated says the platform's card shows how it ended.
	Updated bool
	// Proposal is an approval's proposal as the latest event that
	// carried it says: approvals so far, decided, expired, executed.
	Proposal *bridge.ProposalStatus
}

// LateText is what someone who answers the question after it ended is
// told, in the runtime's words: who answered it and when, that it was
// cancelled...
func (c *Card) LateText() string {
	if c.Ended == nil {
		return ""
	}
	ev := c.Ended
	return bridge.EndedText(ev.Type, ev.By, ev.ByName, ev.At, ev.TaskVersion)
}

// Fault is a platform's reading of an error of Post or Find.
type Fault struct {
	// Transient errors may pass: the event is tried again (after at
	// least RetryAfter), except on its last try.
	Transient  bool
	RetryAfter time.Duration
	// MayHavePosted says the platform may hold a post the error hid (a
	// timeout, a dropped connection, a 5xx).
	MayHavePosted bool
	// Failure is what the runtime is told when the card cannot be shown.
	Failure *bridge.Failure
}

// Platform is what a chat platform supplies to the card lifecycle: how to
// route, find, post and update a card there, and how to read its errors.
// It draws the card; the lifecycle decides when.
type Platform interface {
	// Place is the channel q goes to on the platform, "" when it is not
	// routed there; a failure when it can never be shown there.
	Place(q *bridge.Question) (string, *bridge.Failure)
	// Find returns the cards of ev the platform holds in channel (and the
	// job's thread there) posted since since, oldest first: tries that
	// may have posted and never reported. An error means look again later.
	Find(ctx context.Context, ev *bridge.Event, channel string, since time.Time) ([]bridge.MessageRef, error)
	// Post posts the card of c in channel, in the job's thread there
	// (opening it as the platform does), and returns where it is. A Hold
	// says nothing was sent: the channel's turn is still to come.
	Post(ctx context.Context, ev *bridge.Event, c *Card, channel string, last bool) (*bridge.MessageRef, error)
	// Adopt takes a card an earlier try posted (Find) as the question's,
	// finishing what that try could not (Discord starts the job's thread
	// from it), and returns where it is.
	Adopt(ctx context.Context, ev *bridge.Event, channel string, found bridge.MessageRef) (*bridge.MessageRef, error)
	// Update draws c as it stands over its message: waiting, with its
	// controls (an approval recorded), or ended, without (settled, or an
	// execution reported); false when the platform no longer has the
	// message (nothing to retry).
	Update(ctx context.Context, c *Card) (bool, error)
	// Fault reads an error of Post or Find.
	Fault(err error, channel string) Fault
}

// Cards is one platform's card lifecycle: show a question's card once,
// report it to the runtime, and settle it when the question ends. Which
// message shows which question is the runtime's record, named on every
// later event (docs/design.md, "Card state"): Cards keeps only what it
// did lately, in memory, and the rare stray card in the adapter's bucket.
type Cards struct {
	Name     string // the platform, as reports name it ("slack")
	Platform Platform
	NATS     *bridge.NATS
	KV       *bridge.KV // the adapter's bucket, for stray cards
	Logger   *slog.Logger
	Now      func() time.Time
	// ReportSync, when set, is how long after a delivery report the asked
	// event is acknowledged: the reports stream is synced to disk only that
	// often (bridge.NATSOptions.AsyncPersist), and a crash before must
	// bring the event back to report again.
	ReportSync time.Duration

	memo *bridge.Memo[*Card]
}

// cardMemo is a generation of remembered cards (about a kilobyte each).
const cardMemo = 10000

// NewCards returns the lifecycle of a platform's cards.
func NewCards(name string, p Platform, n *bridge.NATS, kv *bridge.KV, log *slog.Logger) *Cards {
	return &Cards{Name: name, Platform: p, NATS: n, KV: kv, Logger: log, Now: time.Now, memo: bridge.NewMemo[*Card](cardMemo)}
}

// Get returns the card of r this adapter remembers, if any.
func (cs *Cards) Get(r bridge.Ref) (*Card, bool) { return cs.memo.Get(r.String()) }

// Forget forgets every card, as a restart does.
func (cs *Cards) Forget() { cs.memo.Clear() }

// Asked shows the question of an asked event once and reports it.
//
// Once: the adapters' consumer hands an event to one holder at a time,
// and a job's events in order. The platform may have taken a try that
// never reported (it failed in a way that hides the platform's answer, or
// the adapter stopped or died): every try after the first looks for the
// card first (Find) and adopts it. So does a first try that finds the
// question claimed (tried): JetStream may count a delivery to an adapter
// that died as none. A first try, the hot path, looks for nothing.
func (cs *Cards) Asked(ctx context.Context, ev *bridge.Event, d Delivery) error {
	q := ev.Question
	if q == nil || q.Tenant != ev.Tenant || q.JobID != ev.JobID || q.QuestionID != ev.QuestionID {
		cs.Logger.WarnContext(ctx, cs.Name+": asked event without its question", "job", ev.JobID, "question", ev.QuestionID)
		return nil
	}
	q.TaskVersion = ev.TaskVersion
	ref := bridge.RefOf(ev)
	channel, f := cs.Platform.Place(q)
	switch {
	case f != nil:
		return cs.report(ctx, ref, nil, f)
	case channel == "":
		return nil // not routed here
	case !ev.Deadline.IsZero() && cs.Now().After(ev.Deadline):
		return nil // an old event; the question is over
	case bridge.MessageOn(ev, cs.Name) != nil:
		// Asked again for another platform's new consumer, and shown
		// here already (docs/contract.md "Streams").
		return nil
	}
	if c, ok := cs.memo.Get(ref.String()); ok && c.Message != nil {
		return cs.report(ctx, ref, c.Message, nil) // posted; the report was lost
	} else if ok && c.Ended != nil {
		// Ended before it could be shown; an earlier try may have posted
		// it all the same, its answer lost.
		if d.Attempt > 1 {
			n := *c
			n.Question = cmp.Or(n.Question, q)
			return cs.settleFound(ctx, ev, &n, channel, ev.AskedAt, d.Last)
		}
		return nil
	}
	c := &Card{Ref: ref, Question: q, AskedAt: ev.AskedAt, Deadline: ev.Deadline, Proposal: ev.Proposal}
	// Claimed on every try, not on the first alone: a later try may post,
	// and the kill that follows can cost the server its count of the
	// deliveries, so the next try comes as a first one with the claim as
	// the only record that a card may be up.
	again := cs.tried(ctx, ref) || d.Attempt > 1
	// An old event, or a later try (a crash may have come after the card
	// was reported, its event unacknowledged, and the question may have
	// ended since): the runtime knows.
	if bridge.Replayed(ev, cs.Now()) || again {
		ended, known, proposal := cs.replayed(ctx, ev)
		c.Proposal = cmp.Or(proposal, c.Proposal) // approvals recorded since
		switch {
		case ended != nil && again && bridge.MessageOn(ended, cs.Name) == nil:
			// An earlier try may have posted the card before the question
			// ended, and never reported it: it would keep its controls. (A
			// card the runtime knows is settled by the event that ended it.)
			n := *c
			n.Ended = ended
			return cs.settleFound(ctx, ev, &n, channel, ev.AskedAt, d.Last)
		case ended != nil:
			return nil
		case known != nil:
			return cs.shown(ctx, c, known) // shown before this adapter restarted
		}
	}
	// Remembered before it is posted: a click on the card may come before
	// its post returns.
	cs.memo.Put(ref.String(), c)
	if again {
		found, err := cs.Platform.Find(ctx, ev, channel, ev.AskedAt)
		if err != nil && !d.Last {
			return err // look again rather than show it twice
		}
		if len(found) > 0 {
			cs.Logger.InfoContext(ctx, cs.Name+": found the card an earlier try posted; not posting it again",
				"job", ev.JobID, "question", ev.QuestionID, "message", found[0].MessageID)
			m, err := cs.Platform.Adopt(ctx, ev, channel, found[0])
			if err != nil {
				return err
			}
			return cs.shown(ctx, c, m)
		}
	}
	m, err := cs.Platform.Post(ctx, ev, c, channel, d.Last)
	if err != nil {
		return cs.notPosted(ctx, ev, channel, d, err)
	}
	return cs.shown(ctx, c, m)
}

// tried claims the showing of the question of ref in the adapter's
// bucket, for this run of the adapter, and says whether another run
// claimed it before: it began to show the question, and may have posted
// its card. The embedded NATS server writes a consumer's deliveries down
// lazily (a tenth of a second apart), so an event an adapter held when
// the process was killed may come back counted as a first delivery; the
// claim, written before any try posts, tells that try from a first one.
// It lasts ShowClaimTTL, longer than a restart takes. A claim that cannot
// be written (NATS away) says no: the card is posted, as a first try's is.
func (cs *Cards) tried(ctx context.Context, ref bridge.Ref) bool {
	if cs.KV == nil {
		return false
	}
	key := showKey(ref)
	_, err := cs.KV.Write(ctx, key, 0, []byte(runID), ShowClaimTTL)
	if err == nil {
		return false
	}
	if bridge.IsConflict(err) {
		e, err := cs.KV.Get(ctx, key)
		// This run's own claim: an earlier try of this very process,
		// whose outcome it knows (a post put off by a rate limit).
		return err != nil || string(e.Value()) != runID
	}
	cs.Logger.WarnContext(ctx, cs.Name+": could not claim showing a question; taking this for a first try",
		"job", ref.JobID, "question", ref.QuestionID, "err", err)
	return false
}

// ShowClaimTTL is how long a claim to show a question lasts: past the
// restart of a process killed while it held the question's event, which
// hands the event out again as soon as the adapter pulls.
const ShowClaimTTL = 2 * time.Minute

// runID names this run of the process in its claims.
var runID = nuid.Next()

func showKey(r bridge.Ref) string {
	return fmt.Sprintf("shown.%s.%s.%s.%d", r.Tenant, r.JobID, r.QuestionID, r.Version)
}

// shown remembers that the card of c is m and reports it.
func (cs *Cards) shown(ctx context.Context, c *Card, m *bridge.MessageRef) error {
	n := *c
	n.Message = m
	cs.memo.Put(c.Ref.String(), &n)
	return cs.report(ctx, c.Ref, m, nil)
}

// replayed reads what the runtime records of the question of an asked
// event that comes late or again (a new consumer, back after an outage, a
// relay of an old outbox row, a later try): how it ended, when it no
// longer waits; known when a card of this platform was reported for it
// already; and an approval's proposal as it stands now. When the runtime
// does not say, the question is shown: shown twice beats a waiting
// question hidden.
func (cs *Cards) replayed(ctx context.Context, ev *bridge.Event) (ended *bridge.Event, known *bridge.MessageRef, p *bridge.ProposalStatus) {
	v, err := bridge.ShowQuestion(ctx, cs.NATS.Conn, ev)
	if err != nil {
		cs.Logger.DebugContext(ctx, cs.Name+": no state for a question asked again; showing it", "job", ev.JobID, "question", ev.QuestionID, "err", err)
		return nil, nil, nil
	}
	if ended := v.EndedEvent(); ended != nil {
		cs.Logger.InfoContext(ctx, cs.Name+": not showing a question asked again that no longer waits", "tenant", ev.Tenant,
			"job", ev.JobID, "question", ev.QuestionID, "task_version", ev.TaskVersion, "state", v.State)
		return ended, nil, v.Proposal
	}
	return nil, bridge.MessageOn(&bridge.Event{Messages: v.Messages}, cs.Name), v.Proposal
}

// notPosted handles a card that could not be posted: a stop or a wait for
// the channel's turn hands the event back; a transient failure is tried
// again after the loop's backoff, or the platform's Retry-After (looking
// first for what the try may have posted); on the last try, or for good,
// the failure is reported, and a post the platform may hold is written
// down as a stray.
func (cs *Cards) notPosted(ctx context.Context, ev *bridge.Event, channel string, d Delivery, err error) error {
	var hold *Hold
	if ctx.Err() != nil || errors.As(err, &hold) {
		return err
	}
	f := cs.Platform.Fault(err, channel)
	if f.Failure == nil {
		return err // not the platform's: NATS, the bucket
	}
	if f.Transient && !d.Last {
		return err
	}
	ref := bridge.RefOf(ev)
	if f.MayHavePosted {
		s := stray{Channel: channel, Since: ev.AskedAt}
		if _, err := bridge.PutJSON(ctx, cs.KV, strayKey(ref), 0, s, bridge.EventRecordTTL); err != nil && !bridge.IsConflict(err) {
			return fmt.Errorf("%s: remember a stray card: %w", cs.Name, err)
		}
	}
	cs.Logger.ErrorContext(ctx, cs.Name+": could not show a question", "job", ev.JobID, "question", ev.QuestionID,
		"code", f.Failure.Code, "err", err)
	return cs.report(ctx, ref, nil, f.Failure)
}

// report publishes the delivery report; its message id makes repeats free.
func (cs *Cards) report(ctx context.Context, r bridge.Ref, msg *bridge.MessageRef, f *bridge.Failure) error {
	err := bridge.PublishDelivery(ctx, cs.NATS.JS, bridge.Delivery{Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID,
		TaskVersion: r.Version, Platform: cs.Name, OK: f == nil, Message: msg, Failure: f, At: cs.Now().UTC()})
	if err == nil && cs.ReportSync > 0 {
		AckAfter(ctx, time.Now().Add(cs.ReportSync))
	}
	return err
}

// stray is a card whose post failed in a way that may hide a success on
// its last try: when the question ends, the cards the platform holds for
// it are looked for and settled, or their buttons would stay live.
type stray struct {
	Channel string    `json:"channel"`
	Since   time.Time `json:"since"`
}

func strayKey(r bridge.Ref) string {
	return fmt.Sprintf("s.%s.%s.%s.%d", r.Tenant, r.JobID, r.QuestionID, r.Version)
}
