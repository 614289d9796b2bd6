package main
import (
 _ "github.com/bwmarrin/discordgo"
 _ "github.com/chromedp/chromedp"
 _ "github.com/gorilla/websocket"
 _ "github.com/kelseyhightower/envconfig"
 _ "github.com/nats-io/nats-server/v2/server"
 _ "github.com/nats-io/nats.go"
 _ "github.com/nats-io/nats.go/jetstream"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/slack-go/slack"
 _ "github.com/slack-go/slack/socketmode"
 _ "modernc.org/sqlite"
)
func main(){}
