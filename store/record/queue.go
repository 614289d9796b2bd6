package record

// Queued is a pending question of a job with its staleness: how many
// ladder rounds passed without an answer.
type Queued struct {
	Record
	Staleness int
}

// RoundStep is a due step fired in a job's round, with its audit reason.
type RoundStep struct {
	DueStep
	Reason string
}
