package engine

import (
	"net/http"
	"time"
)

// Transport is the HTTP transport for a platform's API: one host (the
// platform's), many workers calling it at once. http.DefaultTransport
// keeps two idle connections a host, so under load most calls would dial
// a new connection and close it after; this one keeps one a worker.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 4 * DefaultWorkers
	t.MaxIdleConnsPerHost = 2 * DefaultWorkers
	t.IdleConnTimeout = 90 * time.Second
	return t
}
