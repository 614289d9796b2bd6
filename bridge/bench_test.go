package bridge

import "testing"

// BenchmarkDecodeAttempt decodes an attempt as a Slack click sends it.
func BenchmarkDecodeAttempt(b *testing.B) {
	data := []byte(`{"tenant":"acme","job_id":"job-0a9dc2d1","question_id":"q-75eaf712","task_version":3,"attempt_id":"slack-1234.5678-U0KEV","action":"answer","answer":"blue","by":"slack:U0KEV","by_name":"kevin","via":"slack","reply_to":{"user":"U0KEV","channel":"C0123","response_url":"https://hooks.slack.com/actions/T0/1/abc"}}`)
	b.ReportAllocs()
	for b.Loop() {
		var a AnswerAttempt
		if err := DecodeAttempt(data, &a); err != nil {
			b.Fatal(err)
		}
	}
}
