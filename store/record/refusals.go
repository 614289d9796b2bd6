package record

// The sentences a backend refuses a write in, each written here once
// (refusals_test.go checks no other file of the module holds one). The
// rules that choose them are beside them in this package; a backend only
// returns what they say.
const (
	// refusalOtherJobsProposal: a question asks for a proposal id another
	// job proposed (ProposalProblem).
	refusalOtherJobsProposal = "proposal.id: %s is a proposal of job %s; a job proposes under ids of its own"
	// refusalProposalAskedFor: another question still waits on the
	// proposal (ProposalProblem).
	refusalProposalAskedFor = "proposal.id: %s is already asked for by question %s, which waits"
	// refusalNotApproved: an execute would take a proposal that is not
	// approved (Takeable).
	refusalNotApproved = "only an approved proposal can be taken, not a %s one"
)

// refusals lists the sentences above, for the test that keeps them here.
var refusals = []string{refusalOtherJobsProposal, refusalProposalAskedFor, refusalNotApproved}
