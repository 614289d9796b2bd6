// Package bridge is askbridge's wire contract: the NATS subjects, the JSON
// messages that travel on them, the field schema with its one validator, and
// the NATS connection (embedded server or external cluster) with its streams.
//
// Every other package meets every other only through these types.
package bridge

import (
	"context"
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go/jetstream"
)

// Subject prefixes. The full subject appends ".<tenant>.<job>".
const (
	PrefixQuestion = "ask.v1.question"
	PrefixCancel   = "ask.v1.cancel"
	PrefixAnswer   = "ask.v1.answer"
	PrefixEvent    = "ask.v1.event"
	PrefixResume   = "ask.v1.resume"
	// PrefixDelivery carries delivery reports from the chat adapters to the
	// runtime: whether a question could be shown on a platform, and if not,
	// the typed failure. An addition to the subjects; see docs/contract.md.
	PrefixDelivery = "ask.v1.delivery"
	// PrefixAPI is request/reply (not durable): ask.v1.api.<op>.
	PrefixAPI = "ask.v1.api"
)

// API operations served on ask.v1.api.<op>.
const (
	APIList  = PrefixAPI + ".list"
	APIShow  = PrefixAPI + ".show"
	APIStats = PrefixAPI + ".stats"
)

// Stream names, one JetStream stream per kind of durable subject.
const (
	StreamQuestions = "ASK_QUESTIONS"
	StreamCancels   = "ASK_CANCELS"
	StreamAnswers   = "ASK_ANSWERS"
	StreamEvents    = "ASK_EVENTS"
	StreamResumes   = "ASK_RESUMES"
	StreamDelivery  = "ASK_DELIVERY"
)

// tokenPattern is what a tenant, job id or question id may be: safe as one
// NATS subject token, and short enough for Slack and Discord custom ids.
var tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidToken reports whether s can be a tenant, job id or question id.
func ValidToken(s string) bool { return tokenPattern.MatchString(s) }

// CheckToken returns a refusal naming what (e.g. "job_id") when s is unfit.
func CheckToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s: is required", what)
	}
	if !ValidToken(s) {
		return fmt.Errorf("%s: %q must be 1 to 64 letters, digits, '-' or '_'", what, s)
	}
	return nil
}

func subject(prefix, tenant, job string) string { return prefix + "." + tenant + "." + job }

// QuestionSubject is where an agent publishes a question for one job.
func QuestionSubject(tenant, job string) string { return subject(PrefixQuestion, tenant, job) }

// CancelSubject is where an agent cancels a job's questions or bumps its task version.
func CancelSubject(tenant, job string) string { return subject(PrefixCancel, tenant, job) }

// AnswerSubject is where bots, the console and the CLI propose answers.
func AnswerSubject(tenant, job string) string { return subject(PrefixAnswer, tenant, job) }

// EventSubject is where the runtime tells the front-ends what happened.
func EventSubject(tenant, job string) string { return subject(PrefixEvent, tenant, job) }

// ResumeSubject is where the runtime publishes the outcome the job reads.
func ResumeSubject(tenant, job string) string { return subject(PrefixResume, tenant, job) }

// DeliverySubject is where adapters report whether they could show a question.
func DeliverySubject(tenant, job string) string { return subject(PrefixDelivery, tenant, job) }

// PublishDelivery reports on ask.v1.delivery.<tenant>.<job> whether an
// adapter showed a question, durably, with the message id
// delivery.<platform>.<tenant>.<job>.<question>.<version>, so a report
// sent again (an event handled twice) is one report (docs/contract.md).
func PublishDelivery(ctx context.Context, js jetstream.JetStream, d Delivery) error {
	id := fmt.Sprintf("delivery.%s.%s.%s.%s.%d", d.Platform, d.Tenant, d.JobID, d.QuestionID, d.TaskVersion)
	return Publish(ctx, js, DeliverySubject(d.Tenant, d.JobID), id, d)
}
