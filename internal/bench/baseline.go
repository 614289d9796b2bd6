// Package bench measures askbridge's raw baselines and its answer path, for
// `askbridge bench` and the Go benchmarks. Figures go to docs/benchmarks.md.
package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/askbridge/askbridge/bridge"
)

// JetStreamPublishRate publishes n small messages to a file-backed stream
// on an embedded server (syncAlways: fsync each write) with up to window
// acknowledgements outstanding, and returns messages per second.
func JetStreamPublishRate(ctx context.Context, dir string, syncAlways bool, n, window int) (float64, error) {
	nc, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats-baseline"), SyncAlways: syncAlways})
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	return PublishRate(ctx, nc.JS, 1, n, window)
}

// PublishRate publishes n small messages to a file-backed stream with
// replicas copies (made for the purpose, deleted after) with up to window
// acknowledgements outstanding, and returns messages per second: on a
// cluster, what JetStream alone does with R3 on that machine.
func PublishRate(ctx context.Context, js jetstream.JetStream, replicas, n, window int) (float64, error) {
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BASELINE", Subjects: []string{"baseline.>"}, Storage: jetstream.FileStorage, Replicas: replicas}); err != nil {
		return 0, err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), "BASELINE")
	data := make([]byte, 400)
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, window)
	for i := range n {
		f, err := js.PublishAsync("baseline.x", data, jetstream.WithMsgID(fmt.Sprintf("m-%d", i)))
		if err != nil {
			return 0, err
		}
		futures = append(futures, f)
		if len(futures) == window || i == n-1 {
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return 0, err
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}
			futures = futures[:0]
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// Commits is what SQLiteCommits measured.
type Commits struct {
	PerSecond float64
	// P50 and P99 of one commit: an answer acknowledged after its commit
	// cannot be acknowledged faster than the disk syncs.
	P50, P99 time.Duration
}

// SQLiteCommits commits n single-row transactions with askbridge's
// pragmas (WAL, synchronous=FULL) and measures their rate and latency.
func SQLiteCommits(ctx context.Context, dir string, n int) (Commits, error) {
	u := url.URL{Scheme: "file", Opaque: url.PathEscape(filepath.Join(dir, "baseline.db"))}
	db, err := sql.Open("sqlite", u.String()+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return Commits{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		return Commits{}, err
	}
	st, err := db.PrepareContext(ctx, "INSERT INTO t (v) VALUES (?)")
	if err != nil {
		return Commits{}, err
	}
	defer st.Close()
	took := make([]time.Duration, 0, n)
	start := time.Now()
	for range n {
		t0 := time.Now()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return Commits{}, err
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, "an answer of a typical size, a few dozen bytes"); err != nil {
			tx.Rollback()
			return Commits{}, err
		}
		if err := tx.Commit(); err != nil {
			return Commits{}, err
		}
		took = append(took, time.Since(t0))
	}
	c := Commits{PerSecond: float64(n) / time.Since(start).Seconds()}
	if n > 0 {
		slices.Sort(took)
		c.P50, c.P99 = took[(n-1)*50/100], took[(n-1)*99/100]
	}
	return c, nil
}

// StreamWrites is each stream's last sequence: the messages it has taken
// so far. Two readings apart give what a run wrote to each stream, which
// on a cluster is what every node stores and replicates.
func StreamWrites(ctx context.Context, js jetstream.JetStream) (map[string]uint64, error) {
	out := map[string]uint64{}
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		out[info.Config.Name] = info.State.LastSeq
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("bench: list streams: %w", err)
	}
	return out, nil
}

// APIRequests is how many JetStream API requests the account has made:
// two readings apart give a run's, each of them work for the meta leader
// or a stream's leader (a consumer made for a watch, a message read, a
// purge).
func APIRequests(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	info, err := js.AccountInfo(ctx)
	if err != nil {
		return 0, fmt.Errorf("bench: account info: %w", err)
	}
	return info.API.Total, nil
}
