package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// apiResumes reads a question's outcomes from the resumes stream, for an
// agent (bound to its tenant by the intake) or askbridge itself.
func (r *Runtime) apiResumes(ctx context.Context, data []byte) any {
	var req bridge.ResumesRequest
	if msg := decodeRequest("resumes", data, &req); msg != "" {
		return bridge.ResumesReply{Error: msg}
	}
	if req.As != "" {
		// A person's request: resumes are what the agent that asked reads
		// to re-attach, and a person sees how a question ended with show,
		// as far as they may see it.
		return bridge.ResumesReply{Error: fmt.Sprintf("resumes: %s is a person, and resumes are for the agent that asked: see how a question ended with askbridge show", bridge.Truncate(req.As, 80))}
	}
	for _, f := range []struct{ name, v string }{{"tenant", req.Tenant}, {"job_id", req.JobID}, {"question_id", req.QuestionID}} {
		if err := bridge.CheckToken(f.name, f.v); err != nil {
			return bridge.ResumesReply{Error: "resumes: " + err.Error()}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cons, err := r.js.OrderedConsumer(rctx, bridge.StreamResumes, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bridge.ResumeSubject(req.Tenant, req.JobID)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return bridge.ResumesReply{Error: bridge.ResumesUnavailable + err.Error()}
	}
	info, err := cons.Info(rctx)
	if err != nil {
		return bridge.ResumesReply{Error: bridge.ResumesUnavailable + err.Error()}
	}
	reply := bridge.ResumesReply{Resumes: []bridge.Resume{}}
	for left := info.NumPending; left > 0; {
		batch, err := cons.Fetch(int(min(left, 256)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return bridge.ResumesReply{Error: bridge.ResumesUnavailable + err.Error()}
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			var out bridge.Resume
			if json.Unmarshal(msg.Data(), &out) == nil && out.QuestionID == req.QuestionID {
				reply.Resumes = append(reply.Resumes, out)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return bridge.ResumesReply{Error: bridge.ResumesUnavailable + err.Error()}
		}
		if n == 0 {
			break
		}
		left -= uint64(n)
	}
	return reply
}
