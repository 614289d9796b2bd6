package slack

import (
	"cmp"
	"context"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// formQuestion is a question as a form or a click needs it.
type formQuestion struct {
	card *engine.Card
	// ended and late: the question no longer waits, and what someone
	// answering it now is told, in the runtime's words.
	ended bool
	late  string
	// attempt is the answer attempt that ended it, if one did: the same
	// interaction delivered again is that answer, not a late one.
	attempt string
}

// lateText is what someone answering the question after it ended is told.
func (f *formQuestion) lateText() string {
	return cmp.Or(f.late, "This question no longer waits for an answer.")
}

// thread is the thread the question's card is in, if known.
func (f *formQuestion) thread() string {
	if f.card.Message == nil {
		return ""
	}
	return f.card.Message.Thread
}

// question is the question of r as a form needs it: from what this
// adapter remembers, else from the runtime (as user).
func (b *Bot) question(ctx context.Context, r blockkit.Ref, user string) (*formQuestion, error) {
	if c, ok := b.cards.Get(r); ok && c.Question != nil {
		f := &formQuestion{card: c, ended: c.Ended != nil, late: c.LateText()}
		if c.Ended != nil {
			f.attempt = c.Ended.AttemptID
		}
		return f, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.formLookup())
	defer cancel()
	var reply bridge.ShowReply
	if err := b.request(ctx, bridge.APIShow, bridge.ShowRequest{As: "slack:" + user, Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID}, &reply); err != nil {
		return nil, err
	}
	if reply.Question == nil || reply.Question.Question == nil {
		return nil, nil
	}
	v := reply.Question
	c := &engine.Card{Ref: r, Question: v.Question, AskedAt: v.AskedAt, Deadline: v.Deadline}
	for i, m := range v.Messages {
		if m.Platform == bridge.PlatformSlack && m.MessageID != "" {
			c.Message = &v.Messages[i]
			break
		}
	}
	f := &formQuestion{card: c}
	if v.State != bridge.StatePending {
		f.ended = true
		if !v.SettledAt.IsZero() {
			state := v.State
			if state == bridge.StateFailed && v.Text == bridge.TimedOutText(v.Question.TimeoutDuration()) {
				state = bridge.StateTimedOut
			}
			_, f.late = bridge.NotPendingText(state, v.By, v.ByName, v.SettledAt, v.TaskVersion)
		}
	}
	return f, nil
}

// choices are the choices of the question r names, nil when neither this
// adapter nor the runtime (asked as user) knows it.
func (b *Bot) choices(ctx context.Context, r blockkit.Ref, user string) []string {
	rec, err := b.question(ctx, r, user)
	if err != nil || rec == nil {
		return nil
	}
	return rec.card.Question.Choices
}
