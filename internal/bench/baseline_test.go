package bench

import (
	"context"
	"testing"
)

func BenchmarkJetStreamPublishSyncAlways(b *testing.B) {
	rate, err := JetStreamPublishRate(context.Background(), b.TempDir(), true, b.N, 256)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rate, "msgs/s")
}

func BenchmarkJetStreamPublishSyncInterval(b *testing.B) {
	rate, err := JetStreamPublishRate(context.Background(), b.TempDir(), false, b.N, 256)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rate, "msgs/s")
}

func BenchmarkSQLiteSingleRowCommit(b *testing.B) {
	c, err := SQLiteCommits(context.Background(), b.TempDir(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(c.PerSecond, "commits/s")
	b.ReportMetric(float64(c.P99.Microseconds()), "p99-µs")
}
