package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func ptr(f float64) *float64 { return &f }

// validQuestion is docs/contract.md's example question, which must pass.
func validQuestion() *Question {
	return &Question{
		Tenant: "acme", JobID: "job-0a9dc2d1", QuestionID: "q-75eaf712",
		TaskVersion: 3, Kind: KindQuestion,
		Question: "When should I send the report, and how many copies?",
		Fields: []Field{
			{Name: "on", Kind: FieldDate, Label: "Send on", Required: true},
			{Name: "copies", Kind: FieldNumber, Integer: true, Min: ptr(1), Max: ptr(9)},
		},
		MissingField: "send_date", WhyItMatters: "The date decides which records are included.",
		Priority: "blocking", BlockedTools: []string{"send_report"},
		Timeout: "4h", OnTimeout: OnTimeoutContinue,
		Route:     &Route{Slack: &SlackRoute{Channel: "C0123"}, Discord: &DiscordRoute{ChannelID: "1234"}},
		Answerers: []string{"slack:U0ANA"}, Owner: "slack:U0OWNER", Agent: "acme-support",
	}
}

func validApproval() *Question {
	return &Question{
		Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Kind: KindApproval,
		Question: "May I refund order 1234?",
		Proposal: &Proposal{ID: "refund-1234", Action: "refund", Summary: []string{"Refund 40 EUR to order 1234"}},
	}
}

func fields(n int) []Field {
	out := make([]Field, n)
	for i := range out {
		out[i] = Field{Name: fmt.Sprintf("f%d", i), Kind: FieldText}
	}
	return out
}

// fieldsOfJSONSize builds one text field whose JSON is exactly n bytes.
func fieldsOfJSONSize(n int) []Field {
	f := []Field{{Name: "note", Kind: FieldText}}
	raw, _ := json.Marshal(f)
	f[0].Description = strings.Repeat("d", n-len(raw)-len(`,"description":""`))
	// A single field's description is limited to 1000 characters, so spread
	// the rest over labels of further fields instead when needed.
	if len(f[0].Description) > 1000 {
		f = nil
		for i := 0; ; i++ {
			g := Field{Name: fmt.Sprintf("f%02d", i), Kind: FieldText, Description: strings.Repeat("d", 1000)}
			f = append(f, g)
			raw, _ := json.Marshal(f)
			if len(raw) >= n {
				over := len(raw) - n
				f[i].Description = f[i].Description[:1000-over]
				break
			}
		}
	}
	if raw, _ := json.Marshal(f); len(raw) != n {
		panic(fmt.Sprintf("fieldsOfJSONSize(%d) built %d bytes", n, len(raw)))
	}
	return f
}

func TestValidateQuestion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		base  func() *Question // validQuestion when nil
		edit  func(q *Question)
		wants []string // each must be one of the problems, exactly; none means valid
	}{
		{name: "design example is valid", edit: func(q *Question) {}},
		{name: "minimal free-text question", edit: func(q *Question) {
			*q = Question{Tenant: "t", JobID: "j", QuestionID: "q", Question: "Why?"}
		}},
		{name: "valid approval", base: validApproval, edit: func(q *Question) {}},
		{name: "choices question", edit: func(q *Question) { q.Fields = nil; q.Choices = []string{"red", "blue"} }},

		// ids
		{name: "tenant missing", edit: func(q *Question) { q.Tenant = "" }, wants: []string{"tenant: is required"}},
		{name: "job id with a dot", edit: func(q *Question) { q.JobID = "job.1" },
			wants: []string{`job_id: "job.1" must be 1 to 64 letters, digits, '-' or '_'`}},
		{name: "question id with a space", edit: func(q *Question) { q.QuestionID = "q 1" },
			wants: []string{`question_id: "q 1" must be 1 to 64 letters, digits, '-' or '_'`}},
		{name: "tenant with a wildcard", edit: func(q *Question) { q.Tenant = "*" },
			wants: []string{`tenant: "*" must be 1 to 64 letters, digits, '-' or '_'`}},
		{name: "tenant of 65 characters", edit: func(q *Question) { q.Tenant = strings.Repeat("a", 65) },
			wants: []string{`tenant: "` + strings.Repeat("a", 65) + `" must be 1 to 64 letters, digits, '-' or '_'`}},
		{name: "tenant of 64 characters", edit: func(q *Question) { q.Tenant = strings.Repeat("a", 64) }},
		{name: "negative task version", edit: func(q *Question) { q.TaskVersion = -1 },
			wants: []string{"task_version: must not be negative"}},

		// tools
		{name: "tool names as agents name them", edit: func(q *Question) {
			q.BlockedTools = []string{"send_report", "mcp__github__create_issue", "fs.write_file", "slack/post", "billing:refund", "Bash"}
			q.AllowedTools = []string{"lookup_order", strings.Repeat("t", MaxToolName)}
		}},
		{name: "empty blocked tool", edit: func(q *Question) { q.BlockedTools = []string{"send_report", ""} },
			wants: []string{"blocked_tools[1]: is empty: name a tool, such as send_report"}},
		{name: "allowed tool with a space", edit: func(q *Question) { q.AllowedTools = []string{"send report"} },
			wants: []string{`allowed_tools[0]: "send report" is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit`}},
		{name: "tool starting with a dash", edit: func(q *Question) { q.BlockedTools = []string{"-rf"} },
			wants: []string{`blocked_tools[0]: "-rf" is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit`}},
		{name: "tool name too long", edit: func(q *Question) { q.AllowedTools = []string{strings.Repeat("t", MaxToolName+1)} },
			wants: []string{`allowed_tools[0]: "` + strings.Repeat("t", 39) + `…" is 129 characters; a tool's name has at most 128`}},
		{name: "too many tools", edit: func(q *Question) {
			for i := range MaxTools + 1 {
				q.AllowedTools = append(q.AllowedTools, fmt.Sprintf("t%d", i))
			}
		}, wants: []string{"allowed_tools: at most 100 tools, got 101"}},

		// kind and text
		{name: "unknown kind", edit: func(q *Question) { q.Kind = "poll" },
			wants: []string{`kind: must be question or approval, not "poll"`}},
		{name: "empty kind is a question", edit: func(q *Question) { q.Kind = "" }},
		{name: "blank question text", edit: func(q *Question) { q.Question = "  \n" },
			wants: []string{"question: is required: write it for a person who has not seen the conversation"}},
		{name: "question text too long", edit: func(q *Question) { q.Question = strings.Repeat("é", MaxQuestionText+1) },
			wants: []string{"question: must be at most 10000 characters"}},
		{name: "question text at the limit", edit: func(q *Question) { q.Question = strings.Repeat("é", MaxQuestionText) }},

		// choices xor fields
		{name: "choices and fields", edit: func(q *Question) { q.Choices = []string{"a"} },
			wants: []string{"choices and fields: give one or the other, not both"}},
		{name: "empty choice", edit: func(q *Question) { q.Fields = nil; q.Choices = []string{"a", " "} },
			wants: []string{"choices[1]: must not be empty"}},
		{name: "duplicate choice", edit: func(q *Question) { q.Fields = nil; q.Choices = []string{"a", "b", "a"} },
			wants: []string{`choices[2]: "a" is listed twice`}},
		{name: "choices differing only in case are one choice", edit: func(q *Question) { q.Fields = nil; q.Choices = []string{"Yes", " yes"} },
			wants: []string{`choices[1]: " yes" is listed twice`}},
		{name: "choice too long", edit: func(q *Question) { q.Fields = nil; q.Choices = []string{strings.Repeat("x", 201)} },
			wants: []string{"choices[0]: must be at most 200 characters"}},
		{name: "too many choices", edit: func(q *Question) {
			q.Fields = nil
			for i := range MaxChoices + 1 {
				q.Choices = append(q.Choices, fmt.Sprint(i))
			}
		}, wants: []string{"choices: at most 100, got 101"}},

		// fields: count, names, size
		{name: "20 fields", edit: func(q *Question) { q.Fields = fields(20) }},
		{name: "21 fields", edit: func(q *Question) { q.Fields = fields(21) }, wants: []string{"fields: at most 20, got 21"}},
		{name: "upper-case field name", edit: func(q *Question) { q.Fields[1].Name = "Copies" },
			wants: []string{`fields[1].name: "Copies" must be 1 to 64 lower-case letters, digits and _`}},
		{name: "field name with a dash", edit: func(q *Question) { q.Fields[1].Name = "copy-count" },
			wants: []string{`fields[1].name: "copy-count" must be 1 to 64 lower-case letters, digits and _`}},
		{name: "empty field name", edit: func(q *Question) { q.Fields[1].Name = "" },
			wants: []string{`fields[1].name: "" must be 1 to 64 lower-case letters, digits and _`}},
		{name: "field name of digits and underscore", edit: func(q *Question) { q.Fields[1].Name = "copies_2" }},
		{name: "duplicate field name", edit: func(q *Question) { q.Fields[1].Name = "on" },
			wants: []string{"on: the name is used by two fields"}},
		{name: "fields over 16 KiB of JSON", edit: func(q *Question) {
			q.Fields = fields(20)
			for i := range q.Fields {
				q.Fields[i].Description = strings.Repeat("d", 900)
			}
		}, wants: []string{"fields: are 18911 bytes of JSON together; at most 16384 (16 KiB)"}},
		{name: "fields of exactly 16 KiB of JSON", edit: func(q *Question) { q.Fields = fieldsOfJSONSize(MaxFieldsJSON) }},
		{name: "fields one byte over 16 KiB of JSON", edit: func(q *Question) { q.Fields = fieldsOfJSONSize(MaxFieldsJSON + 1) },
			wants: []string{"fields: are 16385 bytes of JSON together; at most 16384 (16 KiB)"}},
		// "<", ">" and "&" count as the one byte the agent wrote, not as
		// the six of Go's HTML-safe "\u003c": these fields are ~3 KiB of JSON.
		{name: "fields with markup characters are measured as written", edit: func(q *Question) {
			q.Fields = fields(3)
			for i := range q.Fields {
				q.Fields[i].Description = strings.Repeat("<&>", 333)
			}
		}},

		// field kinds
		{name: "missing field kind", edit: func(q *Question) { q.Fields[0].Kind = "" },
			wants: []string{"on: kind is required (text, number, choice, multi-choice, date or toggle)"}},
		{name: "unknown field kind", edit: func(q *Question) { q.Fields[0].Kind = "datetime" },
			wants: []string{`on: kind must be text, number, choice, multi-choice, date or toggle, not "datetime"`}},
		{name: "unknown kind on a misnamed field names it by position", edit: func(q *Question) { q.Fields[0] = Field{Name: "A", Kind: "x"} },
			wants: []string{`fields[0].name: "A" must be 1 to 64 lower-case letters, digits and _`, `fields[0]: kind must be text, number, choice, multi-choice, date or toggle, not "x"`}},
		{name: "every kind", edit: func(q *Question) {
			q.Fields = []Field{
				{Name: "a", Kind: FieldText, MaxLength: 10, Multiline: true},
				{Name: "b", Kind: FieldNumber, Min: ptr(-1), Max: ptr(-1)},
				{Name: "c", Kind: FieldChoice, Options: []string{"x"}},
				{Name: "d", Kind: FieldMultiChoice, Options: []string{"x", "y"}},
				{Name: "e", Kind: FieldDate, DateTime: true},
				{Name: "f", Kind: FieldToggle, Required: true},
			}
		}},

		// options
		{name: "choice field without options", edit: func(q *Question) { q.Fields[1] = Field{Name: "color", Kind: FieldChoice} },
			wants: []string{"color: a choice field needs options"}},
		{name: "multi-choice field without options", edit: func(q *Question) { q.Fields[1] = Field{Name: "tags", Kind: FieldMultiChoice} },
			wants: []string{"tags: a multi-choice field needs options"}},
		{name: "options on a text field", edit: func(q *Question) { q.Fields[1] = Field{Name: "note", Kind: FieldText, Options: []string{"a"}} },
			wants: []string{"note: only choice and multi-choice fields take options"}},
		{name: "empty option", edit: func(q *Question) { q.Fields[1] = Field{Name: "c", Kind: FieldChoice, Options: []string{"a", ""}} },
			wants: []string{"c: options[1] must not be empty"}},
		{name: "duplicate option", edit: func(q *Question) { q.Fields[1] = Field{Name: "c", Kind: FieldChoice, Options: []string{"Red", "RED"}} },
			wants: []string{`c: option "RED" is listed twice`}},
		{name: "option too long", edit: func(q *Question) {
			q.Fields[1] = Field{Name: "c", Kind: FieldChoice, Options: []string{strings.Repeat("o", 201)}}
		}, wants: []string{"c: options[0] must be at most 200 characters"}},
		{name: "too many options", edit: func(q *Question) {
			q.Fields[1] = Field{Name: "c", Kind: FieldChoice}
			for i := range MaxOptions + 1 {
				q.Fields[1].Options = append(q.Fields[1].Options, fmt.Sprint(i))
			}
		}, wants: []string{"c: at most 100 options, got 101"}},

		// number attributes
		{name: "min on a text field", edit: func(q *Question) { q.Fields[1] = Field{Name: "note", Kind: FieldText, Min: ptr(1)} },
			wants: []string{"note: min, max and integer apply to number fields only"}},
		{name: "max on a date field", edit: func(q *Question) { q.Fields[0].Max = ptr(1) },
			wants: []string{"on: min, max and integer apply to number fields only"}},
		{name: "integer on a toggle", edit: func(q *Question) { q.Fields[1] = Field{Name: "ok", Kind: FieldToggle, Integer: true} },
			wants: []string{"ok: min, max and integer apply to number fields only"}},
		{name: "min greater than max", edit: func(q *Question) { q.Fields[1].Min = ptr(10) },
			wants: []string{"copies: min 10 is greater than max 9"}},
		{name: "fractional bounds", edit: func(q *Question) { q.Fields[1].Min, q.Fields[1].Max = ptr(2.5), ptr(0.5) },
			wants: []string{"copies: min 2.5 is greater than max 0.5"}},

		// text and date attributes
		{name: "max_length on a number", edit: func(q *Question) { q.Fields[1].MaxLength = 3 },
			wants: []string{"copies: max_length and multiline apply to text fields only"}},
		{name: "multiline on a choice", edit: func(q *Question) {
			q.Fields[1] = Field{Name: "c", Kind: FieldChoice, Options: []string{"a"}, Multiline: true}
		}, wants: []string{"c: max_length and multiline apply to text fields only"}},
		{name: "negative max_length", edit: func(q *Question) { q.Fields[1] = Field{Name: "note", Kind: FieldText, MaxLength: -1} },
			wants: []string{"note: max_length must not be negative"}},
		{name: "date_time on a text field", edit: func(q *Question) { q.Fields[1] = Field{Name: "note", Kind: FieldText, DateTime: true} },
			wants: []string{"note: date_time applies to date fields only"}},
		{name: "label too long", edit: func(q *Question) { q.Fields[0].Label = strings.Repeat("l", 201) },
			wants: []string{"on: label must be at most 200 characters"}},
		{name: "description too long", edit: func(q *Question) { q.Fields[0].Description = strings.Repeat("d", 1001) },
			wants: []string{"on: description must be at most 1000 characters"}},

		// approvals
		{name: "approval without proposal", base: validApproval, edit: func(q *Question) { q.Proposal = nil },
			wants: []string{"proposal: is required for an approval"}},
		{name: "approval proposal without id", base: validApproval, edit: func(q *Question) { q.Proposal.ID = " " },
			wants: []string{"proposal.id: is required"}},
		{name: "approval proposal without summary", base: validApproval, edit: func(q *Question) { q.Proposal.Summary = nil },
			wants: []string{"proposal.summary: needs at least one line"}},
		{name: "approval with choices", base: validApproval, edit: func(q *Question) { q.Choices = []string{"a"} },
			wants: []string{"kind: an approval takes approve or deny only, so it has no choices or fields"}},
		{name: "approval with fields", base: validApproval, edit: func(q *Question) { q.Fields = fields(1) },
			wants: []string{"kind: an approval takes approve or deny only, so it has no choices or fields"}},
		{name: "proposal on a question", edit: func(q *Question) { q.Proposal = &Proposal{ID: "p", Summary: []string{"s"}} },
			wants: []string{"proposal: only an approval carries a proposal"}},

		// timeout
		{name: "timeout 2d", edit: func(q *Question) { q.Timeout = "2d" }},
		{name: "timeout 90d", edit: func(q *Question) { q.Timeout = "90d" }},
		{name: "timeout 1s", edit: func(q *Question) { q.Timeout = "1s" }},
		{name: "timeout 0s", edit: func(q *Question) { q.Timeout = "0s" },
			wants: []string{`timeout: "0s" must be at least one second`}},
		{name: "timeout banana", edit: func(q *Question) { q.Timeout = "banana" },
			wants: []string{`timeout: "banana" is not a duration such as 30m, 4h or 2d`}},
		{name: "timeout 91d", edit: func(q *Question) { q.Timeout = "91d" },
			wants: []string{`timeout: "91d" must be at most 90 days`}},
		{name: "timeout 2161h", edit: func(q *Question) { q.Timeout = "2161h" },
			wants: []string{`timeout: "2161h" must be at most 90 days`}},
		{name: "timeout blank", edit: func(q *Question) { q.Timeout = " " },
			wants: []string{`timeout: "" is not a duration such as 30m, 4h or 2d`}},
		{name: "on_timeout fail", edit: func(q *Question) { q.OnTimeout = OnTimeoutFail }},
		{name: "on_timeout unknown", edit: func(q *Question) { q.OnTimeout = "retry" },
			wants: []string{`on_timeout: must be continue or fail, not "retry"`}},
		{name: "priority low", edit: func(q *Question) { q.Priority = PriorityLow }},
		{name: "priority none", edit: func(q *Question) { q.Priority = "" }},
		{name: "priority unknown", edit: func(q *Question) { q.Priority = "urgent" },
			wants: []string{`priority: must be blocking, high, medium or low, not "urgent"`}},
		{name: "priority in capitals", edit: func(q *Question) { q.Priority = "High" },
			wants: []string{`priority: must be blocking, high, medium or low, not "High"`}},
		{name: "visibility restricted", edit: func(q *Question) { q.Visibility = VisibilityRestricted }},
		{name: "visibility tenant", edit: func(q *Question) { q.Visibility = VisibilityTenant }},
		{name: "visibility unknown", edit: func(q *Question) { q.Visibility = "private" },
			wants: []string{`visibility: must be tenant or restricted, not "private"`}},

		// identities
		{name: "answerer without platform", edit: func(q *Question) { q.Answerers = []string{"slack:U1", "U0ANA"} },
			wants: []string{`answerers[1]: "U0ANA" must be slack:<user>, discord:<user>, console:<user>, cli:<user> or person:<name>`}},
		{name: "answerer on an unknown platform", edit: func(q *Question) { q.Answerers = []string{"teams:bob"} },
			wants: []string{`answerers[0]: "teams:bob" must be slack:<user>, discord:<user>, console:<user>, cli:<user> or person:<name>`}},
		{name: "answerer naming a person", edit: func(q *Question) { q.Answerers = []string{"person:kevin", "slack:U1"} }},
		{name: "answerer naming a person badly", edit: func(q *Question) { q.Answerers = []string{"person:kev in"} },
			wants: []string{`answerers[0]: "person:kev in" must be person:<name>, the name 1 to 64 letters, digits, '-' or '_'`}},
		{name: "every platform", edit: func(q *Question) {
			q.Answerers = []string{"slack:U1", "discord:1234", "console:ana@example.com", "cli:kevin"}
		}},
		{name: "owner with empty user", edit: func(q *Question) { q.Owner = "slack:" },
			wants: []string{`owner: "slack:" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`}},

		// route
		{name: "slack thread without channel", edit: func(q *Question) { q.Route.Slack = &SlackRoute{ThreadTS: "1.2"} },
			wants: []string{"route.slack.channel: is required with thread_ts"}},

		// delegations are the runtime's record, never the asker's
		{name: "delegations set by the asker", edit: func(q *Question) {
			q.Delegations = []Delegation{{By: "slack:U1", To: "slack:U2"}}
		}, wants: []string{"delegations: are recorded by askbridge when someone asks another person to answer; a question may not set them"}},

		// escalation
		{name: "escalation off with a reason", edit: func(q *Question) {
			q.Escalation = &Escalation{Off: true}
			q.EscalationReason = "the owner is on call"
		}},
		{name: "escalation off without a reason", edit: func(q *Question) { q.Escalation = &Escalation{Off: true} },
			wants: []string{"escalation_reason: is required to turn the escalation ladder off"}},
		{name: "escalation off with steps", edit: func(q *Question) {
			q.Escalation = &Escalation{Off: true, Steps: []LadderStep{{At: 0.5, To: TargetOwner}}}
			q.EscalationReason = "x"
		}, wants: []string{"escalation: give steps or turn it off, not both"}},
		{name: "custom steps", edit: func(q *Question) {
			q.Escalation = &Escalation{Steps: []LadderStep{{At: 0.1, To: TargetAnswerers}, {At: 0.9, To: TargetAdmins}}}
		}},
		{name: "step at 0", edit: func(q *Question) { q.Escalation = &Escalation{Steps: []LadderStep{{At: 0, To: TargetOwner}}} },
			wants: []string{"escalation.steps[0].at: must be a fraction of the timeout between 0 and 1"}},
		{name: "step at 1", edit: func(q *Question) { q.Escalation = &Escalation{Steps: []LadderStep{{At: 1, To: TargetOwner}}} },
			wants: []string{"escalation.steps[0].at: must be a fraction of the timeout between 0 and 1"}},
		{name: "steps out of order", edit: func(q *Question) {
			q.Escalation = &Escalation{Steps: []LadderStep{{At: 0.5, To: TargetOwner}, {At: 0.5, To: TargetAdmins}}}
		}, wants: []string{"escalation.steps[1].at: steps must climb in order"}},
		{name: "step to an unknown target", edit: func(q *Question) {
			q.Escalation = &Escalation{Steps: []LadderStep{{At: 0.5, To: "boss"}}}
		}, wants: []string{`escalation.steps[0].to: must be answerers, owner or admins, not "boss"`}},
		{name: "too many steps", edit: func(q *Question) {
			q.Escalation = &Escalation{}
			for i := range 11 {
				q.Escalation.Steps = append(q.Escalation.Steps, LadderStep{At: float64(i+1) / 12, To: TargetOwner})
			}
		}, wants: []string{"escalation.steps: at most 10"}},

		{name: "several problems are all reported", edit: func(q *Question) {
			q.Tenant = ""
			q.Timeout = "banana"
			q.Fields[1].Min = ptr(10)
		}, wants: []string{"tenant: is required", `timeout: "banana" is not a duration such as 30m, 4h or 2d`, "copies: min 10 is greater than max 9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base
			if base == nil {
				base = validQuestion
			}
			q := base()
			tt.edit(q)
			err := ValidateQuestion(q)
			if len(tt.wants) == 0 {
				if err != nil {
					t.Fatalf("ValidateQuestion: %v, want valid", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ValidateQuestion = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) != len(tt.wants) {
				t.Errorf("problems = %q, want %q", ve.Problems, tt.wants)
			}
			for _, w := range tt.wants {
				if !contains(ve.Problems, w) {
					t.Errorf("problems = %q, missing %q", ve.Problems, w)
				}
			}
			if err.Error() != strings.Join(ve.Problems, "; ") {
				t.Errorf("Error() = %q, want the problems joined by ; ", err.Error())
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDecodeQuestion(t *testing.T) {
	t.Parallel()
	const design = `{"tenant": "acme", "job_id": "job-0a9dc2d1", "question_id": "q-75eaf712",
 "task_version": 3, "kind": "question",
 "question": "When should I send the report, and how many copies?",
 "fields": [{"name": "on", "kind": "date", "label": "Send on", "required": true},
            {"name": "copies", "kind": "number", "integer": true, "min": 1, "max": 9}],
 "missing_field": "send_date", "why_it_matters": "The date decides which records are included.",
 "priority": "blocking", "blocked_tools": ["send_report"],
 "timeout": "4h", "on_timeout": "continue",
 "route": {"slack": {"channel": "C0123", "thread_ts": ""}, "discord": {"channel_id": "1234"}},
 "answerers": ["slack:U0ANA"], "owner": "slack:U0OWNER", "agent": "acme-support"}`
	const head = `{"tenant":"acme","job_id":"j","question_id":"q","question":"Why?"`
	tests := []struct {
		name    string
		in      string
		want    string // the whole error; "" means valid
		partial bool   // a question is returned with the error
	}{
		{name: "design example", in: design},
		{name: "surrounding space", in: "\n " + head + "}\n\t"},
		{name: "empty", in: "", want: "question: is empty: send a JSON object"},
		{name: "only space", in: " \n", want: "question: is empty: send a JSON object"},
		{name: "truncated", in: head, want: "question: is not a JSON object: it ends before the JSON is complete"},
		{name: "syntax error", in: `{"tenant" "acme"}`,
			want: "question: is not a JSON object: invalid character '\"' after object key (at byte 11)"},
		{name: "an array", in: `[]`, want: "question: is not a JSON object: expected an object, not a list"},
		{name: "a string", in: `"why?"`, want: "question: is not a JSON object: expected an object, not text"},
		{name: "trailing object", in: head + `}{}`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "trailing brace", in: head + `}}`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "trailing bracket", in: head + `} ]`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "trailing word", in: head + `} x`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "tenant as a number", in: `{"tenant":1,"job_id":"j","question_id":"q","question":"Why?"}`,
			want: "tenant: must be text, not a number", partial: true},
		{name: "fields as a string", in: head + `,"fields":"on,copies"}`,
			want: "fields: must be a list, not text", partial: true},
		{name: "fields as an object", in: head + `,"fields":{"name":"on"}}`,
			want: "fields: must be a list, not an object", partial: true},
		{name: "min as a string", in: head + `,"fields":[{"name":"n","kind":"number","min":"1"}]}`,
			want: "fields[0].min: must be a number, not text", partial: true},
		{name: "options as numbers", in: head + `,"fields":[{"name":"c","kind":"choice","options":[1,2]}]}`,
			want: "fields[0].options: must be text, not a number", partial: true},
		{name: "required as a string", in: head + `,"fields":[{"name":"c","kind":"text","required":"yes"}]}`,
			want: "fields[0].required: must be true or false, not text", partial: true},
		// Every problem is named, not the first alone; not those that
		// follow from a value left out (its field's kind, the proposal).
		{name: "wrong types and other problems", partial: true,
			in: `{"tenant":"acme","job_id":"j","question_id":"q","question":"","timeout":4,"fields":[{"name":"ok","kind":"text"},{"name":"Copies","kind":"number","min":"1"},{"name":"c","kind":5}],"on_timeout":"later"}`,
			want: `timeout: must be text, not a number; fields[1].min: must be a number, not text; fields[2].kind: must be text, not a number; ` +
				`question: is required: write it for a person who has not seen the conversation; fields[1].name: "Copies" must be 1 to 64 lower-case letters, digits and _; ` +
				`on_timeout: must be continue or fail, not "later"`},
		{name: "an approval's summary of the wrong type", in: head + `,"kind":"approval","proposal":{"id":"p","summary":"x"},"timeout":"banana"}`, partial: true,
			want: `proposal.summary: must be a list of text, not text; timeout: "banana" is not a duration such as 30m, 4h or 2d`},
		{name: "a field that is not an object", in: head + `,"fields":[{"name":"ok","kind":"text"},5]}`, partial: true,
			want: "fields[1]: must be an object, not a number"},
		// docs/contract.md lists a field's settings; a misspelt one would leave
		// the field unchecked.
		{name: "a field setting misspelt", in: head + `,"fields":[{"name":"copies","kind":"number","Integer":true,"maximum":9,"minimum":1}]}`, partial: true,
			want: `fields[0]: "maximum" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time); ` +
				`fields[0]: "minimum" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time)`},
		{name: "a field setting misspelt beside another problem", in: head + `,"fields":[{"name":"n","kind":"number","maximum":9,"min":"1"}]}`, partial: true,
			want: `fields[0].min: must be a number, not text; fields[0]: "maximum" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time)`},
		// A misspelt key of the question would ask another question: one
		// without its choices becomes free text.
		{name: "a question key misspelt", in: head + `,"choises":["red","blue"]}`, partial: true,
			want: `"choises" is not a key of a question: did you mean "choices"?`},
		{name: "a key of no question", in: head + `,"colour_scheme":"dark","Timeout":"4h"}`, partial: true,
			want: `"colour_scheme" is not a key of a question (docs/contract.md lists them)`},
		{name: "a question key misspelt beside a bad value and a misspelt field setting", partial: true,
			in: head + `,"timeout":4,"blocked_tool":["x"],"fields":[{"name":"n","kind":"number","maxx":9}]}`,
			want: `timeout: must be text, not a number; "blocked_tool" is not a key of a question: did you mean "blocked_tools"?; ` +
				`fields[0]: "maxx" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time)`},
		{name: "task version fractional", in: head + `,"task_version":1.5}`,
			want: "task_version: must be a whole number, not 1.5", partial: true},
		{name: "task version with a decimal point", in: head + `,"task_version":3.0}`,
			want: "task_version: must be a whole number written without a decimal point or exponent, not 3.0", partial: true},
		{name: "task version with an exponent", in: head + `,"task_version":1e2}`,
			want: "task_version: must be a whole number written without a decimal point or exponent, not 1e2", partial: true},
		{name: "task version huge", in: head + `,"task_version":1e30}`,
			want: "task_version: 1e30 is too large", partial: true},
		{name: "task version as a string", in: head + `,"task_version":"3"}`,
			want: "task_version: must be a whole number, not text", partial: true},
		{name: "choices as a string", in: head + `,"choices":"red"}`,
			want: "choices: must be a list of text, not text", partial: true},
		{name: "proposal as a list", in: head + `,"proposal":[]}`,
			want: "proposal: must be an object, not a list", partial: true},
		{name: "summary as a string", in: head + `,"kind":"approval","proposal":{"id":"p","summary":"x"}}`,
			want: "proposal.summary: must be a list of text, not text", partial: true},
		{name: "escalation off as a string", in: head + `,"escalation":{"off":"true"}}`,
			want: "escalation.off: must be true or false, not text", partial: true},
		// docs/contract.md: a question may reshape the ladder or turn it off (with
		// escalation_reason); the short spellings are read too.
		{name: "escalation false", in: head + `,"escalation":false,"escalation_reason":"the agent retries"}`},
		{name: "escalation off", in: head + `,"escalation":"off","escalation_reason":"the agent retries"}`},
		{name: "escalation as a list of steps", in: head + `,"escalation":[{"at":0.5,"to":"owner"}]}`},
		{name: "escalation true", in: head + `,"escalation":true}`},
		{name: "escalation default", in: head + `,"escalation":"default"}`},
		{name: "escalation not off", in: head + `,"escalation":{"off":false}}`},
		{name: "escalation as steps in an object", in: head + `,"escalation":{"steps":[{"at":0.5,"to":"owner"}]}}`},
		// contract.md lists every form; anything else is refused, not
		// read as the default ladder.
		{name: "escalation as an empty list", in: head + `,"escalation":[]}`, partial: true,
			want: `escalation: names no steps: give steps such as [{"at": 0.5, "to": "owner"}], false with escalation_reason to turn reminders off, or leave it out for the default ladder`},
		{name: "escalation as an empty object", in: head + `,"escalation":{}}`},
		{name: "escalation with no steps in an object", in: head + `,"escalation":{"steps":[]}}`, partial: true,
			want: `escalation: names no steps: give steps such as [{"at": 0.5, "to": "owner"}], false with escalation_reason to turn reminders off, or leave it out for the default ladder`},
		{name: "escalation with an unknown key", in: head + `,"escalation":{"of":true},"escalation_reason":"the agent retries"}`, partial: true,
			want: `escalation: "of" is not a setting of the ladder (off, steps)`},
		{name: "escalation with an unknown key beside off", in: head + `,"escalation":{"off":true,"because":"x"},"escalation_reason":"the agent retries"}`, partial: true,
			want: `escalation: "because" is not a setting of the ladder (off, steps)`},
		{name: "escalation step with an unknown key", in: head + `,"escalation":{"steps":[{"at":0.5,"to":"owner"},{"after":0.75,"to":"admins"}]}}`, partial: true,
			want: `escalation.steps[1]: "after" is not a setting of a step (at, to); escalation.steps[1].at: must be a fraction of the timeout between 0 and 1`},
		{name: "escalation list step with an unknown key", in: head + `,"escalation":[{"at":0.5,"to":"owner","via":"dm"}]}`, partial: true,
			want: `escalation[0]: "via" is not a setting of a step (at, to)`},
		{name: "escalation false without a reason", in: head + `,"escalation":false}`,
			want: "escalation_reason: is required to turn the escalation ladder off", partial: true},
		{name: "escalation as an unknown word", in: head + `,"escalation":"sometimes"}`,
			want: `escalation: must be "off", a list of steps or an object {"off", "steps"}, not text`, partial: true},
		{name: "escalation as a number", in: head + `,"escalation":3}`,
			want: `escalation: must be "off", a list of steps or an object {"off", "steps"}, not a number`, partial: true},
		{name: "escalation steps of the wrong type", in: head + `,"escalation":[{"at":"half","to":"owner"}]}`,
			want: "escalation.at: must be a number, not text", partial: true},
		{name: "invalid question", in: head + `,"timeout":"banana"}`,
			want: `timeout: "banana" is not a duration such as 30m, 4h or 2d`, partial: true},
		{name: "null", in: `null`, partial: true,
			want: "tenant: is required; job_id: is required; question_id: is required; question: is required: write it for a person who has not seen the conversation"},
		{name: "over 64 KiB of JSON", in: head + `,"context":"` + strings.Repeat("x", MaxQuestionBytes) + `"}`, partial: true,
			want: "question: is 65632 bytes as JSON; at most 65536 are accepted"},
		{name: "64 KiB of JSON spaced out", in: head + strings.Repeat(" ", MaxQuestionBytes) + `}`},
		{name: "far too large to read", in: head + strings.Repeat(" ", 8*MaxQuestionBytes) + `}`,
			want: fmt.Sprintf("question: is %d bytes; at most 65536 are accepted", len(head)+8*MaxQuestionBytes+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := DecodeQuestion([]byte(tt.in))
			if tt.want == "" {
				if err != nil || q == nil {
					t.Fatalf("DecodeQuestion = %v, %v; want a valid question", q, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodeQuestion succeeded, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err.Error(), tt.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error is %T, want *ValidationError", err)
			}
			for _, goWords := range []string{"bridge.", "[]", "float64", "int64", "Go value", "unmarshal"} {
				if strings.Contains(err.Error(), goWords) {
					t.Errorf("error %q leaks Go words %q", err, goWords)
				}
			}
			if (q != nil) != tt.partial {
				t.Errorf("question returned = %v, want %v", q != nil, tt.partial)
			}
		})
	}
}

// A value of the wrong type, even one encoding/json stops at (the
// escalation's own decoder), leaves the rest of the question decoded, so
// the invalid outcome names the agent's question and version.
func TestDecodeQuestionKeepsWhatFollowsABadValue(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`"escalation":"sometimes"`, `"escalation":[{"at":"half"}]`, `"timeout":4`, `"fields":"x"`} {
		in := `{"tenant":"acme","job_id":"job-e",` + bad + `,"question_id":"q-1","task_version":2,"question":"Why?"}`
		q, err := DecodeQuestion([]byte(in))
		if err == nil || q == nil {
			t.Fatalf("%s: DecodeQuestion = %v, %v; want a partial question and an error", bad, q, err)
		}
		if q.Tenant != "acme" || q.JobID != "job-e" || q.QuestionID != "q-1" || q.TaskVersion != 2 || q.Question != "Why?" {
			t.Errorf("%s: decoded %+v, want everything but the bad value", bad, q)
		}
	}
}

// A question that validates is re-encoded by encoding/json (which writes
// "<" as "\u003c") when it is stored or sent on; it must still decode.
func TestDecodeQuestionReencodedStaysAcceptable(t *testing.T) {
	t.Parallel()
	q := validQuestion()
	q.Context = strings.Repeat("<&>", (MaxQuestionBytes-1000)/3)
	if err := ValidateQuestion(q); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(q)
	if len(raw) <= MaxQuestionBytes {
		t.Fatalf("test needs an encoding over the limit, got %d bytes", len(raw))
	}
	if _, err := DecodeQuestion(raw); err != nil {
		t.Errorf("re-encoded question refused: %v", err)
	}
	q.Context += strings.Repeat("x", 1000)
	if err := ValidateQuestion(q); err == nil || !strings.Contains(err.Error(), "bytes as JSON; at most 65536 are accepted") {
		t.Errorf("ValidateQuestion of a question over 64 KiB = %v", err)
	}
}

// A refused question still tells the runtime where to send the refusal.
func TestDecodeQuestionKeepsAddressOnTypeError(t *testing.T) {
	t.Parallel()
	q, err := DecodeQuestion([]byte(`{"tenant":"acme","job_id":"job-1","question_id":"q-1","question":"Why?","fields":[{"name":"n","kind":"number","max":"9"}],"timeout":"4h"}`))
	if err == nil {
		t.Fatal("want an error")
	}
	if q.Tenant != "acme" || q.JobID != "job-1" || q.QuestionID != "q-1" || q.Timeout != "4h" {
		t.Errorf("decoded %+v, want tenant, job and question ids kept", q)
	}
}

func TestParseTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "4h", want: 4 * time.Hour},
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "2d", want: 48 * time.Hour},
		{in: " 2d ", want: 48 * time.Hour},
		{in: "90d", want: MaxTimeout},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "2d30m", want: 48*time.Hour + 30*time.Minute},
		{in: "89d24h", want: MaxTimeout},
		{in: "89d24h1s", err: `"89d24h1s" must be at most 90 days`},
		{in: "1d12", err: `"1d12" is not a duration such as 30m, 4h or 2d`},
		{in: "1d-1h", err: `"1d-1h" is not a duration such as 30m, 4h or 2d`},
		{in: "1d2d", err: `"1d2d" is not a duration such as 30m, 4h or 2d`},
		{in: "2160h", want: MaxTimeout},
		{in: "1s", want: time.Second},
		{in: "0s", err: `"0s" must be at least one second`},
		{in: "999ms", err: `"999ms" must be at least one second`},
		{in: "-1h", err: `"-1h" must be at least one second`},
		{in: "-2d", err: `"-2d" must be at least one second`},
		{in: "0d", err: `"0d" must be at least one second`},
		{in: "91d", err: `"91d" must be at most 90 days`},
		{in: "2160h1s", err: `"2160h1s" must be at most 90 days`},
		// Would overflow time.Duration if multiplied first.
		{in: "106751992d", err: `"106751992d" must be at most 90 days`},
		{in: "9223372036854775807d", err: `"9223372036854775807d" must be at most 90 days`},
		{in: "99999999999999999999d", err: `"99999999999999999999d" is not a duration such as 30m, 4h or 2d`},
		{in: "banana", err: `"banana" is not a duration such as 30m, 4h or 2d`},
		{in: "d", err: `"d" is not a duration such as 30m, 4h or 2d`},
		{in: "1.5d", err: `"1.5d" is not a duration such as 30m, 4h or 2d`},
		{in: "4", err: `"4" is not a duration such as 30m, 4h or 2d`},
		{in: "", err: `"" is not a duration such as 30m, 4h or 2d`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTimeout(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseTimeout(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestTimeoutDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		timeout string
		want    time.Duration
	}{{"", DefaultTimeout}, {"4h", 4 * time.Hour}, {"2d", 48 * time.Hour}, {"banana", DefaultTimeout}} {
		q := &Question{Timeout: tt.timeout}
		if got := q.TimeoutDuration(); got != tt.want {
			t.Errorf("TimeoutDuration(%q) = %v, want %v", tt.timeout, got, tt.want)
		}
	}
}

func TestLadder(t *testing.T) {
	t.Parallel()
	custom := []LadderStep{{At: 0.5, To: TargetOwner}}
	for _, tt := range []struct {
		name string
		e    *Escalation
		want []LadderStep
	}{
		{"default", nil, DefaultLadder},
		{"empty reshaping", &Escalation{}, DefaultLadder},
		{"off", &Escalation{Off: true}, nil},
		{"custom", &Escalation{Steps: custom}, custom},
	} {
		q := &Question{Escalation: tt.e}
		got, _ := json.Marshal(q.Ladder())
		want, _ := json.Marshal(tt.want)
		if string(got) != string(want) {
			t.Errorf("%s: Ladder() = %s, want %s", tt.name, got, want)
		}
	}
	// The spellings an agent may publish, and what survives a round trip
	// through the store (which writes the object form).
	for _, tt := range []struct {
		escalation string
		want       []LadderStep
	}{
		{`null`, DefaultLadder}, {`true`, DefaultLadder}, {`"default"`, DefaultLadder}, {`{}`, DefaultLadder},
		{`false`, nil}, {`"off"`, nil}, {`"None"`, nil}, {`{"off":true}`, nil},
		{`[{"at":0.5,"to":"owner"}]`, custom}, {`{"steps":[{"at":0.5,"to":"owner"}]}`, custom},
	} {
		var q Question
		if err := json.Unmarshal([]byte(`{"escalation":`+tt.escalation+`}`), &q); err != nil {
			t.Fatalf("%s: %v", tt.escalation, err)
		}
		stored, _ := json.Marshal(&q)
		var back Question
		if err := json.Unmarshal(stored, &back); err != nil {
			t.Fatalf("%s: stored as %s: %v", tt.escalation, stored, err)
		}
		for _, q := range []*Question{&q, &back} {
			got, _ := json.Marshal(q.Ladder())
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("escalation %s: Ladder() = %s, want %s", tt.escalation, got, want)
			}
		}
	}
	if DefaultLadder[0].At != 0.25 || DefaultLadder[1].At != 0.5 || DefaultLadder[2].At != 0.75 {
		t.Errorf("DefaultLadder = %+v, want ¼, ½, ¾", DefaultLadder)
	}
}

func TestTokensAndSubjects(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{"acme", true}, {"job-0a9dc2d1", true}, {"A_b-9", true}, {strings.Repeat("x", 64), true},
		{"", false}, {strings.Repeat("x", 65), false}, {"a.b", false}, {"a b", false},
		{"*", false}, {">", false}, {"é", false}, {"a\n", false},
	} {
		if got := ValidToken(tt.s); got != tt.ok {
			t.Errorf("ValidToken(%q) = %v, want %v", tt.s, got, tt.ok)
		}
		if err := CheckToken("tenant", tt.s); (err == nil) != tt.ok {
			t.Errorf("CheckToken(%q) = %v, want ok=%v", tt.s, err, tt.ok)
		}
	}
	for _, tt := range []struct{ got, want string }{
		{QuestionSubject("acme", "job-1"), "ask.v1.question.acme.job-1"},
		{CancelSubject("acme", "job-1"), "ask.v1.cancel.acme.job-1"},
		{AnswerSubject("acme", "job-1"), "ask.v1.answer.acme.job-1"},
		{EventSubject("acme", "job-1"), "ask.v1.event.acme.job-1"},
		{ResumeSubject("acme", "job-1"), "ask.v1.resume.acme.job-1"},
		{DeliverySubject("acme", "job-1"), "ask.v1.delivery.acme.job-1"},
		{APIList, "ask.v1.api.list"},
		{APIShow, "ask.v1.api.show"},
		{APIStats, "ask.v1.api.stats"},
	} {
		if tt.got != tt.want {
			t.Errorf("subject %q, want %q", tt.got, tt.want)
		}
	}
}

func TestCheckIdentity(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"slack:U0123", true}, {"discord:4567", true}, {"console:ana@example.com", true}, {"cli:alice", true},
		{"cli:a.b-c_d", true}, {"slack:" + strings.Repeat("U", 128), true},
		{"slack:" + strings.Repeat("U", 129), false}, {"alice", false}, {"slack:", false},
		{"Slack:U1", false}, {"slack:U 1", false}, {"slack:U1,slack:U2", false}, {"", false},
	} {
		err := CheckIdentity(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("CheckIdentity(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "must be slack:<user>, discord:<user>, console:<user> or cli:<user>") {
			t.Errorf("CheckIdentity(%q) = %q, want it to say what an identity is", tt.id, err)
		}
	}
}

// Field.Title falls back to the name.
func TestFieldTitle(t *testing.T) {
	t.Parallel()
	if got := (&Field{Name: "on", Label: "Send on"}).Title(); got != "Send on" {
		t.Errorf("Title = %q", got)
	}
	if got := (&Field{Name: "on"}).Title(); got != "on" {
		t.Errorf("Title = %q", got)
	}
}
