package blockkit

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Slack limits a message's text in all, summed over its blocks (MaxCardText):
// a card sizes what it draws before it cuts the question's own text.

// textSize counts the characters of every text in blocks (text objects,
// option texts, labels), as Slack counts a message's text in all. The
// block kinds cards use are counted directly: every settled card is sized
// on the answer path, where a JSON round trip cost ten times the render.
func textSize(blocks []slack.Block) int {
	n := 0
	for _, b := range blocks {
		k, ok := knownTextSize(b)
		if !ok {
			k = jsonTextSize(b)
		}
		n += k
	}
	return n
}

// knownTextSize sizes the blocks cards are made of; false for others.
func knownTextSize(b slack.Block) (int, bool) {
	n := 0
	switch b := b.(type) {
	case *slack.SectionBlock:
		n += objectSize(b.Text)
		for _, f := range b.Fields {
			n += objectSize(f)
		}
		if a := b.Accessory; a != nil {
			if a.ButtonElement == nil {
				return 0, false
			}
			n += objectSize(a.ButtonElement.Text)
		}
	case *slack.ContextBlock:
		for _, e := range b.ContextElements.Elements {
			t, ok := e.(*slack.TextBlockObject)
			if !ok {
				return 0, false
			}
			n += objectSize(t)
		}
	case *slack.ActionBlock:
		if b.Elements == nil {
			return 0, true
		}
		for _, e := range b.Elements.ElementSet {
			switch e := e.(type) {
			case *slack.ButtonBlockElement:
				n += objectSize(e.Text)
			case *slack.SelectBlockElement:
				n += objectSize(e.Placeholder)
				for _, o := range e.Options {
					n += objectSize(o.Text) + objectSize(o.Description)
				}
				if e.InitialOption != nil || len(e.OptionGroups) > 0 || e.Confirm != nil {
					return 0, false
				}
			case *slack.OverflowBlockElement:
				if e.Confirm != nil {
					return 0, false
				}
				for _, o := range e.Options {
					n += objectSize(o.Text) + objectSize(o.Description)
				}
			default:
				return 0, false
			}
		}
	default:
		return 0, false
	}
	return n, true
}

func objectSize(t *slack.TextBlockObject) int {
	if t == nil {
		return 0
	}
	return utf8.RuneCountInString(t.Text)
}

// jsonTextSize sizes any block through its JSON.
func jsonTextSize(b slack.Block) int {
	raw, err := json.Marshal(b)
	if err != nil {
		return 0
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	n := 0
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				n += utf8.RuneCountInString(s)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return n
}
