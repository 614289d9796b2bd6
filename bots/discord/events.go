package discord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// errPermanent marks an event that can never be handled; it is acked.
var errPermanent = errors.New("discord: event cannot be handled")

// errBusy says another replica is posting the question right now: the
// event is retried, and then finds the card posted.
var errBusy = errors.New("another replica is posting this question")

// busyError is errBusy with the time the other replica's claim lapses.
type busyError struct{ until time.Time }

func (e *busyError) Error() string        { return errBusy.Error() }
func (e *busyError) Is(target error) bool { return target == errBusy }

// claimTTL bounds how long a replica's claim to post a question holds
// when it crashed while posting.
const claimTTL = 90 * time.Second

// handleDelivery handles one event for the event loop. An event that
// finds another replica's claim is put off, never dropped, even on its
// last delivery: nobody may have shown the question nor reported it. A
// last delivery looks again once the claim lapses, and then posts or
// reports a failure.
func (b *Bot) handleDelivery(ctx context.Context, ev *bridge.Event, d engine.Delivery) error {
	err := b.handleEvent(ctx, ev, d.Last)
	var be *busyError
	if !errors.As(err, &be) {
		return err
	}
	delay := b.backoff(d.Attempt)
	if d.Last {
		delay = max(delay, be.until.Sub(b.now()))
	}
	return &engine.Later{After: delay, Why: errBusy.Error()}
}

// classifyEventError reads an error of an event's handler for the event
// loop: what can never work is dropped, a rate limit waits as long as
// Discord asked, and the rest is tried again.
func classifyEventError(err error) engine.Verdict {
	switch {
	case errors.Is(err, errPermanent) || !isTransient(err):
		return engine.Verdict{Kind: engine.Permanent}
	case retryAfter(err) > 0:
		return engine.Verdict{Kind: engine.RateLimited, RetryAfter: retryAfter(err)}
	}
	return engine.Verdict{Kind: engine.Transient}
}

func (b *Bot) handleEvent(ctx context.Context, ev *bridge.Event, last bool) error {
	// A refused cancel of a whole job names no question.
	noQuestionOK := ev.Type == bridge.EventRefused && ev.QuestionID == ""
	if !bridge.ValidToken(ev.Tenant) || !bridge.ValidToken(ev.JobID) || (!bridge.ValidToken(ev.QuestionID) && !noQuestionOK) {
		return fmt.Errorf("%w: bad ids", errPermanent)
	}
	switch ev.Type {
	case bridge.EventAsked:
		return b.onAsked(ctx, ev, last)
	case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded:
		return b.onOutcome(ctx, ev, last)
	case bridge.EventDeliveryFailed:
		if ev.State != bridge.StateFailed {
			return nil // one platform failed; the question still waits elsewhere
		}
		// No platform showed it and it has ended; a card Discord made
		// although the bot gave up on it is settled like any other.
		return b.onOutcome(ctx, ev, last)
	case bridge.EventRefused:
		return b.onRefused(ctx, ev)
	case bridge.EventReminded, bridge.EventEscalated:
		return b.onReminder(ctx, ev)
	}
	return nil
}

func (b *Bot) report(ctx context.Context, c *card, ref *bridge.MessageRef, f *bridge.Failure) error {
	return bridge.PublishDelivery(ctx, b.o.NATS.JS, bridge.Delivery{
		Tenant: c.Tenant, JobID: c.JobID, QuestionID: c.QuestionID, TaskVersion: c.TaskVersion,
		Platform: bridge.PlatformDiscord, OK: f == nil, Message: ref, Failure: f, At: b.now().UTC(),
	})
}

func (c *card) ref() *bridge.MessageRef {
	return &bridge.MessageRef{Platform: bridge.PlatformDiscord, Channel: c.Channel, MessageID: c.MessageID, Thread: c.Thread}
}

// channelFor is the channel a question is posted in: its route's, else
// the default; "" when it is not for Discord. The runtime expects a report
// for any routed question: a blank channel id is kept, to be reported as
// unresolved, not skipped.
func (b *Bot) channelFor(q *bridge.Question) string {
	if q.Route == nil || q.Route.Discord == nil || q.Route.Discord.ChannelID == "" {
		return b.o.DefaultChannel
	}
	if channel := strings.TrimSpace(q.Route.Discord.ChannelID); channel != "" {
		return channel
	}
	return q.Route.Discord.ChannelID
}

// onAsked posts the question's card, once: in the job's thread when it has
// one, else in the routed channel, starting the job's thread from it.
func (b *Bot) onAsked(ctx context.Context, ev *bridge.Event, last bool) error {
	q := ev.Question
	if q == nil {
		return fmt.Errorf("%w: asked without a question", errPermanent)
	}
	channel := b.channelFor(q)
	if channel == "" {
		// Not for Discord: no route here and no default channel. The
		// runtime does not expect Discord to show it, so report nothing.
		return nil
	}
	key := cardKey(ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion)
	init := card{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, TaskVersion: ev.TaskVersion,
		Question: q, AskedAt: ev.AskedAt, Deadline: ev.Deadline}
	c, err := b.updateCard(ctx, key, init, func(c *card) bool {
		if c.Question == nil { // an outcome arrived first
			c.Question, c.AskedAt, c.Deadline = q, ev.AskedAt, ev.Deadline
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	switch {
	case c.MessageID != "":
		return b.report(ctx, c, c.ref(), nil) // posted before: report again (deduplicated)
	case c.Outcome != nil:
		// Settled before it could be shown, unless a post went out
		// whose answer was lost.
		return b.settleUnanswered(ctx, key, init, c, channel, last)
	case c.Failed:
		return nil
	case !ev.Deadline.IsZero() && b.now().After(ev.Deadline):
		// Replayed long after (a new consumer reads the stream from its
		// start): nobody can answer any more, the timeout edits nothing.
		return nil
	}
	if bridge.Replayed(ev, b.now()) {
		// A replay (a new consumer, or back after an outage): the question
		// may have ended long ago, its card would only be noise.
		if state, err := bridge.QuestionState(ctx, b.o.NATS.Conn, ev); err != nil {
			b.log.Debug("discord: no state for a replayed question; showing it", "job", ev.JobID, "question", ev.QuestionID, "err", err)
		} else if state != bridge.StatePending {
			b.log.Info("discord: not showing a replayed question that no longer waits", "tenant", ev.Tenant,
				"job", ev.JobID, "question", ev.QuestionID, "task_version", ev.TaskVersion, "state", state)
			return nil
		}
	}
	if !bridge.ValidSnowflake(channel) {
		f := &bridge.Failure{Code: bridge.CodeReferenceUnresolved, Dependency: "discord", Operation: "post question",
			RequiredCapability: "a Discord channel id in route.discord.channel_id or ASK_DISCORD_CHANNEL",
			SafeFallback:       "answer in the askbridge console or with /ask",
			OperatorMessage:    fmt.Sprintf("%q is not a Discord channel id (a number such as 1234567890123456789).", neutral.Truncate(channel, 40))}
		return b.fail(ctx, key, c, f)
	}
	// Claim the posting, so two replicas handling the same question at
	// once do not both post it; a claim left by a crash expires. A claim
	// left on the card says an earlier try may have made it unrecorded
	// (an answer lost, a crash): TriedAt keeps when the first such try
	// began, where a look for the card starts.
	var prior bool
	c, err = b.updateCard(ctx, key, init, func(c *card) bool {
		if c.MessageID != "" || c.Outcome != nil || c.Failed {
			return false
		}
		if c.Claim != "" && c.Claim != b.id && b.now().Sub(c.ClaimAt) < claimTTL {
			return false
		}
		now := b.now().UTC()
		prior = c.Claim != ""
		switch {
		case !prior:
			c.TriedAt = now
		case c.TriedAt.IsZero():
			c.TriedAt = c.ClaimAt
		}
		c.Claim, c.ClaimAt = b.id, now
		return true
	})
	if err != nil {
		return err
	}
	switch {
	case c.MessageID != "":
		return b.report(ctx, c, c.ref(), nil)
	case c.Outcome != nil:
		return b.settleUnanswered(ctx, key, init, c, channel, last)
	case c.Failed:
		return nil
	case c.Claim != b.id:
		return &busyError{until: c.ClaimAt.Add(claimTTL)}
	}
	if keyedIDs(c.Tenant, c.JobID, c.QuestionID, c.TaskVersion) {
		// Only then: JetStream keeps every key in memory.
		if err := b.putIndex(ctx, c.Tenant, c.JobID, c.QuestionID); err != nil {
			return err
		}
	}

	jk := jobKey(c.Tenant, c.JobID, channel)
	var jt jobThread
	threadRev, threadAt, haveThread, err := getJSONAt(ctx, b.refs, jk, &jt)
	if err != nil {
		return err
	}
	if haveThread && b.now().Sub(threadAt) >= b.threadRefresh {
		// Renewed, so the thread lives 30 days from its last question. Best
		// effort: a lost race means another write just renewed it.
		data, _ := json.Marshal(jt)
		if rev, err := b.refs.Write(ctx, jk, threadRev, data, threadTTL); err == nil {
			threadRev = rev
		} else if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			b.log.Warn("discord: could not renew a job's thread record", "tenant", c.Tenant, "job", c.JobID, "err", err)
		}
	}
	target := channel
	if haveThread {
		target = jt.Thread
	}
	m := &messageCreate{
		Embeds:          []*discordgo.MessageEmbed{cardEmbed(c)},
		Components:      b.cardComponents(c),
		AllowedMentions: noMentions,
		Nonce:           nonceFor("card", c.Tenant, c.JobID, c.QuestionID, fmt.Sprint(c.TaskVersion)),
		EnforceNonce:    true,
	}
	var msg *discordgo.Message
	inChannel := false // adopted in the channel though the job has a thread
	if prior {
		// An earlier try may have made the card, its answer lost, and
		// Discord remembers a nonce only a few minutes: a card found is
		// taken for this try's, rather than posting a second one.
		found, err := b.findCards(ctx, c, channel)
		switch {
		case err != nil && isTransient(err) && !last:
			return err
		case err != nil:
			b.log.Warn("discord: could not look for the card an earlier try may have made; posting it", "tenant", c.Tenant,
				"job", c.JobID, "question", c.QuestionID, "err", err)
		case len(found) > 0:
			f := found[0]
			b.log.Info("discord: found the card an earlier try made; not posting it again", "tenant", c.Tenant,
				"job", c.JobID, "question", c.QuestionID, "message", f.ID)
			msg = &discordgo.Message{ID: f.ID, ChannelID: f.ChannelID, GuildID: f.GuildID}
			target = f.ChannelID
			// A card in the channel though the job has a thread: made when
			// that thread took no messages, or before it was recorded. The
			// job keeps its thread; a gone one is replaced at its next
			// question.
			inChannel = haveThread && f.thread == ""
		}
	}
	if msg == nil {
		msg, err = b.postMessage(ctx, "post question", target, m)
	}
	replaceThread := uint64(0)
	if err != nil && haveThread && threadGone(err) {
		// Someone deleted or locked the job's thread: the question goes to
		// the channel, which starts the job a new thread.
		b.log.Info("discord: the job's thread is gone; posting in the channel", "tenant", c.Tenant, "job", c.JobID,
			"thread", jt.Thread, "channel", channel, "err", err)
		haveThread, target, replaceThread = false, channel, threadRev
		msg, err = b.postMessage(ctx, "post question", target, m)
	}
	if err != nil {
		if !prior && !mayHaveMade(err) {
			// Discord answered that it made nothing, and no earlier try
			// may have: nothing to look for when the question ends.
			gc, gerr := b.giveUpClaim(ctx, key, init, b.id)
			if gerr != nil {
				return gerr
			}
			c = gc
		}
		if isTransient(err) && !last {
			return err
		}
		return b.fail(ctx, key, c, failureFor(err, target))
	}
	posted := card{Channel: msg.ChannelID, MessageID: msg.ID, Guild: msg.GuildID}
	if posted.Channel == "" {
		posted.Channel = target
	}
	switch {
	case inChannel:
		posted.Guild = cmp.Or(posted.Guild, jt.Guild)
	case haveThread:
		posted.Thread, posted.Guild = jt.Thread, cmp.Or(posted.Guild, jt.Guild)
	default:
		th, err := b.startThread(ctx, channel, msg.ID, q)
		if err != nil {
			// The card is up; later questions try the thread again.
			b.log.Warn("discord: could not start the job's thread", "tenant", c.Tenant, "job", c.JobID, "err", err)
		} else {
			jt = jobThread{Channel: channel, Thread: th.ID, Guild: th.GuildID}
			data, _ := json.Marshal(jt)
			// A lost race: another replica recorded a thread for the job first.
			if _, err := b.refs.Write(ctx, jk, replaceThread, data, threadTTL); err != nil &&
				!errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return fmt.Errorf("discord: record thread: %w", err)
			}
			posted.Thread, posted.Guild = th.ID, cmp.Or(posted.Guild, th.GuildID)
		}
	}
	if posted.Guild == "" {
		posted.Guild = b.o.Guild
	}
	c, err = b.updateCard(ctx, key, init, func(c *card) bool {
		c.Channel, c.MessageID, c.Thread, c.Guild = posted.Channel, posted.MessageID, posted.Thread, posted.Guild
		return true
	})
	if err != nil {
		return err
	}
	if c.Outcome != nil { // settled while we posted
		if err := b.editSettled(ctx, c); err != nil {
			return err
		}
	}
	return b.report(ctx, c, c.ref(), nil)
}

// cardLookback widens the look for a card to before the first try: the
// try's time comes from a replica's clock, the message's id from
// Discord's.
const cardLookback = time.Minute

// maxListPages bounds how many pages of 100 messages a look for a card
// reads in one channel.
const maxListPages = 10

// mayHaveMade says a failed post may have left its message in Discord:
// no answer came (a timeout, a dropped connection), or one that does not
// say Discord made nothing (a 5xx, a reply without a message).
func mayHaveMade(err error) bool {
	var ae *apiError
	return !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500
}

// maybeUnrecorded says a post of c's card may have reached Discord
// without the bot learning of the message.
func maybeUnrecorded(c *card) bool {
	return c.MessageID == "" && c.Claim != "" && c.Question != nil
}

// giveUpClaim drops the claim on a card that has no message: nobody is
// posting it, and no try left it in Discord. owner, when set, is the
// only claimant whose claim is dropped.
func (b *Bot) giveUpClaim(ctx context.Context, key string, init card, owner string) (*card, error) {
	return b.updateCard(ctx, key, init, func(c *card) bool {
		if c.MessageID != "" || c.Claim == "" || (owner != "" && c.Claim != owner) {
			return false
		}
		c.Claim, c.ClaimAt, c.TriedAt = "", time.Time{}, time.Time{}
		return true
	})
}

// settleUnanswered settles a card whose post went out but whose answer
// was lost (a timeout, a dropped connection, a 5xx after Discord stored
// it), when the question ended before the bot recorded the card: when
// the question ended before the asked event came back, or when the bot
// had given the card up and reported it failed. The outcome found no
// message to edit, and the card would keep its buttons. A claim on a
// card with no message says a post may have gone out; the bot looks for
// it where it posts, among the messages made since the first try, and
// settles every copy it finds. A card that was never made is not made
// now.
func (b *Bot) settleUnanswered(ctx context.Context, key string, init card, c *card, channel string, last bool) error {
	if !maybeUnrecorded(c) || !bridge.ValidSnowflake(channel) {
		return nil
	}
	if !c.Failed && c.Claim != b.id && b.now().Sub(c.ClaimAt) < claimTTL {
		// Another replica may be posting it; it settles what it posts.
		// (A failed card's claimant has given it up.)
		return &busyError{until: c.ClaimAt.Add(claimTTL)}
	}
	found, err := b.findCards(ctx, c, channel)
	if err != nil {
		if isTransient(err) && !last {
			return err
		}
		b.log.Warn("discord: could not look for a card whose post went unanswered; it may keep its buttons", "tenant", c.Tenant,
			"job", c.JobID, "question", c.QuestionID, "err", err)
		return nil
	}
	if len(found) == 0 {
		// Never made: give the claim up, so a replay does not look again.
		_, err := b.giveUpClaim(ctx, key, init, "")
		return err
	}
	first := found[0]
	b.log.Info("discord: found a card whose post went unanswered; settling it", "tenant", c.Tenant, "job", c.JobID,
		"question", c.QuestionID, "message", first.ID, "copies", len(found))
	c, err = b.updateCard(ctx, key, init, func(c *card) bool {
		if c.MessageID != "" {
			return false
		}
		c.Channel, c.MessageID, c.Thread = first.ChannelID, first.ID, first.thread
		c.Guild = cmp.Or(first.GuildID, c.Guild, b.o.Guild)
		c.Edited = false
		return true
	})
	if err != nil {
		return err
	}
	if c.Outcome == nil || c.Edited {
		return nil
	}
	for _, m := range found {
		// Each copy as the card: the record's own message may be another
		// (recorded meanwhile by whoever posted it, who edits it too).
		cp := *c
		cp.Channel, cp.MessageID = m.ChannelID, m.ID
		if err := b.editSettled(ctx, &cp); err != nil {
			return err
		}
	}
	o := c.Outcome
	if _, err := b.updateCard(ctx, key, init, func(c *card) bool {
		if c.Outcome == nil || c.Outcome.Type != o.Type || !c.Outcome.At.Equal(o.At) || c.Edited {
			return false
		}
		c.Edited = true
		return true
	}); err != nil {
		return err
	}
	if c.Failed {
		return nil // reported failed; the question has ended
	}
	return b.report(ctx, c, c.ref(), nil)
}

// listedMessage is what findCards reads of a listed message.
type listedMessage struct {
	ID         string `json:"id"`
	ChannelID  string `json:"channel_id"`
	GuildID    string `json:"guild_id"`
	Components []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	} `json:"components"`
	// thread is the job's thread when the message is in it.
	thread string
}

// findCards looks for a card's messages among those made since its first
// try, in the job's thread in channel (when it has one) and in channel:
// every card carries a Decline button naming its question and task
// version. The copies come oldest first, those in the thread first.
func (b *Bot) findCards(ctx context.Context, c *card, channel string) ([]*listedMessage, error) {
	var jt jobThread
	_, haveThread, err := getJSON(ctx, b.refs, jobKey(c.Tenant, c.JobID, channel), &jt)
	if err != nil {
		return nil, err
	}
	where := []string{channel}
	if haveThread && bridge.ValidSnowflake(jt.Thread) {
		where = []string{jt.Thread, channel}
	}
	want := customID(actDecline, c.Tenant, c.JobID, c.QuestionID, c.TaskVersion, 0)
	since := c.ClaimAt
	if !c.TriedAt.IsZero() && c.TriedAt.Before(since) {
		since = c.TriedAt
	}
	var found []*listedMessage
	for _, ch := range where {
		after := snowflakeAt(since.Add(-cardLookback))
		var here []*listedMessage
		for range maxListPages {
			var msgs []listedMessage
			err := b.call(ctx, "find question", func(opts ...discordgo.RequestOption) error {
				ep := discordgo.EndpointChannelMessages(ch)
				body, err := b.s.RequestWithBucketID("GET", ep+"?after="+after+"&limit=100", nil, ep, opts...)
				if err != nil {
					return err
				}
				return json.Unmarshal(body, &msgs)
			})
			if threadGone(err) && ch != channel {
				break // the thread went; the card may be in the channel
			}
			if err != nil {
				return nil, err
			}
			for i := range msgs {
				m := &msgs[i]
				if laterID(m.ID, after) {
					after = m.ID // the next page starts after the newest
				}
				if !hasComponent(m, want) {
					continue
				}
				if m.ChannelID == "" {
					m.ChannelID = ch
				}
				if haveThread && (m.ChannelID == jt.Thread || m.ID == jt.Thread) {
					m.thread = jt.Thread // in the thread, or the message it was started from
				}
				here = append(here, m)
			}
			if len(msgs) < 100 {
				break
			}
		}
		slices.SortFunc(here, func(a, b *listedMessage) int {
			switch {
			case laterID(b.ID, a.ID):
				return -1
			case laterID(a.ID, b.ID):
				return 1
			}
			return 0
		})
		found = append(found, here...)
	}
	return found, nil
}

// hasComponent says one of m's components has the custom id want.
func hasComponent(m *listedMessage, want string) bool {
	for _, row := range m.Components {
		for _, comp := range row.Components {
			if comp.CustomID == want {
				return true
			}
		}
	}
	return false
}

// laterID says snowflake a was made after snowflake b.
func laterID(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// threadGone reports whether Discord refused a post in a thread because
// the thread no longer takes messages: deleted, or archived and locked.
func threadGone(err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case codeUnknownChannel, codeArchivedThread, codeThreadLocked:
		return true
	}
	return ae.Status == http.StatusNotFound
}

// fail records that the card could not be shown and reports the failure.
func (b *Bot) fail(ctx context.Context, key string, c *card, f *bridge.Failure) error {
	b.log.Warn("discord: could not show question", "tenant", c.Tenant, "job", c.JobID, "question", c.QuestionID, "code", f.Code, "reason", f.OperatorMessage)
	if _, err := b.updateCard(ctx, key, *c, func(c *card) bool { c.Failed = true; return true }); err != nil {
		return err
	}
	return b.report(ctx, c, nil, f)
}

// startThread starts the job's thread from the job's first card.
func (b *Bot) startThread(ctx context.Context, channel, messageID string, q *bridge.Question) (*discordgo.Channel, error) {
	name := "askbridge: " + q.JobID
	if q.Agent != "" {
		name = q.Agent + ": " + q.JobID
	}
	var th *discordgo.Channel
	err := b.call(ctx, "start thread", func(opts ...discordgo.RequestOption) error {
		var err error
		th, err = b.s.MessageThreadStartComplex(channel, messageID, &discordgo.ThreadStart{
			Name: neutral.Truncate(name, 100), AutoArchiveDuration: 10080,
		}, opts...)
		return err
	})
	if discordCode(err) == codeThreadExists {
		// A retry after a crash: a thread started from a message has the
		// message's id.
		return &discordgo.Channel{ID: messageID}, nil
	}
	if err != nil {
		return nil, err
	}
	if th == nil || th.ID == "" {
		return nil, &apiError{Op: "start thread", Status: 200, Network: "response without a thread id"}
	}
	return th, nil
}

// onOutcome records how the question ended and edits its card: the
// outcome added, the components removed.
func (b *Bot) onOutcome(ctx context.Context, ev *bridge.Event, last bool) error {
	o := &outcome{Type: ev.Type, Text: ev.Text, By: ev.By, ByName: ev.ByName, Reason: ev.Comment, At: ev.At}
	if ev.Type == bridge.EventAnswered {
		o.Answer = ev.AnswerText
		if o.Answer == "" {
			o.Answer = strings.TrimPrefix(bridge.AnsweredText(ev.Answer), "The answer: ")
		}
	}
	key := cardKey(ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion)
	init := card{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, TaskVersion: ev.TaskVersion}
	record := func(c *card) bool {
		if c.Outcome != nil && c.Outcome.Type == o.Type && c.Outcome.At.Equal(o.At) {
			return false
		}
		c.Outcome, c.Edited = o, false
		return true
	}
	// A card we posted is edited first and then recorded settled and
	// edited in one write; a crash in between redelivers the event, and
	// the edit, which is idempotent, runs again.
	var cur card
	rev, found, err := getJSON(ctx, b.refs, key, &cur)
	if err != nil {
		return err
	}
	if found && cur.MessageID != "" && cur.Question != nil && record(&cur) {
		if err := b.editSettled(ctx, &cur); err != nil {
			// Keep the outcome, as the general way below does before editing.
			if _, werr := b.updateCard(ctx, key, init, record); werr != nil {
				return werr
			}
			return err
		}
		cur.Edited = true
		data, err := json.Marshal(cur)
		if err != nil {
			return fmt.Errorf("discord: encode %s: %w", key, err)
		}
		if _, err := b.refs.Write(ctx, key, rev, data, cardTTL(&cur)); err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		// The record changed meanwhile: settle it the general way.
	}
	c, err := b.updateCard(ctx, key, init, record)
	if err != nil {
		return err
	}
	if c.Edited {
		return nil // this outcome is on the card already
	}
	if c.MessageID == "" || c.Question == nil {
		// Not posted by us (or the record is gone): edit what the
		// runtime says shows the question.
		if err := b.editRefs(ctx, ev, o); err != nil {
			return err
		}
		if c.Failed && maybeUnrecorded(c) {
			// The bot gave the card up (reported it failed) after posts
			// whose answers it lost: Discord may hold it, with buttons
			// nobody can use now. A card still being posted is settled
			// by its asked event instead.
			if err := b.settleUnanswered(ctx, key, init, c, b.channelFor(c.Question), last); err != nil {
				return err
			}
		}
	} else if err := b.editSettled(ctx, c); err != nil {
		return err
	}
	_, err = b.updateCard(ctx, key, init, func(c *card) bool {
		if c.Outcome == nil || c.Outcome.Type != o.Type || !c.Outcome.At.Equal(o.At) {
			return false
		}
		c.Edited = true
		return true
	})
	return err
}

// editSettled rewrites a settled card: outcome added, components removed.
func (b *Bot) editSettled(ctx context.Context, c *card) error {
	return b.editMessage(ctx, c.Channel, c.MessageID, cardEmbed(c))
}

func (b *Bot) editMessage(ctx context.Context, channel, messageID string, embed *discordgo.MessageEmbed) error {
	embeds := []*discordgo.MessageEmbed{embed}
	none := []discordgo.MessageComponent{}
	edit := func() error {
		return b.call(ctx, "edit question", func(opts ...discordgo.RequestOption) error {
			_, err := b.s.ChannelMessageEditComplex(&discordgo.MessageEdit{
				ID: messageID, Channel: channel, Embeds: &embeds, Components: &none, AllowedMentions: noMentions,
			}, opts...)
			return err
		})
	}
	err := edit()
	if discordCode(err) == codeArchivedThread {
		// The card is in the job's thread, archived after a week without
		// a message: reopen it, or the settled card keeps its buttons.
		unarchived := false
		err = b.call(ctx, "reopen thread", func(opts ...discordgo.RequestOption) error {
			_, err := b.s.ChannelEditComplex(channel, &discordgo.ChannelEdit{Archived: &unarchived}, opts...)
			return err
		})
		if err == nil {
			err = edit()
		}
	}
	if code := discordCode(err); code == codeUnknownMessage || code == codeUnknownChannel {
		b.log.Warn("discord: the card to update is gone", "channel", channel, "message", messageID)
		return nil
	}
	return err
}

// editRefs updates messages the bot has no record of, from the event's
// message references: the first embed is kept and the outcome added.
func (b *Bot) editRefs(ctx context.Context, ev *bridge.Event, o *outcome) error {
	for _, ref := range ev.Messages {
		if ref.Platform != bridge.PlatformDiscord || !bridge.ValidSnowflake(ref.Channel) || !bridge.ValidSnowflake(ref.MessageID) {
			continue
		}
		var msg *discordgo.Message
		err := b.call(ctx, "read question", func(opts ...discordgo.RequestOption) error {
			var err error
			msg, err = b.s.ChannelMessage(ref.Channel, ref.MessageID, opts...)
			return err
		})
		if code := discordCode(err); code == codeUnknownMessage || code == codeUnknownChannel {
			continue
		}
		if err != nil {
			return err
		}
		embed := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: "Question"}
		if msg != nil && len(msg.Embeds) > 0 && msg.Embeds[0] != nil {
			embed = msg.Embeds[0]
		}
		if err := b.editMessage(ctx, ref.Channel, ref.MessageID, settledEmbed(embed, o)); err != nil {
			return err
		}
	}
	return nil
}

// onRefused tells the person who clicked, and only them, why their answer
// was refused: an ephemeral follow-up on their interaction.
func (b *Bot) onRefused(ctx context.Context, ev *bridge.Event) error {
	if ev.ReplyTo[replyPlatform] != bridge.PlatformDiscord {
		return nil // another front-end's attempt
	}
	if ev.AttemptID == "" && ev.ReplyTo[replyKind] == replyKindCancel {
		return b.onCancelRefused(ctx, ev)
	}
	appID, token := ev.ReplyTo[replyAppID], ev.ReplyTo[replyToken]
	if appID == "" || token == "" || ev.AttemptID == "" {
		return fmt.Errorf("%w: refusal without a Discord reply address", errPermanent)
	}
	// One refusal told per attempt, whatever redelivers it.
	key := seenKey("refused", ev.AttemptID)
	if done, err := b.wasSeen(ctx, key); err != nil || done {
		return err
	}
	// The attempt id names the interaction, whose snowflake says when it
	// was made: whether the bot's own response to it can still be on its
	// way to Discord. It never skips the try: the id's time is Discord's
	// clock read against this host's, and a host running ahead (or ids
	// that are not Discord's) would drop every refusal untold. A dead
	// token costs one request, which Discord answers "unknown webhook".
	racing := b.now().Sub(ev.At) < followupRace
	if made, ok := snowflakeTime(strings.TrimPrefix(ev.AttemptID, bridge.PlatformDiscord+"-")); ok {
		racing = b.now().Sub(made) < followupRace
	}
	text := refusalText(ev)
	// A follow-up takes no nonce: after a 5xx or no answer, which may
	// come after Discord stored it, it is tried again all the same (here
	// by discordgo on a 502, and with the event), since a second private
	// notice is better than a refusal never told.
	err := b.call(ctx, "tell refusal", func(opts ...discordgo.RequestOption) error {
		_, err := b.s.FollowupMessageCreate(&discordgo.Interaction{AppID: appID, Token: token}, true, &discordgo.WebhookParams{
			Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions,
		}, opts...)
		return err
	})
	switch code := discordCode(err); {
	case (code == codeUnknownWebhook || code == codeUnknownInteract) && racing:
		// The refusal overtook the bot's own response to the interaction
		// (a response that waits for the decision): Discord knows no
		// follow-up before it. Again in a moment.
		// Not wrapped: Discord's 404 would read as permanent.
		return fmt.Errorf("discord: refusal before the interaction's response (Discord error %d)", code)
	case code == codeUnknownWebhook || code == codeInvalidWebhookTok || code == codeUnknownInteract:
		// The interaction token expired (15 minutes): nobody to tell.
		b.log.Info("discord: refusal not shown: the interaction expired", "to", ev.To, "reason", ev.Reason)
	case err != nil:
		return err
	}
	_, err = b.markSeen(ctx, key, 0)
	return err
}

// followupRace is how soon after an interaction (or, for one whose time
// is unknown, after its refusal) an unknown interaction token is taken for
// the bot's response not having reached Discord yet, rather than for a
// token that expired: Discord takes that response within 3 seconds of the
// interaction or never.
const followupRace = 10 * time.Second

// followupTTL is how long after an interaction the bot still answers with
// a follow-up on its token (Discord keeps it 15 minutes); later, by DM.
const followupTTL = 14 * time.Minute

// onCancelRefused tells the person whose /ask cancel the runtime refused,
// and only them: an ephemeral follow-up on their command while its token
// is valid, else a direct message. The refused event carries no attempt
// id; it is matched on its To (the person) and the cancel's reply_to.
func (b *Bot) onCancelRefused(ctx context.Context, ev *bridge.Event) error {
	user, interaction := ev.ReplyTo[replyUser], ev.ReplyTo[replyInteraction]
	if !bridge.ValidSnowflake(user) || ev.To != bridge.PlatformDiscord+":"+user || !bridge.ValidSnowflake(interaction) {
		return fmt.Errorf("%w: cancel refusal not addressed to the Discord user who asked", errPermanent)
	}
	// One refusal told per /ask cancel, whatever redelivers it.
	key := seenKey("cancel-refused", interaction)
	if done, err := b.wasSeen(ctx, key); err != nil || done {
		return err
	}
	text := cancelRefusalText(ev)
	appID, token := ev.ReplyTo[replyAppID], ev.ReplyTo[replyToken]
	fresh, racing := false, false
	if sent, err := strconv.ParseInt(ev.ReplyTo[replySentAt], 10, 64); err == nil {
		age := b.now().Sub(time.Unix(sent, 0))
		fresh, racing = age < followupTTL, age < followupRace
	}
	told := false
	if fresh && appID != "" && token != "" {
		err := b.call(ctx, "tell cancel refusal", func(opts ...discordgo.RequestOption) error {
			_, err := b.s.FollowupMessageCreate(&discordgo.Interaction{AppID: appID, Token: token}, true, &discordgo.WebhookParams{
				Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions,
			}, opts...)
			return err
		})
		switch code := discordCode(err); {
		case err == nil:
			told = true
		case (code == codeUnknownWebhook || code == codeUnknownInteract) && racing:
			// As in onRefused: the refusal overtook the command's response.
			return fmt.Errorf("discord: cancel refusal before the command's response (Discord error %d)", code)
		case code == codeUnknownWebhook || code == codeInvalidWebhookTok || code == codeUnknownInteract:
			b.log.Info("discord: cancel refusal: the interaction expired; sending a DM", "to", ev.To)
		case isTransient(err):
			return err
		default:
			b.log.Warn("discord: cancel refusal follow-up refused; sending a DM", "to", ev.To, "err", err)
		}
	}
	if !told {
		err := b.sendDM(ctx, user, &messageCreate{Content: text, AllowedMentions: noMentions,
			Nonce: nonceFor("cancel-refused", interaction), EnforceNonce: true})
		switch {
		case discordCode(err) == codeCannotDM:
			b.log.Warn("discord: cancel refusal not shown: the user does not accept direct messages from this app", "to", ev.To)
		case err != nil && isTransient(err):
			return err
		case err != nil:
			b.log.Warn("discord: cancel refusal DM refused", "to", ev.To, "err", err)
		}
	}
	_, err := b.markSeen(ctx, key, 0)
	return err
}

// cancelRefusalText is a refused cancel as its requester reads it.
func cancelRefusalText(ev *bridge.Event) string {
	what := "job " + ev.JobID
	if ev.QuestionID != "" {
		what = "question " + ev.QuestionID + " of " + what
	}
	text := ev.Text
	if text == "" {
		text = "askbridge refused the cancel (" + ev.Reason + ")."
	}
	return neutral.Truncate(fmt.Sprintf("askbridge did not cancel %s (tenant %s). %s", what, ev.Tenant, text), maxContent)
}

// refusalText is the refusal as the clicker reads it.
func refusalText(ev *bridge.Event) string {
	text := ev.Text
	if text == "" {
		text = "askbridge refused your answer (" + ev.Reason + ")."
	}
	if len(ev.FieldErrors) > 0 && !strings.Contains(text, "\n") {
		var lines []string
		for _, name := range slices.Sorted(maps.Keys(ev.FieldErrors)) {
			p := ev.FieldErrors[name]
			if !strings.Contains(text, name+": "+p) {
				lines = append(lines, "• "+name+": "+p)
			}
		}
		if len(lines) > 0 {
			text += "\n" + strings.Join(lines, "\n")
		}
	}
	return neutral.Truncate(text, maxContent)
}
