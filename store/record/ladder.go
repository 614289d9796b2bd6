package record

import (
	"time"
)

// DueStep is a ladder step (or the timeout) of a pending question.
type DueStep struct {
	Question int64
	Index    int
	Target   string
	Due      time.Time
}
