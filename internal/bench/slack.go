package bench

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
)

// SlackPostRate posts n messages (blocks and text, as a card would carry)
// with slack-go's chat.postMessage to the Slack Web API at apiURL (ending
// in "/") from workers goroutines, each to a channel of its own, and
// returns messages per second: the most a fake Slack and the client
// library manage on this machine, with nothing of askbridge in between.
func SlackPostRate(ctx context.Context, apiURL string, n, workers int, blocks []slack.Block, text string) (float64, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}, Timeout: 10 * time.Second}
	api := slack.New("xoxb-baseline", slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(client))
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			channel := fmt.Sprintf("CBASE%04d", w)
			for int(next.Add(1)) <= n && ctx.Err() == nil {
				_, _, err := api.PostMessageContext(ctx, channel, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, fmt.Errorf("chat.postMessage: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
