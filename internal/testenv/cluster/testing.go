package cluster

import (
	"context"
	"testing"
	"time"
)

// StartT starts a cluster in t.TempDir() (unless o.Dir is set), fails the
// test if it does not become ready, and stops it when the test ends.
func StartT(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}
