package blockkit

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// AnswerModal is the modal an Answer… button opens: one input per typed
// field, or one text input for a free-text question.
func AnswerModal(c Card, meta ModalMeta) slack.ModalViewRequest {
	q := c.Question
	blocks := []slack.Block{modalQuestion(c)}
	if len(q.Fields) == 0 {
		in := slack.NewPlainTextInputBlockElement(ptext("Your answer"), InputAction).WithMultiline(true).WithMaxLength(MaxTextInput)
		blocks = append(blocks, slack.NewInputBlock(BlockFreeText, ptext("Answer"), nil, in))
	}
	for i := range q.Fields {
		if len(blocks) == MaxModalBlocks {
			break
		}
		blocks = append(blocks, fieldInput(&q.Fields[i]))
	}
	return modal(CallbackAnswer, "Answer the question", "Send", meta, blocks)
}

// DeclineModal asks for an optional reason before declining.
func DeclineModal(c Card, meta ModalMeta) slack.ModalViewRequest {
	in := slack.NewPlainTextInputBlockElement(ptext("For example: ask Ana, she owns the report"), InputAction).
		WithMultiline(true).WithMaxLength(bridge.MaxCommentText)
	reason := slack.NewInputBlock(BlockReason, ptext("Reason (optional)"),
		ptext("The agent reads it; say who could answer instead, if you know."), in).WithOptional(true)
	blocks := []slack.Block{modalQuestion(c), reason}
	return modal(CallbackDecline, "Decline to answer", "Decline", meta, blocks)
}

// DenyModal asks why an approval is denied; the agent reads the reason.
func DenyModal(c Card, meta ModalMeta) slack.ModalViewRequest {
	in := slack.NewPlainTextInputBlockElement(ptext("What should the agent do instead?"), InputAction).
		WithMultiline(true).WithMaxLength(bridge.MaxCommentText)
	reason := slack.NewInputBlock(BlockReason, ptext("Why deny it?"), nil, in)
	blocks := []slack.Block{modalQuestion(c), reason}
	return modal(CallbackDeny, "Deny the proposal", "Deny", meta, blocks)
}

// modalQuestion is the question a modal is about. A restricted question's
// modal, like its card, shows none of it: whoever opens it may be an
// operator who may only decline it.
func modalQuestion(c Card) slack.Block {
	nc := c.Neutral(nil)
	if nc.Kind == card.KindHidden {
		return slack.NewSectionBlock(mrkdwn("_"+nc.Placeholder+"_"), nil, nil)
	}
	return section("", nc.Text, modalCut(c))
}

func modal(callback, title, submit string, meta ModalMeta, blocks []slack.Block) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           ptext(plain(title, MaxModalTitle)),
		Submit:          ptext(submit),
		Close:           ptext("Cancel"),
		CallbackID:      callback,
		PrivateMetadata: meta.String(),
		Blocks:          slack.Blocks{BlockSet: blocks},
	}
}

// fieldInput renders one typed field as an input block.
func fieldInput(f *bridge.Field) *slack.InputBlock {
	var el slack.BlockElement
	optional := !f.Required
	switch f.Kind {
	case bridge.FieldText:
		in := slack.NewPlainTextInputBlockElement(nil, InputAction).WithMultiline(f.Multiline)
		if f.MaxLength > 0 {
			in = in.WithMaxLength(min(f.MaxLength, MaxTextInput))
		} else {
			in = in.WithMaxLength(MaxTextInput)
		}
		el = in
	case bridge.FieldNumber:
		in := slack.NewNumberInputBlockElement(nil, InputAction, !f.Integer)
		lo, hi := numberBounds(*f)
		if lo != "" {
			in = in.WithMinValue(lo)
		}
		if hi != "" {
			in = in.WithMaxValue(hi)
		}
		el = in
	case bridge.FieldChoice:
		opts := options(f.Options, MaxSelectOpts)
		if len(f.Options) <= MaxRadios {
			el = slack.NewRadioButtonsBlockElement(InputAction, opts...)
		} else {
			el = slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, ptext("Choose"), InputAction, opts...)
		}
	case bridge.FieldMultiChoice:
		opts := options(f.Options, MaxSelectOpts)
		if len(f.Options) <= MaxCheckboxes {
			el = slack.NewCheckboxGroupsBlockElement(InputAction, opts...)
		} else {
			el = slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, ptext("Choose"), InputAction, opts...)
		}
	case bridge.FieldDate:
		if f.DateTime {
			el = slack.NewDateTimePickerBlockElement(InputAction)
		} else {
			el = slack.NewDatePickerBlockElement(InputAction)
		}
	case bridge.FieldToggle:
		el = slack.NewCheckboxGroupsBlockElement(InputAction,
			slack.NewOptionBlockObject("true", ptext(plain(f.Title(), MaxOptionText)), nil))
		// An unticked box is a valid "no", so Slack must not demand a tick.
		optional = true
	default:
		el = slack.NewPlainTextInputBlockElement(nil, InputAction)
	}
	var hint *slack.TextBlockObject
	if strings.TrimSpace(f.Description) != "" {
		// Slack refuses an empty text object, and plain trims the text.
		hint = slack.NewTextBlockObject(slack.PlainTextType, plain(f.Description, MaxHintText), false, false)
	}
	label := slack.NewTextBlockObject(slack.PlainTextType, plain(f.Title(), MaxLabelText), false, false)
	return slack.NewInputBlock(FieldBlockID(f.Name), label, hint, el).WithOptional(optional)
}

// options renders choice options (at most n); the value is the index,
// since an option's value is limited to 150 characters and a choice to
// 200. Long options are shown as optionLabels says.
func options(list []string, n int) []*slack.OptionBlockObject {
	list = list[:min(len(list), n)]
	out := make([]*slack.OptionBlockObject, 0, len(list))
	for i, label := range optionLabels(list) {
		out = append(out, slack.NewOptionBlockObject(strconv.Itoa(i), ptext(label), nil))
	}
	return out
}

// AnswerFromState reads a submitted answer modal into the JSON answer the
// validator and the runtime take: a string for free text, an object keyed
// by field name for typed fields. Unusable input is passed on as it came so
// that bridge.CheckAnswer words the problem.
func AnswerFromState(q *bridge.Question, state *slack.ViewState) json.RawMessage {
	get := func(block string) (slack.BlockAction, bool) {
		if state == nil {
			return slack.BlockAction{}, false
		}
		a, ok := state.Values[block][InputAction]
		return a, ok
	}
	if len(q.Fields) == 0 {
		a, _ := get(BlockFreeText)
		raw, _ := json.Marshal(a.Value)
		return raw
	}
	obj := map[string]any{}
	for _, f := range q.Fields {
		a, ok := get(FieldBlockID(f.Name))
		if !ok {
			if f.Kind == bridge.FieldToggle {
				obj[f.Name] = false
			}
			continue
		}
		switch f.Kind {
		case bridge.FieldNumber:
			v := strings.TrimSpace(a.Value)
			if v == "" {
				continue
			}
			// NaN and ±Inf parse but are not JSON numbers: passed on as
			// text, the validator refuses them with the field's own words.
			if n, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
				obj[f.Name] = json.Number(strconv.FormatFloat(n, 'f', -1, 64))
			} else {
				obj[f.Name] = v
			}
		case bridge.FieldChoice:
			if a.SelectedOption.Value == "" {
				continue
			}
			obj[f.Name] = optionText(f.Options, a.SelectedOption.Value)
		case bridge.FieldMultiChoice:
			picked := []string{}
			for _, o := range a.SelectedOptions {
				picked = append(picked, optionText(f.Options, o.Value))
			}
			if len(picked) > 0 {
				obj[f.Name] = picked
			}
		case bridge.FieldDate:
			switch {
			case f.DateTime && a.SelectedDateTime != 0:
				obj[f.Name] = a.SelectedDateTime
			case !f.DateTime && a.SelectedDate != "":
				obj[f.Name] = a.SelectedDate
			}
		case bridge.FieldToggle:
			obj[f.Name] = len(a.SelectedOptions) > 0
		default:
			if a.Value != "" {
				obj[f.Name] = a.Value
			}
		}
	}
	raw, _ := json.Marshal(obj)
	return raw
}

// optionText maps an option's index value back to its text; an index that
// is not ours is passed on verbatim for the validator to refuse.
func optionText(opts []string, v string) string {
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(opts) || strconv.Itoa(i) != v {
		return v
	}
	return opts[i]
}

// ReasonFromState reads the reason of a decline or deny modal.
func ReasonFromState(state *slack.ViewState) string {
	if state == nil {
		return ""
	}
	return strings.TrimSpace(state.Values[BlockReason][InputAction].Value)
}

// ModalErrors maps a validator refusal to Slack's inline errors, keyed by
// input block ids (any other key makes Slack show a generic error).
func ModalErrors(q *bridge.Question, callback string, e *bridge.AnswerError) map[string]string {
	out := map[string]string{}
	if callback != CallbackAnswer {
		out[BlockReason] = plain(e.Text, 300)
		return out
	}
	if len(q.Fields) == 0 {
		out[BlockFreeText] = plain(strings.TrimPrefix(e.Text, "answer: "), 300)
		return out
	}
	known := map[string]bool{}
	for _, f := range q.Fields {
		known[f.Name] = true
	}
	var stray []string
	for name, msg := range e.Fields {
		if known[name] {
			out[FieldBlockID(name)] = plain(msg, 300)
		} else {
			stray = append(stray, name+": "+msg)
		}
	}
	if len(out) == 0 || len(stray) > 0 {
		first := FieldBlockID(q.Fields[0].Name)
		msg := e.Text
		if len(stray) > 0 {
			msg = strings.Join(stray, "; ")
		}
		if prev, ok := out[first]; ok {
			msg = prev + "; " + msg
		}
		out[first] = plain(msg, 300)
	}
	return out
}

// numberBounds are a number field's min_value and max_value for Slack's
// number input ("" for none): whole bounds for a whole-number input (see
// bridge.Field.InputBounds).
func numberBounds(f bridge.Field) (lo, hi string) {
	mn, mx := f.InputBounds()
	if mn != nil {
		lo = strconv.FormatFloat(*mn, 'f', -1, 64)
	}
	if mx != nil {
		hi = strconv.FormatFloat(*mx, 'f', -1, 64)
	}
	return lo, hi
}
