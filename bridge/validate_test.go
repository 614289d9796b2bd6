package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
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
