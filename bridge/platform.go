package bridge

import "github.com/nats-io/nats.go/jetstream"

// Platform is a chat platform that can show questions, as the service
// describes it at start (config.ChatPlatforms): the runtime knows none by
// name, and says in these words why a question could not be shown.
type Platform struct {
	// Name is the platform as routes, delivery reports and vias name it.
	Name string
	// On says the platform's front-end runs and shows questions.
	On bool
	// DefaultChannel is where questions without a route for it go; empty
	// means only routed questions are shown there.
	DefaultChannel string
	// Routed reads the platform's part of a question's route: whether the
	// route names the platform, and the channel it gives ("" for none).
	Routed func(*Route) (named bool, channel string)
	// Connector names the platform and the setting that switches it on,
	// for a question routed to it while it is off.
	Connector string
	// MissingChannel names what a question routed to it lacks when it is
	// on with no default channel: the route's field and the setting.
	MissingChannel string
	// Consumer is the durable consumer on the events stream through
	// which the platform's adapter reads events (EventConsumer).
	// While the platform is on, the runtime makes it before it publishes,
	// and asks the platform's pending questions again when it is made
	// anew (runtime/eventconsumers.go). An empty Durable: the runtime keeps
	// none.
	Consumer jetstream.ConsumerConfig
}

// RoutedBy reports whether q's route names p, and the channel it gives.
func (p Platform) RoutedBy(q *Question) (named bool, channel string) {
	if p.Routed == nil || q.Route == nil {
		return false, ""
	}
	return p.Routed(q.Route)
}
