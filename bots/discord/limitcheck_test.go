package discord

// Discord's documented limits, checked on everything the bot sends: the
// fake Discord stores what it is given, where Discord answers 400 (50035
// Invalid Form Body). Lengths are Unicode code points, as Discord counts
// them; a required text must have more than whitespace.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// discordText checks one text property against Discord's bounds.
func discordText(problems *[]string, where string, v any, lo, hi int) {
	s, ok := v.(string)
	if !ok {
		if v == nil && lo == 0 {
			return
		}
		*problems = append(*problems, fmt.Sprintf("%s: %v is not a string", where, v))
		return
	}
	if n, all := utf8.RuneCountInString(strings.TrimSpace(s)), utf8.RuneCountInString(s); n < lo || all > hi {
		*problems = append(*problems, fmt.Sprintf("%s: %d characters (%d without surrounding space), Discord takes %d to %d", where, all, n, lo, hi))
	}
}

func number(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok
}

// messageProblems lists what Discord would refuse in a message body
// (create, edit, follow-up or interaction response data).
func messageProblems(m map[string]any) []string {
	var p []string
	if c, ok := m["content"]; ok {
		discordText(&p, "content", c, 0, 2000)
	}
	embeds, _ := m["embeds"].([]any)
	embedProblems(&p, embeds)
	rows, _ := m["components"].([]any)
	if len(rows) > 5 {
		p = append(p, fmt.Sprintf("%d action rows, at most 5", len(rows)))
	}
	ids := map[string]bool{}
	for i, rr := range rows {
		row, _ := rr.(map[string]any)
		at := fmt.Sprintf("components[%d]", i)
		if t, _ := number(row["type"]); t != 1 {
			p = append(p, fmt.Sprintf("%s: type %v, want an action row (1)", at, row["type"]))
			continue
		}
		cs, _ := row["components"].([]any)
		if len(cs) < 1 || len(cs) > 5 {
			p = append(p, fmt.Sprintf("%s: %d components, Discord takes 1 to 5", at, len(cs)))
		}
		for j, rc := range cs {
			c, _ := rc.(map[string]any)
			cat := fmt.Sprintf("%s.components[%d]", at, j)
			if id, ok := c["custom_id"].(string); ok {
				if ids[id] {
					p = append(p, fmt.Sprintf("%s: custom_id %q used twice in the message", cat, id))
				}
				ids[id] = true
			}
			switch typ, _ := number(c["type"]); typ {
			case 2:
				buttonProblems(&p, cat, c)
			case 3:
				if len(cs) != 1 {
					p = append(p, cat+": a select must be alone in its row")
				}
				selectProblems(&p, cat, c)
			default:
				p = append(p, fmt.Sprintf("%s: component type %v in a message", cat, c["type"]))
			}
		}
	}
	return p
}

// embedProblems adds to p what Discord would refuse in a message's
// embeds: each text's length, and all their text together.
func embedProblems(p *[]string, embeds []any) {
	if len(embeds) > 10 {
		*p = append(*p, fmt.Sprintf("%d embeds, at most 10", len(embeds)))
	}
	total := 0
	count := func(where string, v any, lo, hi int) {
		discordText(p, where, v, lo, hi)
		if s, ok := v.(string); ok {
			total += utf8.RuneCountInString(strings.TrimSpace(s))
		}
	}
	for i, raw := range embeds {
		e, _ := raw.(map[string]any)
		at := fmt.Sprintf("embeds[%d]", i)
		if v, ok := e["title"]; ok {
			count(at+".title", v, 0, 256)
		}
		if v, ok := e["description"]; ok {
			count(at+".description", v, 0, 4096)
		}
		fields, _ := e["fields"].([]any)
		if len(fields) > 25 {
			*p = append(*p, fmt.Sprintf("%s: %d fields, at most 25", at, len(fields)))
		}
		for j, rf := range fields {
			f, _ := rf.(map[string]any)
			count(fmt.Sprintf("%s.fields[%d].name", at, j), f["name"], 1, 256)
			count(fmt.Sprintf("%s.fields[%d].value", at, j), f["value"], 1, 1024)
		}
		if ft, ok := e["footer"].(map[string]any); ok {
			count(at+".footer.text", ft["text"], 1, 2048)
		}
		if au, ok := e["author"].(map[string]any); ok {
			count(at+".author.name", au["name"], 1, 256)
		}
	}
	if total > 6000 {
		*p = append(*p, fmt.Sprintf("embeds: %d characters in all, at most 6000", total))
	}
}

// buttonProblems adds to p what Discord would refuse in button c, at cat.
func buttonProblems(p *[]string, cat string, c map[string]any) {
	style, _ := number(c["style"])
	label, _ := c["label"].(string)
	if label == "" && c["emoji"] == nil {
		*p = append(*p, cat+": a button needs a label or an emoji")
	}
	discordText(p, cat+".label", c["label"], 0, 80)
	if style == 5 {
		discordText(p, cat+".url", c["url"], 1, 512)
		if c["custom_id"] != nil {
			*p = append(*p, cat+": a link button takes no custom_id")
		}
		return
	}
	discordText(p, cat+".custom_id", c["custom_id"], 1, 100)
	if c["url"] != nil {
		*p = append(*p, cat+": only link buttons take a url")
	}
}

// selectProblems adds to p what Discord would refuse in string select c,
// at cat.
func selectProblems(p *[]string, cat string, c map[string]any) {
	discordText(p, cat+".custom_id", c["custom_id"], 1, 100)
	discordText(p, cat+".placeholder", c["placeholder"], 0, 150)
	opts, _ := c["options"].([]any)
	if len(opts) < 1 || len(opts) > 25 {
		*p = append(*p, fmt.Sprintf("%s: %d options, Discord takes 1 to 25", cat, len(opts)))
	}
	values := map[string]bool{}
	for k, ro := range opts {
		o, _ := ro.(map[string]any)
		oat := fmt.Sprintf("%s.options[%d]", cat, k)
		discordText(p, oat+".label", o["label"], 1, 100)
		discordText(p, oat+".value", o["value"], 1, 100)
		discordText(p, oat+".description", o["description"], 0, 100)
		if v, _ := o["value"].(string); values[v] {
			*p = append(*p, fmt.Sprintf("%s: value %q used twice", oat, v))
		} else {
			values[v] = true
		}
	}
	lo, hasLo := number(c["min_values"])
	hi, hasHi := number(c["max_values"])
	if hasLo && (lo < 0 || lo > 25) || hasHi && (hi < 1 || hi > 25) || hasLo && hasHi && lo > hi {
		*p = append(*p, fmt.Sprintf("%s: min_values %v, max_values %v", cat, c["min_values"], c["max_values"]))
	}
}

// modalProblems lists what Discord would refuse in a modal's data.
func modalProblems(d map[string]any) []string {
	var p []string
	discordText(&p, "title", d["title"], 1, 45)
	discordText(&p, "custom_id", d["custom_id"], 1, 100)
	rows, _ := d["components"].([]any)
	if len(rows) < 1 || len(rows) > 5 {
		p = append(p, fmt.Sprintf("%d rows, Discord takes 1 to 5", len(rows)))
	}
	for i, rr := range rows {
		row, _ := rr.(map[string]any)
		cs, _ := row["components"].([]any)
		if len(cs) != 1 {
			p = append(p, fmt.Sprintf("row %d: %d components, a modal row holds one text input", i, len(cs)))
		}
		for _, rc := range cs {
			c, _ := rc.(map[string]any)
			at := fmt.Sprintf("components[%d]", i)
			if t, _ := number(c["type"]); t != 4 {
				p = append(p, fmt.Sprintf("%s: type %v, want a text input (4)", at, c["type"]))
			}
			discordText(&p, at+".custom_id", c["custom_id"], 1, 100)
			discordText(&p, at+".label", c["label"], 1, 45)
			discordText(&p, at+".placeholder", c["placeholder"], 0, 100)
			discordText(&p, at+".value", c["value"], 0, 4000)
			if s, _ := number(c["style"]); s != 1 && s != 2 {
				p = append(p, fmt.Sprintf("%s: style %v", at, c["style"]))
			}
			lo, hasLo := number(c["min_length"])
			hi, hasHi := number(c["max_length"])
			if hasLo && (lo < 0 || lo > 4000) || hasHi && (hi < 1 || hi > 4000) || hasLo && hasHi && lo > hi {
				p = append(p, fmt.Sprintf("%s: min_length %v, max_length %v", at, c["min_length"], c["max_length"]))
			}
			if v, ok := c["value"].(string); ok && v != "" {
				if n := utf8.RuneCountInString(v); hasHi && n > hi || hasLo && n < lo {
					p = append(p, fmt.Sprintf("%s: value of %d characters outside min_length/max_length", at, n))
				}
			}
		}
	}
	return p
}

// responseProblems lists what Discord would refuse in an interaction
// response.
func responseProblems(resp map[string]any) []string {
	typ, _ := number(resp["type"])
	d, _ := resp["data"].(map[string]any)
	switch typ {
	case 1, 5, 6:
		return nil
	case 4, 7:
		if d == nil {
			return []string{"a message response without data"}
		}
		return messageProblems(d)
	case 9:
		if d == nil {
			return []string{"a modal response without data"}
		}
		return modalProblems(d)
	}
	return []string{fmt.Sprintf("response type %v", resp["type"])}
}

// checkResponse fails the test when Discord would refuse resp.
func checkResponse(t *testing.T, what string, resp map[string]any) {
	t.Helper()
	for _, p := range responseProblems(resp) {
		t.Errorf("%s: Discord would refuse the response: %s", what, p)
	}
}

// checkSent fails the test when Discord would refuse a request the fake
// received: messages, edits, follow-ups, thread starts.
func (f *fakeDiscord) checkSent(t *testing.T) {
	t.Helper()
	for _, r := range f.requests("", "") {
		var problems []string
		switch {
		case strings.HasSuffix(r.Path, "/threads"):
			var body map[string]any
			_ = json.Unmarshal(r.Body, &body)
			discordText(&problems, "name", body["name"], 1, 100)
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/messages"),
			r.Method == "PATCH" && strings.Contains(r.Path, "/messages/"),
			r.Method == "POST" && strings.HasPrefix(r.Path, "/webhooks/"):
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				problems = append(problems, "body is not a JSON object")
			}
			problems = messageProblems(body)
		}
		for _, p := range problems {
			t.Errorf("%s %s: Discord would refuse it: %s", r.Method, r.Path, p)
		}
	}
}

func TestLimitCheckerCatchesWhatDiscordRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 81)
	for _, tc := range []struct {
		name string
		msg  map[string]any
	}{
		{"long button label", map[string]any{"components": []any{map[string]any{"type": 1, "components": []any{
			map[string]any{"type": 2, "style": 1, "label": long, "custom_id": "x"}}}}}},
		{"26 fields", map[string]any{"embeds": []any{map[string]any{"fields": func() []any {
			var fs []any
			for range 26 {
				fs = append(fs, map[string]any{"name": "n", "value": "v"})
			}
			return fs
		}()}}}},
		{"blank field value", map[string]any{"embeds": []any{map[string]any{"fields": []any{map[string]any{"name": "n", "value": "  "}}}}}},
		{"content over 2000", map[string]any{"content": strings.Repeat("x", 2001)}},
	} {
		if len(messageProblems(tc.msg)) == 0 {
			t.Errorf("%s: not caught", tc.name)
		}
	}
	if len(modalProblems(map[string]any{"title": strings.Repeat("t", 46), "custom_id": "x", "components": []any{}})) < 2 {
		t.Error("a long modal title and no rows: not caught")
	}
}
