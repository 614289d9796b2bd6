package config

import (
	"github.com/askbridge/askbridge/bridge"
)

// ChatPlatforms are the chat platforms askbridge can show questions on, all
// switched off, in the order the runtime names them: how a question's route
// names each, and the settings that switch it on and give it a channel, in
// the words an agent reads when its question could not be shown
// (docs/contract.md); and the consumer its adapter reads events through,
// which the runtime makes before it publishes (docs/design.md).
func ChatPlatforms() []bridge.Platform {
	return []bridge.Platform{
		{
			Name: bridge.PlatformSlack,
			Routed: func(r *bridge.Route) (bool, string) {
				if r == nil || r.Slack == nil {
					return false, ""
				}
				return true, r.Slack.Channel
			},
			Connector:      "Slack (ASK_SLACK_BOT_TOKEN)",
			MissingChannel: "route.slack.channel (ASK_SLACK_CHANNEL is not set)",
			Consumer:       bridge.EventConsumer(bridge.PlatformSlack),
		},
		{
			Name: bridge.PlatformDiscord,
			Routed: func(r *bridge.Route) (bool, string) {
				if r == nil || r.Discord == nil {
					return false, ""
				}
				return true, r.Discord.ChannelID
			},
			Connector:      "Discord (ASK_DISCORD_BOT_TOKEN)",
			MissingChannel: "route.discord.channel_id (ASK_DISCORD_CHANNEL is not set)",
			Consumer:       bridge.EventConsumer(bridge.PlatformDiscord),
		},
	}
}

// Platforms are ChatPlatforms as this configuration switches them on, with
// their default channels: what the runtime is told at start.
func (c *Config) Platforms() []bridge.Platform {
	out := ChatPlatforms()
	for i := range out {
		switch out[i].Name {
		case bridge.PlatformSlack:
			out[i].On, out[i].DefaultChannel = c.SlackEnabled(), c.SlackChannel
		case bridge.PlatformDiscord:
			out[i].On, out[i].DefaultChannel = c.DiscordEnabled(), c.DiscordChannel
		}
	}
	return out
}
