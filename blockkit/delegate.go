package blockkit

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/card"
)

// The card's overflow menu (docs/contract.md "Delegate and snooze"): Ask
// someone else, and Remind me later's lengths, in one element so the
// actions block stays within Slack's limits whatever the choices take.
const (
	// ActionMore is the overflow menu's action id.
	ActionMore = "more"
	// ActionDelegate is Click.Action for Ask someone else: it opens the
	// user picker (DelegateModal).
	ActionDelegate = "delegate"
	// ActionSnooze is Click.Action for Remind me later; Click.Snooze says
	// how long.
	ActionSnooze = "snooze"
	// snoozePrefix starts a snooze option's value; the rest is its length.
	snoozePrefix = "snooze."
	// CallbackDelegate is the user picker's callback id.
	CallbackDelegate = "ask.delegate"
	// BlockDelegate is the user picker's input block.
	BlockDelegate = "delegate"
)

// moreMenu is the overflow menu of a waiting card.
func moreMenu() *slack.OverflowBlockElement {
	opts := []*slack.OptionBlockObject{slack.NewOptionBlockObject(ActionDelegate, ptext(card.DelegateLabel+"…"), nil)}
	for _, o := range card.SnoozeOptions {
		opts = append(opts, slack.NewOptionBlockObject(snoozePrefix+o.Value, ptext(card.SnoozeLabel+": "+strings.ToLower(o.Label[:1])+o.Label[1:]), nil))
	}
	return slack.NewOverflowBlockElement(ActionMore, opts...)
}

// parseMore reads the overflow menu's selected option into c.
func parseMore(c Click, selected string) (Click, error) {
	if selected == ActionDelegate {
		c.Action = ActionDelegate
		return c, nil
	}
	if v, ok := strings.CutPrefix(selected, snoozePrefix); ok {
		for _, o := range card.SnoozeOptions {
			if o.Value == v {
				c.Action, c.Snooze = ActionSnooze, v
				return c, nil
			}
		}
	}
	return Click{}, ErrBadRef
}

// DelegateModal is the user picker Ask someone else opens: whom to ask to
// answer the question.
func DelegateModal(c Card, meta ModalMeta) slack.ModalViewRequest {
	pick := slack.NewOptionsSelectBlockElement(slack.OptTypeUser, ptext(card.PickLabel), InputAction)
	in := slack.NewInputBlock(BlockDelegate, ptext("Who should answer?"),
		ptext("They become one of its answerers and get a direct message with the question."), pick)
	return modal(CallbackDelegate, card.DelegateLabel, "Ask", meta, []slack.Block{modalQuestion(c), in})
}

// DelegateFromState is the Slack user picked in the user picker, "" when
// none.
func DelegateFromState(state *slack.ViewState) string {
	if state == nil {
		return ""
	}
	return strings.TrimSpace(state.Values[BlockDelegate][InputAction].SelectedUser)
}
