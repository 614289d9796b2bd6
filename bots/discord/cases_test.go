package discord

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	neutral "github.com/askbridge/askbridge/card"
)

var update = flag.Bool("update", false, "rewrite testdata/cases/*.golden")

// drawnCase is one case of the shared table as Discord shows it.
type drawnCase struct {
	Case       string                       `json:"case"`
	Embed      *discordgo.MessageEmbed      `json:"embed"`
	Components []discordgo.MessageComponent `json:"components"`
}

// TestSharedCasesGolden draws every case of the table the platforms share
// (card.Cases) into testdata/cases/<kind>.golden, each message checked
// against Discord's limits. blockkit draws the same table for Slack.
func TestSharedCasesGolden(t *testing.T) {
	t.Parallel()
	groups := map[string][]drawnCase{}
	for _, c := range neutral.Cases() {
		nc := neutral.New(c.Input)
		d := drawnCase{c.Name, drawEmbed(nc), drawComponents(nc)}
		name := c.Group + "/" + c.Name
		raw, err := json.Marshal(map[string]any{"embeds": []any{d.Embed}, "components": d.Components})
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		for _, p := range messageProblems(body) {
			t.Errorf("%s: Discord would refuse it: %s", name, p)
		}
		if q := c.Input.Question; q.Restricted() {
			for _, secret := range []string{q.Question, q.WhyItMatters, q.BlockedTools[0]} {
				if strings.Contains(string(raw), secret) {
					t.Errorf("%s: a restricted question's card shows %q", name, secret)
				}
			}
		}
		groups[c.Group] = append(groups[c.Group], d)
	}
	for g, drawn := range groups {
		golden(t, filepath.Join("testdata", "cases", g+".golden"), drawn)
	}
}

func golden(t *testing.T, path string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./bots/discord -run TestSharedCasesGolden -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs:\n%s", path, buf.Bytes())
	}
}

// TestSameCaseSameWords checks Slack and Discord say the same about every
// case of the shared table: its status, who may answer, its deadline and
// how it ended, people and moments aside (each platform mentions people
// and shows times its own way). Only the number of answerers named may
// differ, where a platform's limits leave no room for all.
func TestSameCaseSameWords(t *testing.T) {
	t.Parallel()
	for _, c := range neutral.Cases() {
		nc := neutral.New(c.Input)
		name := c.Group + "/" + c.Name
		blocks, _ := blockkit.Draw(nc)
		slackLines, discordLines := slackWords(t, nc, blocks), discordWords(nc, drawEmbed(nc))
		want := map[string]string{}
		for _, l := range caseLines(nc) {
			if !l.IsZero() {
				want[l.Label] = l.Text()
			}
		}
		for _, lines := range []map[string]string{slackLines, discordLines} {
			if who, ok := lines[neutral.LabelMayAnswer]; ok && namesSome(nc.MayAnswer, who) {
				lines[neutral.LabelMayAnswer] = nc.MayAnswer.All().Text()
			}
		}
		if nc.ShowsMayAnswer() && nc.Pending() {
			want[neutral.LabelMayAnswer] = nc.MayAnswer.All().Text()
		}
		for label, w := range want {
			if slackLines[label] != w || discordLines[label] != w {
				t.Errorf("%s: %s\n  card:    %q\n  Slack:   %q\n  Discord: %q", name, label, w, slackLines[label], discordLines[label])
			}
		}
		for label := range discordLines {
			if _, ok := want[label]; !ok && label != neutral.LabelBlocked {
				t.Errorf("%s: Discord shows %s, which the card does not", name, label)
			}
		}
	}
}

// caseLines are the card's labelled lines both platforms draw, but for
// who may answer (which each cuts to its room).
func caseLines(nc neutral.Card) []neutral.Line {
	return []neutral.Line{nc.Status(), nc.DeadlineLine(), nc.Outcome, nc.ApprovalsLine(), nc.MayApproveLine(), nc.ExpiresLine()}
}

// namesSome reports whether got is the line naming some of m's answerers.
func namesSome(m neutral.MayAnswer, got string) bool {
	for listed := range len(m.Answerers) + 1 {
		if m.Line(listed).Text() == got {
			return true
		}
	}
	return false
}

// people are the ways each platform shows the people of a card, each
// mapped to the card's plain words for them.
func people(nc neutral.Card) (slackWho, discordWho *strings.Replacer) {
	var ps []neutral.Person
	ps = append(ps, nc.MayAnswer.Answerers...)
	if nc.MayAnswer.Owner != nil {
		ps = append(ps, *nc.MayAnswer.Owner)
	}
	for _, l := range caseLines(nc) {
		for _, sp := range l.Spans {
			if sp.Kind == neutral.SpanWho {
				ps = append(ps, sp.Person)
			}
		}
	}
	var s, d []string
	for _, p := range ps {
		plain := neutral.PlainWho(p)
		if p.Name == "" {
			s = append(s, blockkit.Mention(p.Identity), plain)
		}
		s = append(s, blockkit.Who(p.Identity, p.Name), plain)
		d = append(d, who(p.Identity, p.Name), plain)
	}
	return strings.NewReplacer(s...), strings.NewReplacer(d...)
}

// approvalsCount begins the approvals line: "1 of 2 approvals".
var approvalsCount = regexp.MustCompile(`^\d+ of \d+ approvals`)

var slackUnescape = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// slackWords are the labelled lines of a Slack card, in the card's words.
func slackWords(t *testing.T, nc neutral.Card, blocks []slack.Block) map[string]string {
	t.Helper()
	slackWho, _ := people(nc)
	times := []string{}
	for _, at := range []time.Time{nc.Deadline, nc.Ended, nc.Expires} {
		if !at.IsZero() {
			times = append(times, blockkit.SlackDate(at), neutral.Line{Spans: []neutral.Span{neutral.When(at)}}.Text())
		}
	}
	words := func(s string) string {
		return slackUnescape.Replace(slackWho.Replace(strings.NewReplacer(times...).Replace(s)))
	}
	out := map[string]string{}
	for _, b := range blocks {
		cb, ok := b.(*slack.ContextBlock)
		if !ok || len(cb.ContextElements.Elements) == 0 {
			continue
		}
		text := cb.ContextElements.Elements[0].(*slack.TextBlockObject).Text
		if cb.BlockID == "outcome" {
			if !nc.Ended.IsZero() {
				text = strings.TrimSuffix(text, " · "+blockkit.SlackDate(nc.Ended))
			}
			out[neutral.LabelOutcome] = words(text)
			continue
		}
		if cb.BlockID == "approvals" {
			out[neutral.LabelApprovals] = words(text)
			continue
		}
		for _, part := range strings.Split(text, " · ") {
			if approvalsCount.MatchString(part) {
				out[neutral.LabelApprovals] = words(part) // a line that says what it is, unlabelled
				continue
			}
			if label, value, ok := strings.Cut(part, ": "); ok && label != neutral.LabelAsks {
				out[label] = words(value)
			}
		}
	}
	return out
}

// discordWords are the labelled fields of a Discord card, in the card's
// words.
func discordWords(nc neutral.Card, e *discordgo.MessageEmbed) map[string]string {
	_, discordWho := people(nc)
	var times []string
	for _, at := range []time.Time{nc.Deadline, nc.Ended, nc.Expires} {
		if !at.IsZero() {
			times = append(times, stamp(at), neutral.Line{Spans: []neutral.Span{neutral.When(at)}}.Text())
		}
	}
	out := map[string]string{}
	for _, f := range e.Fields {
		switch f.Name {
		case neutral.LabelStatus, neutral.LabelMayAnswer, neutral.LabelDeadline, neutral.LabelBlocked, neutral.LabelOutcome,
			neutral.LabelApprovals, neutral.LabelMayApprove, neutral.LabelExpires:
			v := f.Value
			if f.Name == neutral.LabelOutcome && !nc.Ended.IsZero() {
				v = strings.TrimSuffix(v, " · "+stamp(nc.Ended))
			}
			out[f.Name] = discordWho.Replace(strings.NewReplacer(times...).Replace(v))
		}
	}
	return out
}

// TestSameCaseSameControls checks both platforms draw the card's enabled
// controls under the card's labels: Approve, Deny, Decline and Answer…
// wherever the card enables them (on Discord a typed question's Answer…
// is its Open in console, Discord having no form for typed fields), and
// nothing on a settled card but Slack's Open in console.
func TestSameCaseSameControls(t *testing.T) {
	t.Parallel()
	for _, c := range neutral.Cases() {
		nc := neutral.New(c.Input)
		name := c.Group + "/" + c.Name
		blocks, _ := blockkit.Draw(nc)
		rawSlack, _ := json.Marshal(blocks)
		rawDiscord, _ := json.Marshal(drawComponents(nc))
		enabled := map[string]bool{}
		for _, k := range nc.Enabled() {
			enabled[k.Label] = true
		}
		for _, label := range []string{neutral.ApproveLabel, neutral.DenyLabel, neutral.DeclineLabel, neutral.AnswerLabel} {
			want := enabled[label]
			if got := strings.Contains(string(rawSlack), `"text":"`+label+`"`); got != want {
				t.Errorf("%s: Slack draws %s: %v, the card enables it: %v", name, label, got, want)
			}
			if label == neutral.AnswerLabel && nc.Kind == neutral.KindFields {
				want = false
			}
			if got := strings.Contains(string(rawDiscord), `"label":"`+label+`"`); got != want {
				t.Errorf("%s: Discord draws %s: %v, want %v", name, label, got, want)
			}
		}
		if !nc.Pending() && strings.Contains(string(rawDiscord), "custom_id") {
			t.Errorf("%s: a settled Discord card keeps components: %s", name, rawDiscord)
		}
	}
}

// TestNoticeCasesGolden draws every notice of the shared table
// (card.NoticeCases) into testdata/cases/notice.golden, each checked
// against Discord's limits: the five parts in order, no components, no
// secret. blockkit draws the same table for Slack.
func TestNoticeCasesGolden(t *testing.T) {
	t.Parallel()
	type drawnNotice struct {
		Case  string                  `json:"case"`
		Embed *discordgo.MessageEmbed `json:"embed"`
	}
	var drawn []drawnNotice
	for _, c := range neutral.NoticeCases() {
		e := drawNoticeEmbed(neutral.NewNotice(c.Notice))
		raw, err := json.Marshal(map[string]any{"embeds": []any{e}, "components": []any{}})
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		for _, p := range messageProblems(body) {
			t.Errorf("%s: Discord would refuse it: %s", c.Name, p)
		}
		for _, secret := range []string{neutral.CaseToken, "hunter2", "abc.DEF"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("%s: the card shows %q", c.Name, secret)
			}
		}
		if len(e.Fields) != len(neutral.NoticeLabels) {
			t.Fatalf("%s: %d fields", c.Name, len(e.Fields))
		}
		for i, f := range e.Fields {
			if f.Name != neutral.NoticeLabels[i] || f.Value == "" {
				t.Errorf("%s: field %d is %q %q", c.Name, i, f.Name, f.Value)
			}
		}
		drawn = append(drawn, drawnNotice{c.Name, e})
	}
	golden(t, filepath.Join("testdata", "cases", "notice.golden"), drawn)
}

// TestNoticeSameWordsOnBothPlatforms checks Slack and Discord show each
// part of every notice in the card's words.
func TestNoticeSameWordsOnBothPlatforms(t *testing.T) {
	t.Parallel()
	for _, c := range neutral.NoticeCases() {
		nc := neutral.NewNotice(c.Notice)
		blocks, _ := blockkit.DrawNotice(nc)
		e := drawNoticeEmbed(nc)
		for i, label := range neutral.NoticeLabels {
			want := nc.Part(label)
			sec, ok := blocks[i+1].(*slack.SectionBlock)
			if !ok {
				t.Fatalf("%s: block %d is not a section", c.Name, i+1)
			}
			slackText := slackUnescape.Replace(strings.TrimPrefix(sec.Text.Text, "*"+label+"*\n"))
			if !sameOrCut(slackText, want) || !sameOrCut(e.Fields[i].Value, want) {
				t.Errorf("%s: %s\n  card:    %q\n  Slack:   %q\n  Discord: %q", c.Name, label, want, slackText, e.Fields[i].Value)
			}
		}
	}
}

// sameOrCut says got is want, or want cut short with an ellipsis.
func sameOrCut(got, want string) bool {
	if got == want {
		return true
	}
	got = strings.TrimSuffix(strings.TrimSuffix(got, " _(cut short)_"), "…")
	return got != "" && strings.HasPrefix(want, got)
}
