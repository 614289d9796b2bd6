package jsstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// deliveryQuestions is how many questions one commit of RecordDeliveries
// writes: each is a question document, well inside one atomic batch.
const deliveryQuestions = 200

// RecordDelivery stores a platform's report (the latest per platform wins)
// and returns every report for the question.
func (s *Store) RecordDelivery(ctx context.Context, question int64, d bridge.Delivery, at time.Time) ([]record.DeliveryRow, error) {
	if err := s.RecordDeliveries(ctx, []record.ReportedDelivery{{Question: question, Delivery: d}}, at); err != nil {
		return nil, err
	}
	doc, _, _, err := s.getQuestion(ctx, question)
	if err != nil {
		return nil, fmt.Errorf("jsstore: deliveries of question %d: %w", question, err)
	}
	if doc == nil {
		return nil, nil
	}
	return doc.Deliveries, nil
}

// RecordDeliveries stores reports in order (the latest per question and
// platform wins), each question's in one compare-and-set of its document,
// many questions to a commit. A report on a question not on record is an
// error, as SQLite's foreign key makes it.
func (s *Store) RecordDeliveries(ctx context.Context, reports []record.ReportedDelivery, at time.Time) error {
	var order []int64
	byQuestion := map[int64][]bridge.Delivery{}
	for _, r := range reports {
		if _, ok := byQuestion[r.Question]; !ok {
			order = append(order, r.Question)
		}
		byQuestion[r.Question] = append(byQuestion[r.Question], r.Delivery)
	}
	for chunk := range slices.Chunk(order, deliveryQuestions) {
		err := retry(ctx, "record deliveries", func() error {
			docs, revs, err := s.getDocs(ctx, chunk)
			if err != nil {
				return err
			}
			t := &txn{}
			for i, d := range docs {
				if d == nil {
					return fmt.Errorf("%s delivery of question %d: %w", byQuestion[chunk[i]][0].Platform, chunk[i], record.ErrNotFound)
				}
				for _, dl := range byQuestion[chunk[i]] {
					d.setDelivery(dl)
				}
				if err := t.putQuestion(d, revs[i]); err != nil {
					return err
				}
			}
			return s.commit(ctx, t)
		})
		if err != nil {
			return fmt.Errorf("jsstore: record deliveries: %w", err)
		}
	}
	return nil
}

// setDelivery keeps a platform's report in place of its earlier one, the
// reports in platform order, as SQLite reads them back.
func (d *questionDoc) setDelivery(dl bridge.Delivery) {
	row := record.DeliveryRow{Platform: dl.Platform, OK: dl.OK, Failure: dl.Failure}
	if dl.Message != nil {
		row.Message = bridge.MessageRef{Channel: dl.Message.Channel, MessageID: dl.Message.MessageID, Thread: dl.Message.Thread}
	}
	row.Message.Platform = dl.Platform
	i, found := slices.BinarySearchFunc(d.Deliveries, dl.Platform, func(r record.DeliveryRow, p string) int {
		return cmp.Compare(r.Platform, p)
	})
	if found {
		d.Deliveries[i] = row
		return
	}
	d.Deliveries = slices.Insert(d.Deliveries, i, row)
}

// Messages lists the chat messages showing a question.
func (s *Store) Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error) {
	d, _, _, err := s.getQuestion(ctx, question)
	if err != nil {
		return nil, fmt.Errorf("jsstore: messages of question %d: %w", question, err)
	}
	if d == nil {
		return nil, nil
	}
	return d.messages(), nil
}

// JobThreads returns the threads in which the questions of a job were
// shown: one reference a platform, channel and thread, in that order.
func (s *Store) JobThreads(ctx context.Context, tenant, job string) ([]bridge.MessageRef, error) {
	docs, err := s.jobDocs(ctx, tenant, job)
	if err != nil {
		return nil, fmt.Errorf("jsstore: threads of job %s/%s: %w", tenant, job, err)
	}
	var out []bridge.MessageRef
	for _, rd := range docs {
		for _, r := range rd.d.Deliveries {
			if r.OK && r.Message.Thread != "" {
				out = append(out, bridge.MessageRef{Platform: r.Platform, Channel: r.Message.Channel, Thread: r.Message.Thread})
			}
		}
	}
	slices.SortFunc(out, func(a, b bridge.MessageRef) int {
		return cmp.Or(cmp.Compare(a.Platform, b.Platform), cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Thread, b.Thread))
	})
	return slices.Compact(out), nil
}
