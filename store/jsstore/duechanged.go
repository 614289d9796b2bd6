package jsstore

import "time"

// DueChanged returns a channel that hears, without blocking the watch,
// whenever the earliest due step changes: made earlier by a question one
// replica asked, or later once one took it. The runtime's ladder then
// reads NextDue again instead of sleeping until the time it read before
// (record.DueWatcher). Each call follows the watch until the store
// closes; the runtime calls it once.
func (s *Store) DueChanged() <-chan struct{} {
	ch := make(chan struct{}, 1)
	go s.signalDue(ch)
	return ch
}

// signalDue sends on ch each time the heap's earliest due time moves.
func (s *Store) signalDue(ch chan<- struct{}) {
	var last time.Time
	had := false
	for {
		if err := s.startView(&s.due.keyView); err != nil {
			select {
			case <-s.bg.Done():
				return
			case <-time.After(time.Second): // NATS away: try again
			}
			continue
		}
		dw := &s.due
		dw.mu.Lock()
		moved := dw.moved
		has := len(dw.heap) > 0
		var first time.Time
		if has {
			first = dw.heap[0].due
		}
		dw.mu.Unlock()
		if has != had || !first.Equal(last) {
			had, last = has, first
			select {
			case ch <- struct{}{}:
			default: // one waiting wake-up reads the latest
			}
		}
		select {
		case <-s.bg.Done():
			return
		case <-moved:
		}
	}
}
