package bridge

import "sync"

// Memo remembers recent values by key, in two generations: when the
// current one fills, it becomes the previous one and the older one is
// dropped, so at most twice its size is kept and what is read often
// stays. It holds what a process did lately and may use again, never
// what only it knows: an adapter keeps what it just posted in one (a
// card's message, a job's thread) instead of a durable record per
// question, the durable copy being the runtime's (docs/design.md, "Card
// state"); the runtime the row ids of the questions it just recorded.
type Memo[V any] struct {
	mu        sync.Mutex
	max       int
	cur, prev map[string]V
}

// NewMemo returns a memo of generations of max keys.
func NewMemo[V any](max int) *Memo[V] {
	return &Memo[V]{max: max, cur: make(map[string]V)}
}

// Get returns the value of key, and whether there is one.
func (m *Memo[V]) Get(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.cur[key]; ok {
		return v, true
	}
	v, ok := m.prev[key]
	if ok {
		m.putLocked(key, v)
	}
	return v, ok
}

// Put sets the value of key.
func (m *Memo[V]) Put(key string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(key, v)
}

// Delete forgets key.
func (m *Memo[V]) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cur, key)
	delete(m.prev, key)
}

// Clear forgets everything, as a restart does.
func (m *Memo[V]) Clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cur, m.prev = make(map[string]V), nil
}

func (m *Memo[V]) putLocked(key string, v V) {
	if _, ok := m.cur[key]; !ok && len(m.cur) >= m.max {
		m.prev, m.cur = m.cur, make(map[string]V, m.max)
	}
	m.cur[key] = v
}
