package jsstore

import (
	"context"
	"errors"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// errTodo marks an operation not yet ported from the SQLite store. Each
// lane of the port deletes its methods here as it implements them; none
// may remain when ASK_STORE=jetstream is offered.
var errTodo = errors.New("jsstore: not yet implemented")

func (s *Store) ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]store.ClarifyQuestion, error) {
	return nil, errTodo
}

func (s *Store) FindProposal(ctx context.Context, tenant, id string) (*store.Proposal, error) {
	return nil, errTodo
}

func (s *Store) GateCommit(ctx context.Context, batch []store.GateWrite) error { return errTodo }

func (s *Store) GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]store.GateDecision, error) {
	return nil, errTodo
}

func (s *Store) GateJob(ctx context.Context, tenant, job string) (store.GateJob, error) {
	return store.GateJob{}, errTodo
}

func (s *Store) JobLog(ctx context.Context, tenant, job string) ([]store.LogEntry, error) {
	return nil, errTodo
}

func (s *Store) ProposalOf(ctx context.Context, question int64) (*store.Proposal, error) {
	return nil, errTodo
}

func (s *Store) PruneGateLog(ctx context.Context, before time.Time) (int64, error) { return 0, errTodo }

func (s *Store) RecordExecution(ctx context.Context, e store.ExecutionReport) (*store.Proposal, error) {
	return nil, errTodo
}

func (s *Store) RecordNotice(ctx context.Context, e store.LogEntry, noticeID string, msgs []store.Message) error {
	return errTodo
}

var _ = bridge.MessageRef{}
var _ = time.Time{}
var _ = store.Record{}
