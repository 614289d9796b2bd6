package slack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// handleEvent applies one runtime event. Every branch is idempotent: the
// same event twice, or events redelivered after a restart, change nothing
// more. lastTry says transient failures are to be reported, not retried.
func (b *Bot) handleEvent(ctx context.Context, ev *bridge.Event, lastTry bool) error {
	if !bridge.ValidToken(ev.Tenant) || !bridge.ValidToken(ev.JobID) || !bridge.ValidToken(ev.QuestionID) {
		b.log.WarnContext(ctx, "slack: ignoring an event with invalid ids", "type", ev.Type)
		return nil
	}
	switch ev.Type {
	case bridge.EventAsked:
		return b.onAsked(ctx, ev, lastTry)
	case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded:
		return b.onSettled(ctx, ev, lastTry)
	case bridge.EventDeliveryFailed:
		if ev.State != bridge.StateFailed {
			return nil // one platform failed; the question still waits elsewhere
		}
		return b.onSettled(ctx, ev, lastTry)
	case bridge.EventRefused:
		return b.onRefused(ctx, ev)
	case bridge.EventReminded, bridge.EventEscalated:
		return b.onReminder(ctx, ev)
	}
	return nil
}

func refOf(ev *bridge.Event) blockkit.Ref {
	return blockkit.Ref{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, Version: ev.TaskVersion}
}

// channelFor is the question's Slack channel: its route, else the
// default; and the thread its route names, if any (in the default channel
// when the route names a thread but no channel).
func (b *Bot) channelFor(q *bridge.Question) (channel, threadTS string) {
	if q.Route == nil || q.Route.Slack == nil {
		return b.o.DefaultChannel, ""
	}
	if q.Route.Slack.Channel != "" {
		return q.Route.Slack.Channel, q.Route.Slack.ThreadTS
	}
	return b.o.DefaultChannel, q.Route.Slack.ThreadTS
}

// consoleOn says the web console is configured (ASK_PUBLIC_URL and
// ASK_CONSOLE_SECRET): only then do cards and thread parents offer it.
func (b *Bot) consoleOn() bool {
	return b.o.Console.PublicURL != "" && len(b.o.Console.Secret) > 0
}

// questionURL is a signed console link to the question for identity, the
// one person who will see it ("" when the console is off). Links act as
// their identity, so they are minted only for a person, never for a
// channel: channel messages offer a button instead (see offerConsole).
func (b *Bot) questionURL(identity string, r blockkit.Ref) string {
	if !b.consoleOn() || identity == "" {
		return ""
	}
	return b.o.Console.QuestionURL(identity, r.Tenant, r.JobID, r.QuestionID, console.DefaultLinkTTL)
}

// jobURL is a signed console link to a job's page for identity, one person.
func (b *Bot) jobURL(identity, tenant, job string) string {
	if !b.consoleOn() || identity == "" {
		return ""
	}
	return b.o.Console.JobURL(identity, tenant, job, console.DefaultLinkTTL)
}

// cardView is what a question's card shows in the channel: no console
// link (everyone there reads it), an "Open in console" button when the
// console is configured.
func (b *Bot) cardView(c *card, r blockkit.Ref) blockkit.Card {
	return blockkit.Card{Question: c.Question, AskedAt: c.AskedAt, Deadline: c.Deadline, Console: b.consoleOn(), Ended: c.Ended}
}

// onAsked posts the question's card once, in the job's thread, and reports
// the delivery. A claim in the KV record makes it once across replicas and
// restarts. Slack has no idempotency key, so a post may reach Slack and
// its record never be written (a crash in between): the card carries
// metadata naming the question, and whoever takes over an unfinished claim
// first looks for that card in the thread and adopts it (findPosted). A
// first post, the hot path, makes no such call.
func (b *Bot) onAsked(ctx context.Context, ev *bridge.Event, lastTry bool) error {
	q := ev.Question
	if q == nil || q.Tenant != ev.Tenant || q.JobID != ev.JobID || q.QuestionID != ev.QuestionID {
		b.log.WarnContext(ctx, "slack: asked event without its question", "job", ev.JobID, "question", ev.QuestionID)
		return nil
	}
	q.TaskVersion = ev.TaskVersion
	ref := refOf(ev)
	channel, routeThread := b.channelFor(q)
	if channel == "" {
		// Not routed to Slack and no default channel: not ours to show.
		return nil
	}
	if !bridge.ValidSlackID(channel) {
		// Not sent: Slack would refuse it. Named in the failure, cut short.
		f := failure("chat.postMessage", "", &apiError{Op: "chat.postMessage", Code: "invalid_channel"})
		f.OperatorMessage = fmt.Sprintf("%q is not a Slack channel id (such as C0123); askbridge did not send the message.", neutral.Truncate(channel, 40))
		return b.report(ctx, ref, nil, f)
	}
	if !ev.Deadline.IsZero() && b.now().After(ev.Deadline) {
		return nil // an old event replayed to a new consumer; the question is over
	}
	if bridge.Replayed(ev, b.now()) {
		// A replay (a new consumer, or back after an outage): the question
		// may have ended long ago. Ask only when a card would be posted.
		if c, err := b.loadCard(ctx, ref); err == nil && (c == nil || (c.TS == "" && c.Failure == nil && c.Outcome == "")) {
			if state, err := bridge.QuestionState(ctx, b.o.NATS.Conn, ev); err != nil {
				b.log.DebugContext(ctx, "slack: no state for a replayed question; showing it", "job", ev.JobID, "question", ev.QuestionID, "err", err)
			} else if state != bridge.StatePending {
				b.log.InfoContext(ctx, "slack: not showing a replayed question that no longer waits", "tenant", ev.Tenant,
					"job", ev.JobID, "question", ev.QuestionID, "task_version", ev.TaskVersion, "state", state)
				return nil
			}
		}
	}
	// Waiting for the channel's turn before claiming the card leaves
	// nothing claimed while the job is put aside.
	if err := b.pace.ready(ctx, channel); err != nil {
		return err
	}
	// held: this event's own claim, taken by a try put aside before it
	// sent anything; kept rather than released and taken again.
	var held time.Time
	res := engine.ReservedOf(ctx)
	if res != nil {
		held, _ = res.Take(heldClaimKey(ref))
	}
	var action string // "post", "report", "update", "none"
	// since: an earlier claim that did not finish; its post may be in Slack.
	var since time.Time
	rec, err := b.updateCard(ctx, ref, func(c *card) *card {
		now := b.now()
		since = time.Time{}
		switch {
		case c != nil && c.TS == "" && c.Failure == nil && c.Outcome == "" && c.ClaimBy == b.id && c.TriedSince.IsZero() &&
			!held.IsZero() && c.ClaimSince.Equal(held) && now.Sub(held) < b.claimTTL/2:
			action = "post"
			return nil
		case c == nil:
			action = "post"
			return &card{Question: q, AskedAt: ev.AskedAt, Deadline: ev.Deadline, ClaimBy: b.id, ClaimSince: now}
		case c.TS != "" || c.Failure != nil:
			action = "report"
			return nil
		case c.Outcome != "":
			action = "none" // settled before it could be shown
			return nil
		case c.ClaimBy != "" && c.ClaimBy != b.id && now.Sub(c.ClaimSince) < b.claimTTL:
			action = "wait"
			return nil
		}
		action = "post"
		n := *c
		if c.ClaimBy != "" || !c.TriedSince.IsZero() {
			since = earliest(c.TriedSince, c.ClaimSince)
			n.TriedSince = since
		}
		n.Question, n.AskedAt, n.Deadline, n.ClaimBy, n.ClaimSince = q, ev.AskedAt, ev.Deadline, b.id, now
		return &n
	})
	if err != nil {
		return err
	}
	switch action {
	case "none":
		return nil
	case "wait":
		return &engine.Later{After: 5 * time.Second, Why: "another replica is posting this question"}
	case "report":
		if rec.Failure != nil {
			return b.report(ctx, ref, nil, rec.Failure)
		}
		if err := b.report(ctx, ref, &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: rec.Channel, MessageID: rec.TS, Thread: rec.Thread}, nil); err != nil {
			return err
		}
		if rec.Outcome != "" && !rec.Updated {
			return b.refreshCard(ctx, ref)
		}
		return nil
	}

	thread := routeThread
	if thread == "" {
		thread, err = b.jobThread(ctx, q, channel, lastTry)
	}
	var ts string
	if err == nil && !since.IsZero() {
		var lerr error
		ts, lerr = b.findPosted(ctx, channel, thread, since, questionMeta(ref))
		if lerr != nil && !lastTry {
			err = lerr // look again later rather than show it twice
		}
	}
	posting := false // a post was sent, and Slack may have taken it
	if err == nil && ts == "" {
		blocks, text := blockkit.QuestionMessage(b.cardView(rec, ref))
		posting = true
		ts, err = b.postMarked(ctx, lastTry, channel, thread, questionMeta(ref), slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
	}
	if err != nil && ctx.Err() != nil {
		// Cut short (the adapter stops): whoever runs next takes the post
		// over at once, not after claimTTL, looking first for the card
		// when one was sent.
		b.releaseCard(ctx, ref, posting)
		return err
	}
	var hold *engine.Hold
	if errors.As(err, &hold) {
		// Nothing was sent: the try when the channel's turn comes posts
		// under this claim, without looking for a post first.
		if res != nil && rec.ClaimBy == b.id && rec.TriedSince.IsZero() {
			res.Put(heldClaimKey(ref), rec.ClaimSince)
		} else {
			b.releaseCard(ctx, ref, false)
		}
		return err
	}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			return err
		}
		if ae.Transient && !lastTry {
			return &engine.Later{After: ae.laterThan(10 * time.Second), Why: ae.Error()}
		}
		f := failure(ae.Op, channel, ae)
		if _, err := b.updateCard(ctx, ref, func(c *card) *card {
			if c == nil {
				c = &card{Question: q}
			}
			n := *c
			n.Failure, n.ClaimBy = f, ""
			if posting && ae.Transient {
				// Slack may have taken a try whose answer was lost: when the
				// question ends, its card is looked for and settled.
				n.Channel, n.Thread = channel, thread
				n.TriedSince = earliest(since, rec.ClaimSince)
			}
			return &n
		}); err != nil {
			return err
		}
		b.log.ErrorContext(ctx, "slack: could not show a question", "job", q.JobID, "question", q.QuestionID, "code", f.Code, "slack_error", ae.Code)
		return b.report(ctx, ref, nil, f)
	}
	rec, err = b.updateCard(ctx, ref, func(c *card) *card {
		if c == nil {
			c = &card{Question: q}
		}
		n := *c
		n.Channel, n.TS, n.Thread, n.ClaimBy, n.TriedSince = channel, ts, thread, "", time.Time{}
		return &n
	})
	if err != nil {
		return err
	}
	if err := b.report(ctx, ref, &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: channel, MessageID: ts, Thread: thread}, nil); err != nil {
		return err
	}
	if rec.Outcome != "" {
		// It settled while we were posting.
		return b.refreshCard(ctx, ref)
	}
	return nil
}

// heldClaimKey names, in an event's engine.Reserved, the instant of its
// claim on the card of r while the event waits for its channel.
func heldClaimKey(r blockkit.Ref) string { return "claim " + cardKey(r) }

// releaseCard gives up this replica's claim on posting the card of ref,
// remembering a post that was sent so the next poster looks for it. It
// runs even when ctx is done.
func (b *Bot) releaseCard(ctx context.Context, ref blockkit.Ref, posted bool) {
	ctx, cancel := detached(ctx)
	defer cancel()
	_, err := b.updateCard(ctx, ref, func(c *card) *card {
		if c == nil || c.ClaimBy != b.id || c.TS != "" {
			return nil
		}
		n := *c
		if posted {
			n.TriedSince = earliest(c.TriedSince, c.ClaimSince)
		}
		n.ClaimBy, n.ClaimSince = "", time.Time{}
		return &n
	})
	if err != nil {
		b.log.WarnContext(ctx, "slack: could not release a card claim", "job", ref.JobID, "question", ref.QuestionID, "err", err)
	}
}

// jobThread returns the ts of the job's thread parent in channel, posting
// the parent the first time. One thread per job and channel, across
// replicas and restarts: like a card, the parent carries metadata, and a
// takeover of an unfinished claim adopts the parent it finds in the
// channel's history instead of opening a second thread.
func (b *Bot) jobThread(ctx context.Context, q *bridge.Question, channel string, lastTry bool) (string, error) {
	key := threadKey(q.Tenant, q.JobID, channel)
	for range 10 {
		var t thread
		rev, at, err := getJSONAt(ctx, b.kv, key, &t)
		if err != nil {
			return "", err
		}
		if t.TS != "" {
			if b.now().Sub(at) >= b.threadRefresh {
				// Best effort: a lost race means another write just renewed it.
				if _, err := putJSON(ctx, b.kv, key, rev, t, threadTTL); err != nil && err != errConflict {
					b.log.WarnContext(ctx, "slack: could not renew a job's thread record", "job", q.JobID, "err", err)
				}
			}
			return t.TS, nil
		}
		if t.ClaimBy != "" && t.ClaimBy != b.id && b.now().Sub(t.ClaimSince) < b.claimTTL {
			return "", &engine.Later{After: 2 * time.Second, Why: "another replica is opening this job's thread"}
		}
		var since time.Time // an earlier claim that did not finish
		if t.ClaimBy != "" || !t.TriedSince.IsZero() {
			since = earliest(t.TriedSince, t.ClaimSince)
		}
		now := b.now()
		rev, err = putJSON(ctx, b.kv, key, rev, thread{ClaimBy: b.id, ClaimSince: now, TriedSince: since}, threadTTL)
		if err == errConflict {
			continue
		}
		if err != nil {
			return "", err
		}
		meta := threadMeta(q.Tenant, q.JobID)
		var ts string
		if !since.IsZero() {
			var lerr error
			ts, lerr = b.findPosted(ctx, channel, "", since, meta)
			if lerr != nil && !lastTry {
				err = lerr // look again later rather than open a second thread
			}
		}
		if ts == "" && err == nil {
			blocks, text := blockkit.ThreadParent(q, b.consoleOn())
			ts, err = b.postMarked(ctx, lastTry, channel, "", meta, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
		}
		if err != nil {
			// Release the claim. A transient failure (a timeout, a 5xx) may
			// hide a post Slack accepted: remember it, so the next try looks.
			var rel thread
			var ae *apiError
			var hold *engine.Hold
			if errors.As(err, &hold) {
				rel.TriedSince = since // nothing sent: the channel's turn is to come
			} else if !errors.As(err, &ae) || ae.Transient {
				rel.TriedSince = earliest(since, now)
			}
			// Even as the adapter stops: the next one takes over at once.
			dctx, cancel := detached(ctx)
			if _, derr := putJSON(dctx, b.kv, key, rev, rel, threadTTL); derr != nil {
				b.log.WarnContext(ctx, "slack: could not release a thread claim", "err", derr)
			}
			cancel()
			return "", err
		}
		if _, err := putJSON(ctx, b.kv, key, rev, thread{TS: ts}, threadTTL); err != nil {
			return "", err
		}
		return ts, nil
	}
	return "", errConflict
}

// report publishes the delivery report; its message id makes repeats free.
func (b *Bot) report(ctx context.Context, r blockkit.Ref, msg *bridge.MessageRef, f *bridge.Failure) error {
	return bridge.PublishDelivery(ctx, b.js, bridge.Delivery{Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID,
		TaskVersion: r.Version, Platform: bridge.PlatformSlack, OK: f == nil, Message: msg, Failure: f, At: b.now().UTC()})
}

// onSettled records how the question ended and updates its card: controls
// removed, one context line. If the card is not posted yet, the poster
// applies the outcome when it finishes.
//
// A card already posted is updated in Slack first and then recorded as
// settled and updated in one write: a crash in between redelivers the
// event, and the update, which is idempotent, runs again.
//
// A card whose record has lost its question (the record is gone, the
// bucket made anew: the event names the card, not the question) gets it
// from the runtime, so the card keeps its text.
func (b *Bot) onSettled(ctx context.Context, ev *bridge.Event, lastTry bool) error {
	ref := refOf(ev)
	key := cardKey(ref)
	var cur card
	rev, err := getJSON(ctx, b.kv, key, &cur)
	if err != nil {
		return err
	}
	var view *bridge.QuestionView
	if cur.Question == nil && cur.Outcome == "" && (cur.TS != "" || slackMessage(ev) != nil) {
		if view, err = b.questionFor(ctx, ev, lastTry); err != nil {
			return err
		}
	}
	if rev != 0 && cur.TS != "" && cur.Outcome == "" {
		n := cur
		fillQuestion(&n, view)
		n.Outcome, n.Ended, n.Late, n.Attempt = blockkit.OutcomeLine(ev, n.Question), ev.At, lateText(ev), ev.AttemptID
		if n.Updated, err = b.showSettled(ctx, ref, &n); err != nil {
			var hold *engine.Hold
			if errors.As(err, &hold) {
				b.recordUnshown(ctx, key, rev, &n)
			}
			return err
		}
		switch _, err := putJSON(ctx, b.kv, key, rev, &n, cardTTL(&n)); {
		case err == nil:
			b.remember(key, &n)
			return nil
		case err != errConflict:
			return err
		}
		// The record changed meanwhile: settle it the general way.
	}
	var mustUpdate, stray bool
	rec, err := b.updateCard(ctx, ref, func(c *card) *card {
		mustUpdate, stray = false, false
		if c == nil {
			c = &card{}
		}
		if c.Outcome != "" {
			mustUpdate = c.TS != "" && !c.Updated
			stray = strayPosts(c) && !c.Updated
			return nil // first outcome wins; repeats change nothing
		}
		n := *c
		fillQuestion(&n, view)
		n.Outcome, n.Ended, n.Late, n.Attempt = blockkit.OutcomeLine(ev, n.Question), ev.At, lateText(ev), ev.AttemptID
		if n.TS == "" {
			// Posted by someone before the KV record existed (events name it).
			if m := slackMessage(ev); m != nil {
				n.Channel, n.TS, n.Thread = m.Channel, m.MessageID, m.Thread
			}
		}
		mustUpdate, stray = n.TS != "", strayPosts(&n)
		return &n
	})
	if err != nil {
		return err
	}
	if stray && rec != nil {
		return b.settleStrays(ctx, ref, lastTry)
	}
	if !mustUpdate || rec == nil {
		return nil
	}
	return b.refreshCard(ctx, ref)
}

// recordUnshown records a settled card whose update waits for its
// channel's turn: the try when the turn comes sends the card's state
// then, once, however many events changed it meanwhile (docs/design.md).
// A lost race leaves the record to the general way of settling.
func (b *Bot) recordUnshown(ctx context.Context, key string, rev uint64, n *card) {
	if _, err := putJSON(ctx, b.kv, key, rev, n, cardTTL(n)); err == nil {
		b.remember(key, n)
	} else if err != errConflict {
		b.log.WarnContext(ctx, "slack: could not record a settled card", "err", err)
	}
}

// lateText is what someone who answers the question of ev after ev ended
// it is told: the runtime's words for such an answer.
func lateText(ev *bridge.Event) string {
	return bridge.EndedText(ev.Type, ev.By, ev.ByName, ev.At, ev.TaskVersion)
}

// strayPosts says posting the card of c failed in a way that may hide
// posts Slack accepted (their answers lost, and no lookup found them).
func strayPosts(c *card) bool {
	return c.TS == "" && c.Failure != nil && c.Channel != "" && !c.TriedSince.IsZero()
}

// settleStrays looks for the cards of a question whose posting failed
// and that has ended (it failed, or was answered elsewhere), and settles
// each one Slack holds: otherwise their buttons would stay live. A lookup
// that fails for now is tried again later, except on the event's last try.
func (b *Bot) settleStrays(ctx context.Context, ref blockkit.Ref, lastTry bool) error {
	rec, err := b.loadCard(ctx, ref)
	if err != nil || rec == nil || rec.Outcome == "" || rec.Updated || !strayPosts(rec) {
		return err
	}
	found, err := b.findMarked(ctx, rec.Channel, rec.Thread, rec.TriedSince, questionMeta(ref), true)
	if err != nil && !lastTry {
		return err
	}
	for _, ts := range found {
		c := *rec
		c.TS = ts
		if _, err := b.showSettled(ctx, ref, &c); err != nil {
			return err
		}
	}
	return b.markUpdated(ctx, ref)
}

// slackMessage is the Slack message the event says shows its question.
func slackMessage(ev *bridge.Event) *bridge.MessageRef {
	for i, m := range ev.Messages {
		if m.Platform == bridge.PlatformSlack && m.MessageID != "" {
			return &ev.Messages[i]
		}
	}
	return nil
}

// questionFor asks the runtime for the question of ev, for a card whose
// record lost it. When the runtime does not answer, the event is tried
// again later, except on its last try; when it does not know the
// question, the card goes on without its text (nil).
func (b *Bot) questionFor(ctx context.Context, ev *bridge.Event, lastTry bool) (*bridge.QuestionView, error) {
	v, err := bridge.ShowQuestion(ctx, b.o.NATS.Conn, ev)
	switch {
	case err == nil && v.Question != nil:
		return v, nil
	case err == nil || errors.Is(err, bridge.ErrNotShown) || lastTry:
		b.log.WarnContext(ctx, "slack: no question text for a card whose record is lost; its outcome is shown without it",
			"job", ev.JobID, "question", ev.QuestionID, "err", err)
		return nil, nil
	}
	return nil, &engine.Later{After: 5 * time.Second, Why: "the runtime did not show the question of a card whose record is lost: " + err.Error()}
}

// fillQuestion gives c the question of view when c has none.
func fillQuestion(c *card, view *bridge.QuestionView) {
	if c.Question != nil || view == nil || view.Question == nil {
		return
	}
	q := *view.Question
	q.TaskVersion = view.TaskVersion
	c.Question = &q
	if c.AskedAt.IsZero() {
		c.AskedAt = view.AskedAt
	}
	if c.Deadline.IsZero() {
		c.Deadline = view.Deadline
	}
}

// markUpdated records that the settled card shows its outcome in Slack.
func (b *Bot) markUpdated(ctx context.Context, ref blockkit.Ref) error {
	_, err := b.updateCard(ctx, ref, func(c *card) *card {
		if c == nil || c.Updated {
			return nil
		}
		n := *c
		n.Updated = true
		return &n
	})
	return err
}

// refreshCard rewrites a settled card in Slack and marks it done.
func (b *Bot) refreshCard(ctx context.Context, ref blockkit.Ref) error {
	rec, err := b.loadCard(ctx, ref)
	if err != nil || rec == nil || rec.TS == "" || rec.Outcome == "" || rec.Updated {
		return err
	}
	if done, err := b.showSettled(ctx, ref, rec); err != nil || !done {
		return err
	}
	return b.markUpdated(ctx, ref)
}

// showSettled rewrites the card of rec in Slack with its outcome. It
// reports whether the card shows it; an error means try again later.
func (b *Bot) showSettled(ctx context.Context, ref blockkit.Ref, rec *card) (bool, error) {
	blocks, text := blockkit.SettledMessage(b.cardView(rec, ref), rec.Outcome)
	err := b.call(ctx, "chat.update", rec.Channel, func(ctx context.Context) error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, rec.Channel, rec.TS, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
		return err
	})
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && !ae.Transient {
			// The card is gone or unreachable; nothing to retry.
			b.log.WarnContext(ctx, "slack: could not update a card", "job", ref.JobID, "question", ref.QuestionID, "slack_error", ae.Code)
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Keys of an attempt's reply_to, echoed on refusals.
const (
	replyUser        = "slack_user"
	replyChannel     = "channel"
	replyThread      = "thread_ts"
	replyResponseURL = "response_url"
)

// onRefused tells the person who clicked, and only them, why their answer
// was refused, in the refusal's own words.
func (b *Bot) onRefused(ctx context.Context, ev *bridge.Event) error {
	user := ev.ReplyTo[replyUser]
	if user == "" || !bridge.ValidSlackID(user) || (ev.To != "" && ev.To != "slack:"+user) {
		return nil // not an attempt made in Slack
	}
	text := ev.Text
	if text == "" {
		text = "askbridge refused your answer."
	}
	key := onceKey("refused", ev.EventID, ev.AttemptID)
	ok, err := b.once(ctx, key)
	if err != nil || !ok {
		return err
	}
	if err := b.tell(ctx, ev.ReplyTo, text); err != nil {
		b.release(ctx, key)
		return err
	}
	return nil
}

// tell sends an ephemeral message to the person in reply_to: through the
// interaction's response_url when there is one, else chat.postEphemeral.
func (b *Bot) tell(ctx context.Context, to map[string]string, text string) error {
	noUnfurl := false // texts may hold a person's signed console link
	if u := to[replyResponseURL]; u != "" && b.responseURLOK(u) {
		err := slack.PostWebhookCustomHTTPContext(ctx, u, b.http, &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: text,
			UnfurlLinks: &noUnfurl, UnfurlMedia: &noUnfurl})
		if err == nil {
			return nil
		}
		// response_urls expire after 30 minutes or five uses: fall back.
		b.log.InfoContext(ctx, "slack: response_url failed, using chat.postEphemeral", "err", classify("response_url", err).Code)
	}
	channel, user := to[replyChannel], to[replyUser]
	if channel == "" || user == "" {
		return nil
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
	if ts := to[replyThread]; ts != "" {
		opts = append(opts, slack.MsgOptionTS(ts))
	}
	err := b.call(ctx, "chat.postEphemeral", channel, func(ctx context.Context) error {
		_, err := b.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
	var ae *apiError
	if ctx.Err() == nil && errors.As(err, &ae) && !ae.Transient {
		b.log.WarnContext(ctx, "slack: could not tell a person", "slack_error", ae.Code)
		return nil
	}
	return err
}

// responseURLOK accepts only Slack's own response URLs (or the configured
// API host, for proxies and tests): reply_to crosses NATS, and askbridge
// must not POST wherever a message says.
func (b *Bot) responseURLOK(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if u.Scheme == "https" && (u.Host == "hooks.slack.com" || u.Host == "hooks.slack-gov.com") {
		return true
	}
	api, err := url.Parse(b.o.APIURL)
	return err == nil && u.Scheme == api.Scheme && u.Host == api.Host
}

// onReminder DMs each Slack target of a reminder or escalation step.
func (b *Bot) onReminder(ctx context.Context, ev *bridge.Event) error {
	ref := refOf(ev)
	rec, err := b.loadCard(ctx, ref)
	if err != nil {
		return err
	}
	q := ev.Question
	if q == nil && rec != nil {
		q = rec.Question
	}
	if rec != nil && rec.Outcome != "" {
		return nil // settled meanwhile: nothing to remind about
	}
	if bridge.StaleReminder(ctx, b.o.NATS.Conn, ev, b.now()) {
		b.log.InfoContext(ctx, "slack: not sending a reminder for a question that no longer waits", "tenant", ev.Tenant,
			"job", ev.JobID, "question", ev.QuestionID, "step", ev.Step)
		return nil
	}
	link := ""
	if rec != nil && rec.TS != "" {
		_ = b.call(ctx, "chat.getPermalink", "", func(ctx context.Context) error {
			var err error
			link, err = b.api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: rec.Channel, Ts: rec.TS})
			return err
		})
	}
	deadline := ev.Deadline
	if deadline.IsZero() && rec != nil {
		deadline = rec.Deadline
	}
	askedAt := ev.AskedAt
	if askedAt.IsZero() && rec != nil {
		askedAt = rec.AskedAt
	}
	var failed error
	for _, target := range ev.Targets {
		user, ok := strings.CutPrefix(target, "slack:")
		if !ok || !bridge.ValidSlackID(user) {
			continue
		}
		key := onceKey("dm", ev.EventID, target)
		first, err := b.once(ctx, key)
		if err != nil {
			return err
		}
		if !first {
			continue
		}
		text := reminderText(ev, q, link, askedAt, deadline, b.now(), b.questionURL(target, ref))
		if !bridge.ReminderShowsQuestion(ev, q, target) {
			text = restrictedReminderText(ev, q, link, deadline, b.now(), b.questionURL(target, ref))
		}
		if err := b.dm(ctx, user, text); err != nil {
			var ae *apiError
			if ctx.Err() == nil && errors.As(err, &ae) && !ae.Transient {
				b.log.WarnContext(ctx, "slack: could not DM a reminder", "to", target, "slack_error", ae.Code)
				continue
			}
			b.release(ctx, key)
			failed = err
		}
	}
	return failed
}

func (b *Bot) dm(ctx context.Context, user, text string) error {
	b.dmMu.Lock()
	channel := b.dmChannels[user]
	b.dmMu.Unlock()
	if channel == "" {
		err := b.call(ctx, "conversations.open", "", func(ctx context.Context) error {
			ch, _, _, err := b.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}, ReturnIM: true})
			if err == nil {
				channel = ch.ID
			}
			return err
		})
		if err != nil {
			return err
		}
		b.dmMu.Lock()
		if len(b.dmChannels) >= maxDMChannels {
			clear(b.dmChannels)
		}
		b.dmChannels[user] = channel
		b.dmMu.Unlock()
	}
	return b.call(ctx, "chat.postMessage", channel, func(ctx context.Context) error {
		_, _, err := b.api.PostMessageContext(ctx, channel, slack.MsgOptionText(text, false))
		return err
	})
}

// maxDMChannels bounds the remembered DM channels.
const maxDMChannels = 10000

// reminderText is the DM: the question, a link to the card, the time
// left; owner and admin steps also say who was asked and since when.
func reminderText(ev *bridge.Event, q *bridge.Question, link string, askedAt, deadline, now time.Time, consoleURL string) string {
	var sb strings.Builder
	switch {
	case ev.Step == bridge.TargetAdmins:
		// Admins own no job: the question is their tenant's.
		sb.WriteString(":rotating_light: A question in tenant `" + ev.Tenant + "` is still unanswered")
	case ev.Type == bridge.EventEscalated || (ev.Step != "" && ev.Step != bridge.TargetAnswerers):
		sb.WriteString(":rotating_light: A question for one of your jobs is still unanswered")
	default:
		sb.WriteString(":bell: Reminder: a question waits for your answer")
	}
	if q != nil {
		sb.WriteString(" (job `" + q.JobID + "`):\n>" + quote(q.Question, 600))
	} else {
		sb.WriteString(" (job `" + ev.JobID + "`).")
	}
	sb.WriteString("\n")
	if link != "" {
		sb.WriteString("<" + link + "|Answer it in the thread>")
	} else if consoleURL != "" {
		sb.WriteString("<" + consoleURL + "|Answer it in the askbridge console>")
	}
	if !deadline.IsZero() {
		left := max(deadline.Sub(now), 0)
		sb.WriteString(" · Time left: " + bridge.FormatTimeout(left) + " (until " + blockkit.SlackDate(deadline) + ")")
	}
	if ev.Step == bridge.TargetOwner || ev.Step == bridge.TargetAdmins {
		var who []string
		if q != nil {
			for _, a := range q.Answerers {
				who = append(who, blockkit.Mention(a))
			}
		}
		asked := "operators"
		if len(who) > 0 {
			asked = strings.Join(who, ", ")
		}
		sb.WriteString("\nAsked of " + asked)
		if !askedAt.IsZero() {
			sb.WriteString(" since " + blockkit.SlackDate(askedAt))
		}
		sb.WriteString(".")
	}
	return sb.String()
}

// restrictedReminderText is the DM to an operator reminded of a restricted
// question: that it waits, for whom, and that they may decline it; none of
// its content.
func restrictedReminderText(ev *bridge.Event, q *bridge.Question, link string, deadline, now time.Time, consoleURL string) string {
	var sb strings.Builder
	sb.WriteString(":bell: Reminder, in job `" + ev.JobID + "`: " + bridge.RestrictedNotice(restrictedFor(q.WaitsFor())) +
		" You may decline it.\n")
	if link != "" {
		sb.WriteString("<" + link + "|Decline it in the thread>")
	} else if consoleURL != "" {
		sb.WriteString("<" + consoleURL + "|Decline it in the askbridge console>")
	}
	if !deadline.IsZero() {
		left := max(deadline.Sub(now), 0)
		sb.WriteString(" · Time left: " + bridge.FormatTimeout(left) + " (until " + blockkit.SlackDate(deadline) + ")")
	}
	return sb.String()
}

// quote escapes and shortens text for a one-paragraph mrkdwn quote.
func quote(s string, n int) string {
	s = neutral.Truncate(strings.Join(strings.Fields(s), " "), n)
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
