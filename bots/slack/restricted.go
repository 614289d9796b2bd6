package slack

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
)

// onRestrictedAsked sends the content of a restricted question to the
// people it names, once each, in a DM: the channel's card shows only that
// it waits and for whom (docs/contract.md "Who may do what"). The runtime
// names them in the asked event's targets, one identity per person.
func (b *Bot) onRestrictedAsked(ctx context.Context, ev *bridge.Event) error {
	q := ev.Question
	if q == nil || !q.Restricted() || len(ev.Targets) == 0 {
		return nil
	}
	ref := refOf(ev)
	var msg *bridge.MessageRef
	if rec, ok := b.cards.Get(ref); ok {
		msg = rec.Message
	}
	link := b.permalink(ctx, msg)
	var failed error
	for _, target := range ev.Targets {
		user, ok := strings.CutPrefix(target, bridge.PlatformSlack+":")
		if !ok || !bridge.ValidSlackID(user) {
			continue
		}
		// Per question and version, not per event: an asked event sent
		// again for a new consumer DMs nobody twice.
		key := onceKey("restricted-dm", ev.Tenant, ev.JobID, ev.QuestionID, strconv.FormatInt(ev.TaskVersion, 10), target)
		first, err := b.once(ctx, key)
		if err != nil {
			return err
		}
		if !first {
			continue
		}
		text := restrictedAskedText(ev, q, link, b.questionURL(target, ref))
		if err := b.dm(ctx, user, text); err != nil {
			var ae *apiError
			if ctx.Err() == nil && errors.As(err, &ae) && !ae.Transient {
				b.log.WarnContext(ctx, "slack: could not DM a restricted question", "to", target, "slack_error", ae.Code)
				continue
			}
			b.release(ctx, key)
			failed = err
		}
	}
	return failed
}

// restrictedAskedText is the DM that carries a restricted question's
// content to one of its people: the question, why it matters, where to
// answer (the console, which shows them the form; the card, which shows
// others only that it waits) and the time left.
func restrictedAskedText(ev *bridge.Event, q *bridge.Question, link, consoleURL string) string {
	var sb strings.Builder
	sb.WriteString(":lock: A restricted question for you (job `" + ev.JobID + "`); only the people it names and admins may read it:\n>" +
		quote(q.Question, 1500))
	if why := strings.TrimSpace(q.WhyItMatters); why != "" {
		sb.WriteString("\nWhy it matters: " + quote(why, 600))
	}
	if len(q.Choices) > 0 {
		sb.WriteString("\nChoices: " + quote(strings.Join(q.Choices, " · "), 600))
	}
	sb.WriteString("\n")
	switch {
	case consoleURL != "":
		sb.WriteString("<" + consoleURL + "|Answer it in the askbridge console>")
		if link != "" {
			sb.WriteString(" · <" + link + "|its card> shows others only that it waits")
		}
	case link != "":
		sb.WriteString("<" + link + "|Its card> shows others only that it waits")
	}
	if !ev.Deadline.IsZero() {
		sb.WriteString(" · Deadline: " + blockkit.SlackDate(ev.Deadline))
	}
	// Without the console this is the way to answer it from Slack.
	sb.WriteString("\nOr answer with `/ask answer " + ev.JobID + "/" + ev.QuestionID + " <answer>`.")
	return sb.String()
}
