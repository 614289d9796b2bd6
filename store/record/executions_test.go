package record

import (
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

func TestExecutionReportApply(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	gateAt := at.Add(-time.Minute)
	tests := []struct {
		name   string
		p      Proposal
		result string
		err    error
		want   Proposal
	}{
		{"approved, executed", Proposal{JobID: "job-1", State: bridge.ProposalApproved}, bridge.ResultSucceeded, nil,
			Proposal{JobID: "job-1", State: bridge.ProposalExecuted, ExecutedAt: at, Result: bridge.ResultSucceeded, ReportedAt: at}},
		{"taken by the gate, failed", Proposal{JobID: "job-1", State: bridge.ProposalExecuted, ExecutedAt: gateAt}, bridge.ResultFailed, nil,
			Proposal{JobID: "job-1", State: bridge.ProposalExecutionFailed, ExecutedAt: gateAt, Result: bridge.ResultFailed, ReportedAt: at}},
		{"another job's", Proposal{JobID: "job-2", State: bridge.ProposalApproved}, bridge.ResultSucceeded, ErrNotFound,
			Proposal{JobID: "job-2", State: bridge.ProposalApproved}},
		{"reported before", Proposal{JobID: "job-1", State: bridge.ProposalExecuted, ReportedAt: gateAt}, bridge.ResultSucceeded, ErrDuplicate,
			Proposal{JobID: "job-1", State: bridge.ProposalExecuted, ReportedAt: gateAt}},
		{"never approved", Proposal{JobID: "job-1", State: bridge.ProposalDenied}, bridge.ResultSucceeded, ErrProposalNotApproved,
			Proposal{JobID: "job-1", State: bridge.ProposalDenied}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ExecutionReport{JobID: "job-1", Result: tt.result, At: at}
			p := tt.p
			if err := e.Apply(&p); !errors.Is(err, tt.err) {
				t.Fatalf("Apply = %v, want %v", err, tt.err)
			}
			if p.State != tt.want.State || !p.ExecutedAt.Equal(tt.want.ExecutedAt) || p.Result != tt.want.Result || !p.ReportedAt.Equal(tt.want.ReportedAt) {
				t.Errorf("proposal after Apply = %+v, want %+v", p, tt.want)
			}
		})
	}
}
