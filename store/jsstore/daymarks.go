package jsstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// dayMarks are the keys questions wrote when the clarification measures
// found a window's jobs by day: askday.<day> and asked.<day>.<tenant>.<job>.
// Nothing reads them since the measures read the state view, and each
// would stay a subject every server of the bucket keeps in memory.
var dayMarks = []string{"askday.>", "asked.>"}

// dropDayMarks purges the day marks, a request each that the server
// answers at once when there are none, so each start of a replica does it:
// a replica of an older build may still write them while the others are
// upgraded, and the next start takes those too.
func (s *Store) dropDayMarks(ctx context.Context) error {
	for _, f := range dayMarks {
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subjectPrefix+f)); err != nil {
			return fmt.Errorf("jsstore: purge the day marks %s: %w", f, err)
		}
	}
	return nil
}
