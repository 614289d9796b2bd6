package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/testenv/cluster"
	"github.com/askbridge/askbridge/internal/testenv/poll"
	"github.com/askbridge/askbridge/internal/testenv/testmain"
)

// nodeEnv makes this test binary run one node (cluster.RunNode) instead of
// the tests, so the tests can SIGKILL real nats-server processes.
const nodeEnv = "ASK_CLUSTER_TEST_NODE"

func TestMain(m *testing.M) {
	if conf := os.Getenv(nodeEnv); conf != "" {
		if err := cluster.RunNode(context.Background(), conf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testmain.Main(m, 0)
}

func childNode(conf string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeEnv+"="+conf)
	return cmd
}

func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// An R3 stream keeps every acknowledged message when the node leading it is
// SIGKILLed, takes writes while it is down, and the node, restarted on its
// store directory, catches up with what it missed.
func TestR3StreamSurvivesANodeKilled(t *testing.T) {
	t.Parallel()
	c := cluster.StartT(t, cluster.Options{Command: childNode})
	// Generous: under CI's load a leader election after the kill takes
	// seconds, and each publish below has its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	js := connect(t, c.URLs())
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SURVIVE", Subjects: []string{"survive.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			// Retried with its message id while the stream elects a leader.
			poll.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_, err := js.Publish(pctx, "survive.x", []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprint("m-", i)))
				return err
			})
		}
	}
	publish(0, 50)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := -1
	for i, n := range c.Nodes() {
		if n.Name == info.Cluster.Leader {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatalf("stream leader %q is none of the nodes", info.Cluster.Leader)
	}
	t.Logf("%v: killing %s", time.Now().Format("15:04:05.000"), c.Node(leader).Name)
	c.Kill(leader)
	if c.Node(leader).Running() {
		t.Fatal("killed node still running")
	}
	publish(50, 100)
	t.Logf("%v: published while down; restarting", time.Now().Format("15:04:05.000"))
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	// Read on the restarted node alone: it has every message.
	only := connect(t, c.Node(leader).URL())
	poll.CheckFor(t, poll.Patience, 100*time.Millisecond, func() error {
		info, err := only.Stream(ctx, "SURVIVE")
		if err != nil {
			return err
		}
		st := info.CachedInfo()
		if st.State.Msgs != 100 {
			return fmt.Errorf("stream holds %d messages, want 100", st.State.Msgs)
		}
		for _, r := range st.Cluster.Replicas {
			if !r.Current || r.Offline {
				return fmt.Errorf("replica %s: current %v, offline %v", r.Name, r.Current, r.Offline)
			}
		}
		if len(st.Cluster.Replicas) != 2 {
			return fmt.Errorf("%d replicas besides the leader, want 2", len(st.Cluster.Replicas))
		}
		return nil
	})
	// The read itself may find the new consumer not running yet on its
	// node ("no responders"): it is read again, from the start.
	poll.CheckFor(t, poll.Patience, 100*time.Millisecond, func() error {
		cons, err := only.OrderedConsumer(ctx, "SURVIVE", jetstream.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		batch, err := cons.Fetch(100, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			return err
		}
		i := 0
		for m := range batch.Messages() {
			if got := string(m.Data()); got != fmt.Sprint(i) {
				t.Fatalf("message %d is %q", i, got)
			}
			i++
		}
		if i != 100 {
			return fmt.Errorf("read %d messages back, want 100 (%v)", i, batch.Error())
		}
		return nil
	})
}

// Two clients on two nodes write one key of an R3 bucket, each expecting the
// revision it read: exactly one wins, the other is told so, and every node
// then holds the winner's value.
func TestKVCompareAndSetAcrossNodes(t *testing.T) {
	t.Parallel()
	c := cluster.StartT(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := connect(t, c.Node(0).URL()), connect(t, c.Node(1).URL())
	kva, err := a.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "CAS", Replicas: 3, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	kvb, err := b.KeyValue(ctx, "CAS")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kva.Create(ctx, "q.1", []byte("pending"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := kvb.Get(ctx, "q.1")
	if err != nil || got.Revision() != rev {
		t.Fatalf("node n2 reads %v, %v; want revision %d", got, err, rev)
	}
	won, err := kva.Update(ctx, "q.1", []byte("answered by a"), rev)
	if err != nil {
		t.Fatalf("first compare-and-set: %v", err)
	}
	if _, err := kvb.Update(ctx, "q.1", []byte("answered by b"), rev); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("second compare-and-set on revision %d: %v; want jetstream.ErrKeyExists", rev, err)
	}
	for i, n := range c.Nodes() {
		kv, err := connect(t, n.URL()).KeyValue(ctx, "CAS")
		if err != nil {
			t.Fatal(err)
		}
		poll.CheckFor(t, poll.Patience, 20*time.Millisecond, func() error {
			e, err := kv.Get(ctx, "q.1")
			if err != nil {
				return err
			}
			if string(e.Value()) != "answered by a" || e.Revision() != won {
				return fmt.Errorf("node %d holds %q at revision %d", i+1, e.Value(), e.Revision())
			}
			return nil
		})
	}
}
