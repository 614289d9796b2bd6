package jsstore_test

import (
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/jsstore"
)

// The JetStream store is a runtime store, as the SQLite one is.
var _ runtime.Store = (*jsstore.Store)(nil)
