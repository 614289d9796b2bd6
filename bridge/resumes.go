package bridge

// APIResumes answers the outcomes a job's resumes stream holds for one
// question, oldest first: what an agent that was away reads to re-attach
// (bridge/agent Await), with no JetStream access of its own.
const APIResumes = PrefixAPI + ".resumes"

// ResumesRequest names the question whose outcomes are wanted. As is
// set on a person's request (the intake sets it), which is refused:
// resumes are for the agent that asked, bound to its tenant.
type ResumesRequest struct {
	As         string `json:"as,omitempty"`
	Tenant     string `json:"tenant"`
	JobID      string `json:"job_id"`
	QuestionID string `json:"question_id"`
}

// ResumesReply lists them, or says why it cannot.
type ResumesReply struct {
	Resumes []Resume `json:"resumes"`
	Error   string   `json:"error,omitempty"`
}

// ResumesUnavailable begins a ResumesReply's Error when the runtime could
// not read the stream just then (it was stopping, or the stream had no
// leader): asking again, of it or another replica, may well succeed.
const ResumesUnavailable = "resumes: unavailable: "
