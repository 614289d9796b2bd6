package slack

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// onReminder DMs each Slack target of a reminder or escalation step. The
// event carries the question and names its card (for a link to it).
func (b *Bot) onReminder(ctx context.Context, ev *bridge.Event) error {
	ref := refOf(ev)
	rec, _ := b.cards.Get(ref)
	if rec != nil && rec.Ended != nil {
		// Settled meanwhile: nothing to remind about, but the round's
		// other questions of the job.
		if ev = bridge.WithoutTop(ev); ev == nil {
			return nil
		}
	}
	q := ev.Question
	if q == nil && rec != nil {
		q = rec.Question
	}
	if bridge.StaleReminder(ctx, b.o.NATS.Conn, ev, b.now()) {
		b.log.InfoContext(ctx, "slack: not sending a reminder for a question that no longer waits", "tenant", ev.Tenant,
			"job", ev.JobID, "question", ev.QuestionID, "step", ev.Step)
		return nil
	}
	msg := bridge.MessageOn(ev, bridge.PlatformSlack)
	if msg == nil && rec != nil {
		msg = rec.Message
	}
	link := b.permalink(ctx, msg)
	if err := b.resurface(ctx, ev, msg, link); err != nil {
		return err
	}
	deadline, askedAt := ev.Deadline, ev.AskedAt
	if rec != nil {
		deadline, askedAt = cmp.Or(deadline, rec.Deadline), cmp.Or(askedAt, rec.AskedAt)
	}
	var failed error
	for _, target := range ev.Targets {
		user, ok := strings.CutPrefix(target, "slack:")
		if !ok || !bridge.ValidSlackID(user) {
			continue
		}
		text := b.reminderFor(ctx, ev, q, target, link, askedAt, deadline)
		if text == "" {
			continue // the round reminds others of this job, not them
		}
		key := onceKey("dm", ev.EventID, target)
		first, err := b.once(ctx, key)
		if err != nil {
			return err
		}
		if !first {
			continue
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

// permalink is a link to msg, or "" when there is none or Slack gives none.
func (b *Bot) permalink(ctx context.Context, msg *bridge.MessageRef) string {
	if msg == nil {
		return ""
	}
	link := ""
	_ = b.call(ctx, "chat.getPermalink", "", func(ctx context.Context) error {
		var err error
		link, err = b.api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: msg.Channel, Ts: msg.MessageID})
		return err
	})
	return link
}

// reminderFor is target's one DM of a reminder or escalation event: for a
// job's round (ev.Nudge), the questions it reminds them of, merged when
// several; "" when it reminds them of none.
func (b *Bot) reminderFor(ctx context.Context, ev *bridge.Event, q *bridge.Question, target, link string, askedAt, deadline time.Time) string {
	if ev.Nudge != nil {
		if r, ok := card.ReminderOf(ev, target); ok {
			return mergedReminderText(ev, r, link, b.jobURL(target, ev.Tenant, ev.JobID), b.now())
		}
		mine := ev.Nudge.For(target)
		if len(mine) == 0 {
			return ""
		}
		if nq := mine[0]; nq.QuestionID != ev.QuestionID {
			// One question of the round, not the top one: remind of it.
			one := *ev
			one.QuestionID, one.TaskVersion, one.Question, one.Step = nq.QuestionID, nq.TaskVersion, nq.Question, nq.Step
			one.Messages = nil
			ref := blockkit.Ref{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: nq.QuestionID, Version: nq.TaskVersion}
			var msg *bridge.MessageRef
			if rec, _ := b.cards.Get(ref); rec != nil {
				msg = rec.Message
			}
			ev, q, link, askedAt, deadline = &one, nq.Question, b.permalink(ctx, msg), nq.AskedAt, nq.Deadline
		}
	}
	ref := refOf(ev)
	if q != nil && !bridge.ReminderShowsQuestion(ev, q, target) {
		return restrictedReminderText(ev, q, link, deadline, b.now(), b.questionURL(target, ref))
	}
	return reminderText(ev, q, link, askedAt, deadline, b.now(), b.questionURL(target, ref))
}

// mergedReminderText is the one DM listing a person's questions of a job
// in a round (card.ReminderOf), in queue order, with where to answer them.
func mergedReminderText(ev *bridge.Event, r card.Reminder, link, jobURL string, now time.Time) string {
	var sb strings.Builder
	icon := ":bell: "
	if ev.Type == bridge.EventEscalated {
		icon = ":rotating_light: "
	}
	sb.WriteString(icon + strings.Replace(r.Intro, "job "+r.JobID, "job `"+r.JobID+"`", 1) + "\n")
	var deadline time.Time
	for _, it := range r.Items {
		text := quote(it.Text, 300)
		if it.Hidden {
			text = "_" + bridge.RestrictedNotice(restrictedFor(it.WaitsFor)) + "_"
		}
		sb.WriteString("• `" + it.Priority + "` " + text + " (`" + it.QuestionID + "`)\n")
		if deadline.IsZero() || (!it.Deadline.IsZero() && it.Deadline.Before(deadline)) {
			deadline = it.Deadline
		}
	}
	switch {
	case link != "":
		sb.WriteString("<" + link + "|Answer them in the thread>")
	case jobURL != "":
		sb.WriteString("<" + jobURL + "|Answer them in the askbridge console>")
	}
	if link != "" && jobURL != "" {
		sb.WriteString(" · <" + jobURL + "|Open the job in the askbridge console>")
	}
	if !deadline.IsZero() {
		sb.WriteString(" · The first ends in " + bridge.FormatTimeout(max(deadline.Sub(now), 0)) + " (" + blockkit.SlackDate(deadline) + ")")
	}
	return sb.String()
}

// resurface posts, once, the thread message of a round that re-surfaces
// the top of the job's queue (card.NudgeOf), beside the question's card.
func (b *Bot) resurface(ctx context.Context, ev *bridge.Event, msg *bridge.MessageRef, link string) error {
	n, ok := card.NudgeOf(ev)
	if !ok || msg == nil {
		return nil
	}
	key := onceKey("nudge", ev.EventID)
	if first, err := b.once(ctx, key); err != nil || !first {
		return err
	}
	blocks, text := blockkit.Nudge(n, link, b.consoleOn())
	thread := cmp.Or(msg.Thread, msg.MessageID)
	err := b.call(ctx, "chat.postMessage", msg.Channel, func(ctx context.Context) error {
		_, _, err := b.api.PostMessageContext(ctx, msg.Channel, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false), slack.MsgOptionTS(thread))
		return err
	})
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && errors.As(err, &ae) && !ae.Transient:
		b.log.WarnContext(ctx, "slack: could not re-surface a question in its thread", "tenant", ev.Tenant, "job", ev.JobID, "slack_error", ae.Code)
		return nil
	}
	b.release(ctx, key)
	return err
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
	case ev.Type == bridge.EventDelegated:
		sb.WriteString(":wave: " + blockkit.Who(ev.By, ev.ByName) + " asked you to answer a question")
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
	writeWhereAndWhen(&sb, "Answer", link, consoleURL, deadline, now)
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
	writeWhereAndWhen(&sb, "Decline", link, consoleURL, deadline, now)
	return sb.String()
}

// writeWhereAndWhen ends a reminder: where to act on the question (the
// card's thread, else the console), and the time left.
func writeWhereAndWhen(sb *strings.Builder, act, link, consoleURL string, deadline, now time.Time) {
	if link != "" {
		sb.WriteString("<" + link + "|" + act + " it in the thread>")
	} else if consoleURL != "" {
		sb.WriteString("<" + consoleURL + "|" + act + " it in the askbridge console>")
	}
	if !deadline.IsZero() {
		left := max(deadline.Sub(now), 0)
		sb.WriteString(" · Time left: " + bridge.FormatTimeout(left) + " (until " + blockkit.SlackDate(deadline) + ")")
	}
}
