package record

import "errors"

// Errors callers decide on.
var (
	ErrNotFound   = errors.New("store: not found")
	ErrNotPending = errors.New("store: question is no longer pending")
	ErrDuplicate  = errors.New("store: attempt already recorded")
	ErrStepGone   = errors.New("store: ladder step already fired")
)
