package config

import (
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

// TestPlatformsFollowTheConfiguration checks the runtime is told which
// chat platforms are on, with their default channels, and how a route
// names each.
func TestPlatformsFollowTheConfiguration(t *testing.T) {
	c := Config{SlackBotToken: "xoxb-test", SlackChannel: "C0123", DiscordChannel: "1234"}
	got := c.Platforms()
	if len(got) != 2 || got[0].Name != bridge.PlatformSlack || got[1].Name != bridge.PlatformDiscord {
		t.Fatalf("platforms %+v, want slack then discord", got)
	}
	if !got[0].On || got[0].DefaultChannel != "C0123" {
		t.Errorf("slack: on %v, channel %q; want on in C0123", got[0].On, got[0].DefaultChannel)
	}
	if got[1].On {
		t.Errorf("discord is on without a bot token")
	}
	route := &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "42"}}
	for _, c := range []struct {
		platform int
		named    bool
		channel  string
	}{{0, false, ""}, {1, true, "42"}} {
		named, channel := got[c.platform].Routed(route)
		if named != c.named || channel != c.channel {
			t.Errorf("%s: routed %v %q, want %v %q", got[c.platform].Name, named, channel, c.named, c.channel)
		}
	}
	if named, _ := got[0].Routed(nil); named {
		t.Errorf("a question without a route names slack")
	}
	// The runtime makes the adapters' consumers from the one definition
	// the adapters use.
	for _, p := range got {
		if want := bridge.EventConsumer(p.Name); p.Consumer.Durable != p.Name || p.Consumer.FilterSubject != want.FilterSubject || p.Consumer.AckWait != want.AckWait {
			t.Errorf("%s: consumer %+v, want bridge.EventConsumer's", p.Name, p.Consumer)
		}
	}
}
