package mcpfront

import "encoding/json"

// The tools' input schemas, as clients show them and models read them.
// They describe; bridge.ValidateQuestion and the gate decide, in words
// that name the field (docs/contract.md).

const tokenPattern = `^[A-Za-z0-9_-]{1,64}$`

var commonWait = map[string]any{
	"timeout": map[string]any{"type": "string",
		"description": "How long to wait for a person before giving up: 30m, 4h, 2d (default 24h, at most 90d)."},
	"on_timeout": map[string]any{"type": "string", "enum": []string{"continue", "fail"},
		"description": "continue (default): the result says nobody answered; fail: the call fails with QuestionTimedOut."},
	"answerers": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
		"description": "People who may answer besides the tenant's operators: identities such as slack:U0123 or discord:4567."},
	"route": map[string]any{"type": "object",
		"description": "Where to show the question; by default the service's channels.",
		"properties": map[string]any{
			"slack": map[string]any{"type": "object", "properties": map[string]any{
				"channel": map[string]any{"type": "string"}, "thread_ts": map[string]any{"type": "string"}}},
			"discord": map[string]any{"type": "object", "properties": map[string]any{
				"channel_id": map[string]any{"type": "string"}}},
		}},
	"question_id": map[string]any{"type": "string", "pattern": tokenPattern,
		"description": "Name the question (letters, digits, - and _). A call made again with the same question_id, after a reconnect or a restart, waits for the same question instead of asking again."},
	"job_id": map[string]any{"type": "string", "pattern": tokenPattern,
		"description": "The job the question belongs to; by default one job per MCP session."},
}

var fieldSchema = map[string]any{
	"type":     "object",
	"required": []string{"name", "kind"},
	"properties": map[string]any{
		"name": map[string]any{"type": "string", "pattern": "^[a-z0-9_]{1,64}$",
			"description": "Key of the field in the answer: lower-case letters, digits and _."},
		"kind":        map[string]any{"type": "string", "enum": []string{"text", "number", "choice", "multi-choice", "date", "toggle"}},
		"label":       map[string]any{"type": "string"},
		"description": map[string]any{"type": "string"},
		"required":    map[string]any{"type": "boolean"},
		"options": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
			"description": "The options of a choice or multi-choice field."},
		"min":        map[string]any{"type": "number"},
		"max":        map[string]any{"type": "number"},
		"integer":    map[string]any{"type": "boolean", "description": "A number field takes whole numbers only."},
		"max_length": map[string]any{"type": "integer", "minimum": 1},
		"multiline":  map[string]any{"type": "boolean"},
		"date_time":  map[string]any{"type": "boolean", "description": "A date field asks for a date and a time."},
	},
}

func withCommon(props map[string]any) map[string]any {
	for k, v := range commonWait {
		props[k] = v
	}
	return props
}

var askUserSchema = map[string]any{
	"type":     "object",
	"required": []string{"question"},
	"properties": withCommon(map[string]any{
		"question": map[string]any{"type": "string",
			"description": "The question, written for a person who has not seen your conversation."},
		"choices": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
			"description": "The answers to choose from (buttons). Give choices or fields, not both; neither means free text."},
		"fields": map[string]any{"type": "array", "items": fieldSchema, "maxItems": 20,
			"description": "Typed inputs of a form; the answer is a JSON object keyed by field name."},
		"context":        map[string]any{"type": "string", "description": "What the person needs to know to answer."},
		"why_it_matters": map[string]any{"type": "string", "description": "What the answer decides."},
	}),
}

var requestApprovalSchema = map[string]any{
	"type":     "object",
	"required": []string{"action", "summary"},
	"properties": withCommon(map[string]any{
		"action": map[string]any{"type": "string",
			"description": "The tool the proposal would run (refund, send_report); check_action executes it only for this tool."},
		"summary": map[string]any{
			"description": "What people read before deciding: one line, or a list of lines.",
			"anyOf":       []any{map[string]any{"type": "string"}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}},
		"arguments": map[string]any{"type": "object",
			"description": "The action's exact parameters; check_action hands them back on execute as approved."},
		"amount":      map[string]any{"type": "number", "minimum": 0},
		"currency":    map[string]any{"type": "string", "pattern": "^[A-Z]{3}$", "description": "ISO 4217, with amount."},
		"expires_at":  map[string]any{"type": "string", "format": "date-time", "description": "After this time the proposal can no longer be approved or executed."},
		"question":    map[string]any{"type": "string", "description": "The question people see; by default \"May I run <action>?\"."},
		"proposal_id": map[string]any{"type": "string", "description": "The proposal's id; by default a new one. A proposal is decided once, ever."},
	}),
}

var checkActionSchema = map[string]any{
	"type":     "object",
	"required": []string{"tool"},
	"properties": map[string]any{
		"tool":        map[string]any{"type": "string", "description": "The tool you are about to call."},
		"proposal_id": map[string]any{"type": "string", "description": "An approved proposal for this tool (from request_approval)."},
		"execute": map[string]any{"type": "boolean",
			"description": "With proposal_id: take the proposal for execution, once. The result carries the approved arguments and an idempotency key."},
		"task_version": map[string]any{"type": "integer", "minimum": 0},
		"job_id":       commonWait["job_id"],
	},
}

var approveToolUseSchema = map[string]any{
	"type":     "object",
	"required": []string{"tool_name", "input"},
	"properties": map[string]any{
		"tool_name":   map[string]any{"type": "string", "description": "The tool the coding agent wants to use."},
		"input":       map[string]any{"type": "object", "description": "The tool's input."},
		"tool_use_id": map[string]any{"type": "string"},
		"job_id":      commonWait["job_id"],
	},
}

// mustJSON is a schema as the SDK takes it.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
