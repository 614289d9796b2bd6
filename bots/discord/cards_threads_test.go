package discord

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestJobThreadPerChannel checks a job's question routed to another
// channel is shown there, in a thread of its own, and the job's later
// questions for the first channel still go to the first thread.
func TestJobThreadPerChannel(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	const channelB = "1000000000000000002"
	q1 := colorQuestion()
	h.publishEvent(asked(q1))
	first := h.posted(channelA, 1)

	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "Which size?"
	q2.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: channelB}}
	h.publishEvent(asked(q2))
	second := h.posted(channelB, 1)
	if embedOf(t, second)["description"] != "Which size?" {
		t.Fatalf("card in %s: %v", channelB, second)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/"+channelB+"/messages/"+second["id"].(string)+"/threads")); n != 1 {
			return fmt.Errorf("%d thread starts from the card in %s, want 1", n, channelB)
		}
		return nil
	})

	q3 := colorQuestion()
	q3.QuestionID, q3.Question = "q-3", "And the font?"
	h.publishEvent(asked(q3))
	if third := h.posted(first["id"].(string), 1); embedOf(t, third)["description"] != "And the font?" {
		t.Fatalf("card in the first thread: %v", third)
	}
	if n := len(h.fake.requests("POST", "/channels/"+channelB+"/messages")); n != 2 { // the card and its thread start
		t.Fatalf("%d requests to %s, want 2", n, channelB)
	}
}

// TestDeletedJobThread checks a question of a job whose thread was
// deleted is shown in the channel, which starts the job a new thread,
// instead of failing the job.
func TestDeletedJobThread(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q1 := colorQuestion()
	h.publishEvent(asked(q1))
	gone := h.posted(channelA, 1)["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/"+channelA+"/messages/"+gone+"/threads")); n != 1 {
			return fmt.Errorf("%d thread starts, want 1", n)
		}
		return nil
	})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + gone + "/messages", Status: 404, Code: 10003, Times: -1})

	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "Which size?"
	h.publishEvent(asked(q2))
	second := h.posted(channelA, 2)
	if embedOf(t, second)["description"] != "Which size?" {
		t.Fatalf("second card in the channel: %v", second)
	}
	thread := second["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, d := range h.deliveriesNow() {
			if d.QuestionID == "q-2" && d.OK && d.Message.Channel == channelA && d.Message.Thread == thread {
				return nil
			}
		}
		return fmt.Errorf("no delivery report for q-2 in the new thread %s: %+v", thread, h.deliveriesNow())
	})

	q3 := colorQuestion()
	q3.QuestionID, q3.Question = "q-3", "And the font?"
	h.publishEvent(asked(q3))
	if third := h.posted(thread, 1); embedOf(t, third)["description"] != "And the font?" {
		t.Fatalf("third card in the new thread: %v", third)
	}
}

// TestEmbedsStayWithinDiscordsTotal checks the pending and the settled
// card of a question that fills every field stay within the 6,000
// characters Discord allows an embed in all (an edit over it is refused,
// and the card would keep its buttons).
func TestEmbedsStayWithinDiscordsTotal(t *testing.T) {
	t.Parallel()
	q := colorQuestion()
	q.Agent = strings.Repeat("a", 300)
	q.Question = strings.Repeat("q", 5000)
	q.Context = strings.Repeat("c", 2000)
	q.WhyItMatters = strings.Repeat("w", 2000)
	q.BlockedTools = []string{strings.Repeat("t", 2000)}
	q.Choices = nil
	for i := range 20 {
		q.Fields = append(q.Fields, bridge.Field{Name: fmt.Sprintf("f%d", i), Kind: "text", Label: strings.Repeat("l", 60)})
	}
	for i := range 40 {
		q.Answerers = append(q.Answerers, fmt.Sprintf("discord:%019d", i))
	}
	q.Owner = "discord:" + strings.Repeat("9", 19)
	q.JobID, q.QuestionID = strings.Repeat("j", 64), strings.Repeat("k", 64)
	c := &card{Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 3, Question: &q,
		AskedAt: time.Now(), Deadline: time.Now().Add(time.Hour)}
	pending := cardEmbed(c)
	settled := settledEmbed(pending, &outcome{Type: bridge.EventDeclined, By: "discord:" + kevin.ID, ByName: "kevin",
		Reason: strings.Repeat("r", 1500), At: time.Now()})
	for name, e := range map[string]*discordgo.MessageEmbed{"pending": pending, "settled": settled} {
		if n := embedSize(e); n > maxEmbedTotal {
			t.Errorf("%s card: %d characters, Discord allows %d", name, n, maxEmbedTotal)
		}
	}
	if last := settled.Fields[len(settled.Fields)-1]; last.Name != "Outcome" || !strings.Contains(last.Value, "<@"+kevin.ID+">") {
		t.Errorf("settled card's last field %q: %q", last.Name, last.Value)
	}
	if !strings.HasPrefix(settled.Description, "qqqq") || utf8.RuneCountInString(settled.Description) < 200 {
		t.Errorf("settled description cut to %d characters", utf8.RuneCountInString(settled.Description))
	}
	if embedSize(pending) > maxEmbedTotal || pending.Fields[len(pending.Fields)-1].Name == "Outcome" {
		t.Error("settling changed the pending card's embed")
	}
}

// TestSettlingACardInAnArchivedThread checks a card in the job's thread,
// archived by Discord after a week without a message, is still settled:
// the bot reopens the thread and edits the card.
func TestSettlingACardInAnArchivedThread(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	thread := h.posted(channelA, 1)["id"].(string)
	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "And the font?"
	h.publishEvent(asked(q2))
	second := h.posted(thread, 1)
	h.fake.archive(thread)
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-1", QuestionID: "q-2", TaskVersion: 3,
		By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue", Text: "The answer: blue"})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := h.fake.message(second["id"].(string))
		if n := len(components(m)); n != 0 {
			return fmt.Errorf("the card in the archived thread still has %d components", n)
		}
		return nil
	})
	reopen := h.fake.requests("PATCH", "/channels/"+thread)
	var bodies []string
	for _, r := range reopen {
		if !strings.Contains(r.Path, "/messages/") {
			bodies = append(bodies, string(r.Body))
		}
	}
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"archived":false`) {
		t.Fatalf("thread edits %v, want one reopening it", bodies)
	}
}

// TestWhoMayAnswerKeepsWholeNames checks the card names whole mentions
// only: a mention cut at the field's limit shows as raw text.
func TestWhoMayAnswerKeepsWholeNames(t *testing.T) {
	t.Parallel()
	answerers := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("discord:%d", 3000000000000000000+i))
		}
		return out
	}
	cases := []struct {
		name      string
		answerers []string
		owner     string
		want      string // a suffix
		names     int
	}{
		{"none", nil, "", "operators", 0},
		{"a few", answerers(3), "slack:U0OWNER", "<@3000000000000000002>, slack:U0OWNER (owner), and operators", 3},
		{"forty", answerers(40), "discord:1234", "more, <@1234> (owner), and operators", -1},
		{"forty, no owner", answerers(40), "", "more, and operators", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &bridge.Question{Question: "Which colour?", Choices: []string{"red", "blue"}, Answerers: tc.answerers, Owner: tc.owner}
			got := fieldValue(embedMap(t, cardEmbed(&card{Question: q})), "Who may answer")
			if !strings.HasSuffix(got, tc.want) {
				t.Fatalf("who may answer = %q, want it to end %q", got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > 1024 {
				t.Fatalf("who may answer has %d characters, over Discord's 1024", n)
			}
			if strings.Count(got, "<@") != strings.Count(got, ">") {
				t.Fatalf("a mention is cut: %q", got)
			}
			if tc.names < 0 {
				listed := strings.Count(got, "<@30000")
				if !strings.Contains(got, fmt.Sprintf(", %d more, ", 40-listed)) || listed < 10 {
					t.Fatalf("%d listed, and %q", listed, got)
				}
			}
		})
	}
}

func embedMap(t *testing.T, e *discordgo.MessageEmbed) map[string]any {
	t.Helper()
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPaddedChoicesReadApartOnButtons checks choices whose words fit a
// button but which carry spaces around them are labelled by their words:
// cut with the spaces, two such choices read the same.
func TestPaddedChoicesReadApartOnButtons(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	stem := strings.Repeat("x", 78)
	q.Choices = []string{"   " + stem + "A", "   " + stem + "B"}
	if err := bridge.ValidateQuestion(&q); err != nil {
		t.Fatal(err)
	}
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	var labels []string
	for _, c := range components(msg) {
		if c["type"] == float64(2) && c["label"] != "Decline" && c["label"] != "Open in console" &&
			c["label"] != "Ask someone else" && c["label"] != "Remind me later" {
			labels = append(labels, c["label"].(string))
		}
	}
	if want := []string{stem + "A", stem + "B"}; !slices.Equal(labels, want) {
		t.Fatalf("button labels %q, want %q", labels, want)
	}
}
