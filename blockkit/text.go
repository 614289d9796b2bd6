package blockkit

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// Block Kit limits (see FIELD-NOTES.md). Exceeding one makes Slack refuse
// the whole message with invalid_blocks, so every text is fitted.
const (
	MaxSectionText = 3000
	MaxButtonText  = 75
	MaxOptionText  = 75
	MaxOptionValue = 150
	MaxLabelText   = 2000
	MaxHintText    = 2000
	MaxModalTitle  = 24
	MaxContextText = 3000
	MaxMessageBlks = 50
	MaxModalBlocks = 100
	MaxSelectOpts  = 100
	MaxCheckboxes  = 10
	MaxRadios      = 5 // we use radios only up to 5; Slack allows 10
	MaxTextInput   = 3000
	// MaxCardText bounds the text of a whole card. Slack refuses a message
	// whose blocks hold too much text in all (msg_blocks_too_long), at
	// about 12,000 characters by its SDK maintainers' word (the reference
	// does not give the limit; slackapi/bolt-js#2509): a card keeps well
	// under it.
	MaxCardText = 10000
	// minSectionText is the least a card's text section is cut to.
	minSectionText = 400
	// maxButtonChoices and maxShortChoice decide buttons versus a select.
	maxButtonChoices = 5
	maxShortChoice   = 30
)

// escape makes user text safe in mrkdwn: Slack reads &, < and > as markup.
func escape(s string) string {
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// fitEscaped escapes s and, when the whole of it does not fit limit
// characters, cuts it so that the result plus room characters (what a cut
// text is followed by) stays within limit. It never cuts inside an
// entity. The bool says whether anything was cut.
func fitEscaped(s string, limit, room int) (string, bool) {
	var b strings.Builder
	n := 0
	budget := limit - room - 1 // the ellipsis
	cutAt := -1                // b.Len() where a cut text ends
	for _, r := range s {
		e := string(r)
		switch r {
		case '&':
			e = "&amp;"
		case '<':
			e = "&lt;"
		case '>':
			e = "&gt;"
		}
		w := utf8.RuneCountInString(e)
		if cutAt < 0 && n+w > budget {
			cutAt = b.Len()
		}
		if n+w > limit {
			// Only a text that does not fit whole is cut, and then
			// leaves room for the ellipsis and what follows a cut.
			return strings.TrimRight(b.String()[:cutAt], " \n") + "…", true
		}
		b.WriteString(e)
		n += w
	}
	return b.String(), false
}

// plain cuts plain text (button labels, option texts, titles) to limit
// characters, marking the cut with an ellipsis.
func plain(s string, limit int) string {
	return bridge.Truncate(strings.TrimSpace(s), limit)
}

// SlackDate renders t with Slack's date formatting, which shows it in the
// reader's own time zone; the fallback is UTC for clients that cannot.
func SlackDate(t time.Time) string {
	return "<!date^" + strconv.FormatInt(t.Unix(), 10) + "^{date_short_pretty} at {time}|" +
		t.UTC().Format("2006-01-02 15:04 UTC") + ">"
}

// Mention renders an identity for a person: a Slack mention for slack:
// identities, the identity in code otherwise.
func Mention(identity string) string {
	if user, ok := strings.CutPrefix(identity, "slack:"); ok && slackID(user) && user != "" {
		return "<@" + user + ">"
	}
	return "`" + escape(identity) + "`"
}

// Who is "@kevin" when the name is known, else the identity's mention.
func Who(identity, name string) string {
	if name != "" {
		return "@" + escape(name)
	}
	if identity == "" {
		return "someone"
	}
	return Mention(identity)
}

// optionLabels are the texts options show in a menu, radio buttons or
// checkboxes (Slack allows 75 characters): each option whole when it
// fits, else cut. Options cut to the same text would look alike and a
// person could not tell which they pick, so those show their start, then
// the part where each departs from the others.
func optionLabels(list []string) []string {
	out := make([]string, len(list))
	alike := map[string][]int{}
	for i, o := range list {
		out[i] = plain(o, MaxOptionText)
		alike[out[i]] = append(alike[out[i]], i)
	}
	for _, same := range alike {
		if len(same) < 2 {
			continue
		}
		for _, i := range same {
			r := []rune(strings.TrimSpace(list[i]))
			d := 0 // how far r runs as one of the others
			for _, j := range same {
				if j != i {
					d = max(d, commonPrefix(r, []rune(strings.TrimSpace(list[j]))))
				}
			}
			out[i] = departure(r, d)
		}
	}
	// Whatever is still alike (a coincidence of the cuts) gets its number.
	count := map[string]int{}
	for _, l := range out {
		count[l]++
	}
	for i, l := range out {
		if count[l] > 1 {
			n := " (" + strconv.Itoa(i+1) + ")"
			out[i] = plain(strings.TrimSuffix(l, "…"), MaxOptionText-utf8.RuneCountInString(n)) + n
		}
	}
	return out
}

// departure shows the start of r, then r from shortly before d, where it
// departs from options that begin as it does, within MaxOptionText.
func departure(r []rune, d int) string {
	const head = 24
	from := max(d-12, head)
	if len(r) <= MaxOptionText || from >= len(r) {
		return plain(string(r), MaxOptionText)
	}
	return string(r[:head]) + "…" + plain(string(r[from:]), MaxOptionText-head-1)
}

func commonPrefix(a, b []rune) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// rowsText is a table of arguments, a row a line: "`order`: 4471".
// Backticks in a key would end its code span.
func rowsText(sec card.Section) string {
	lines := make([]string, 0, len(sec.Rows)+1)
	for _, r := range sec.Rows {
		lines = append(lines, "`"+strings.ReplaceAll(r.Key, "`", "'")+"`: "+r.Value)
	}
	if sec.More > 0 {
		lines = append(lines, card.MoreText(sec.More))
	}
	return strings.Join(lines, "\n")
}
