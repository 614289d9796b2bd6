package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// apiResumes reads a question's outcomes from the resumes stream.
func (r *Runtime) apiResumes(ctx context.Context, data []byte) any {
	var req bridge.ResumesRequest
	if msg := decodeRequest("resumes", data, &req); msg != "" {
		return bridge.ResumesReply{Error: msg}
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
