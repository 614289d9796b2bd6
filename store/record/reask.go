package record

// ReaskCursor is where a walk over the pending questions stands: after
// this tenant's question of this id (the order of the index
// questions_by_state). The zero cursor is the start.
type ReaskCursor struct {
	Tenant string
	ID     int64
}
