package discord

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkInteractionResponse measures the bot's initial response to a
// button click, from sending the signed interaction to reading the
// response: the signature checked, the interaction recorded in
// SeenBucket, the card looked up and the answer attempt published to
// JetStream. Discord wants that response within 3 seconds; the p50 and
// p99 reported here are the figures (docs/benchmarks.md). No test asserts
// them: on a shared machine that would measure the machine.
//
//	go test -run '^$' -bench BenchmarkInteractionResponse -benchtime 500x ./bots/discord/
func BenchmarkInteractionResponse(b *testing.B) {
	h := start(b, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	blue := findComponent(b, msg, "blue")["custom_id"].(string)
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		body, err := json.Marshal(h.click(kevin, blue))
		if err != nil {
			b.Fatal(err)
		}
		began := time.Now()
		status, out := h.post(body, began, h.priv)
		took = append(took, time.Since(began))
		if status != http.StatusOK {
			b.Fatalf("interaction: HTTP %d: %s", status, out)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	at := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
