package console

import (
	"cmp"
	"context"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// noticeView is a notice as the job page shows it: the neutral notice
// card (card.NewNotice), with no controls; Hidden when the reader may
// know a failure was reported, not what it says.
type noticeView struct {
	Title  string
	Parts  []card.Section
	At     timeView
	Hidden bool
}

// maxTracePages bounds the trace pages the job page reads for notices.
const maxTracePages = 10

// jobNotices reads the job's notices from its trace (ask.v1.api.trace),
// as the link's identity may see them, oldest first. A job the trace
// shows nothing of has none.
func (c *Console) jobNotices(ctx context.Context, l Link) ([]noticeView, error) {
	req := bridge.TraceRequest{As: l.Identity, Roles: l.Roles, Tenant: l.Tenant, JobID: l.JobID}
	var out []noticeView
	for range maxTracePages {
		var rep bridge.TraceReply
		if err := c.api(ctx, bridge.APITrace, req, &rep); err != nil {
			return nil, err
		}
		if rep.Error != "" {
			return out, nil
		}
		for _, e := range rep.Entries {
			if e.Kind != bridge.TraceNotice {
				continue
			}
			if e.Notice == nil || e.Hidden {
				out = append(out, noticeView{Hidden: true, At: when(e.At)})
				continue
			}
			nc := card.NewNotice(*e.Notice)
			out = append(out, noticeView{Title: nc.Title, Parts: nc.Parts, At: when(cmp.Or(nc.At, e.At))})
		}
		if rep.Next == "" {
			break
		}
		req.After = rep.Next
	}
	return out, nil
}
