package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/principal"
)

// Principals tells who published a message that crossed into the service
// account from the agents' or the people's (principal.Guard).
type Principals interface {
	Check(h nats.Header, now time.Time) (*principal.Principal, error)
}

// intakeInFlight bounds the intake's requests forwarded at once.
const intakeInFlight = 1024

// serveIntake takes what agents and people publish (docs/design.md,
// "Principals on the bus"). It reaches the service account under
// principal.IntakePrefix stamped by NATS with the publisher's credential;
// the intake checks the credential, makes the message say what the
// credential allows (an agent's tenant and owner, a person's identity),
// and passes it on to the subject the contract names: a publish into its
// stream, acknowledged to the publisher only once JetStream has it, or a
// request to the gate or the API, whose reply it relays.
func (r *Runtime) serveIntake(ctx context.Context) (func(), error) {
	if r.o.Principals == nil {
		return func() {}, nil
	}
	sem := make(chan struct{}, intakeInFlight)
	sub, err := r.nc.QueueSubscribe(principal.IntakePrefix+".>", apiQueue, func(m *nats.Msg) {
		sem <- struct{}{}
		// Publishes are sent on in the order they came (an agent's
		// question before its cancel); their acks are awaited apart.
		wait := r.intake(ctx, m)
		go func() {
			defer func() { <-sem }()
			wait()
		}()
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, 64<<20)
	}
	if err == nil {
		err = r.nc.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: subscribe %s: %w", principal.IntakePrefix, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// intake passes one message on; the function it returns finishes it.
func (r *Runtime) intake(ctx context.Context, m *nats.Msg) func() {
	kind, what, rest, ok := intakeSubject(m.Subject)
	p, err := r.o.Principals.Check(m.Header, r.clock.Now())
	switch {
	case !ok:
		err = fmt.Errorf("%s is not a subject askbridge takes", m.Subject)
	case err == nil && p.Kind != kind:
		err = fmt.Errorf("credential %q is a %s's, not a %s's", p.Name, p.Kind, kind)
	}
	if err != nil {
		r.log.Warn("refused on the bus", "subject", m.Subject, "err", err)
		return func() { refuseIntake(m, what, err.Error()) }
	}
	body, err := stampBody(p, what, rest, m.Data)
	if err != nil {
		return func() { refuseIntake(m, what, err.Error()) }
	}
	out := &nats.Msg{Subject: "ask.v1." + what + "." + rest, Data: body, Header: nats.Header{}}
	for k, v := range m.Header {
		if k != server.ClientInfoHdr {
			out.Header[k] = v
		}
	}
	if to := out.Header.Get(bridge.HeaderDecidedTo); to != "" && !strings.HasPrefix(to, principal.InboxPrefix(p.Name)+".") {
		out.Header.Del(bridge.HeaderDecidedTo) // only the publisher's own inbox is told
	}
	switch what {
	case "gate", "api":
		return func() { r.relayRequest(ctx, m, out) }
	}
	if id := out.Header.Get(jetstream.MsgIDHeader); id != "" {
		// A stream drops an id it saw in the last 10 minutes whatever
		// published it: an id a person or an agent could guess (a chat
		// front-end's attempt-discord-<interaction>, another's question)
		// published first would make the real one a duplicate. Each
		// credential's ids are its own (names hold no dot).
		out.Header.Set(jetstream.MsgIDHeader, "in."+p.Name+"."+id)
	}
	ack, err := r.js.PublishMsgAsync(out)
	if err != nil {
		return func() { refuseIntake(m, what, "not stored: "+err.Error()) }
	}
	return func() {
		select {
		case pa := <-ack.Ok():
			data, _ := json.Marshal(pa)
			_ = m.Respond(data)
		case err := <-ack.Err():
			refuseIntake(m, what, "not stored: "+err.Error())
		case <-ctx.Done():
		}
	}
}

// intakeSubject splits askbridge.in.<kind>.<what>.<rest>.
func intakeSubject(s string) (kind, what, rest string, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(s, principal.IntakePrefix+"."), ".", 3)
	if len(parts) != 3 || !strings.HasPrefix(s, principal.IntakePrefix+".") {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// relayRequest asks the gate or the API and relays its reply.
func (r *Runtime) relayRequest(ctx context.Context, m *nats.Msg, out *nats.Msg) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reply, err := r.nc.RequestMsgWithContext(rctx, out)
	if err != nil {
		refuseIntake(m, "api", "unavailable: "+err.Error())
		return
	}
	_ = m.Respond(reply.Data)
}

// refuseIntake answers a refused message in the shape its sender reads:
// a JetStream API error for a publish, a gate refusal, an API error.
func refuseIntake(m *nats.Msg, what, why string) {
	var reply any
	switch what {
	case "gate":
		reply = bridge.GateReply{Code: bridge.GateInvalid, Reason: why}
	case "api":
		reply = map[string]string{"error": why}
	default:
		reply = map[string]any{"error": map[string]any{"code": 403, "description": why}}
	}
	data, _ := json.Marshal(reply)
	_ = m.Respond(data)
}

// stampBody makes a message say what its credential allows: an agent's
// messages are of its tenant, its questions have the owner it acts for,
// and its cancels name no person; a person's attempts and requests are
// theirs, with no roles of their own saying.
func stampBody(p *principal.Principal, what, rest string, data []byte) ([]byte, error) {
	tenant, _, _ := strings.Cut(rest, ".")
	if p.Kind == principal.KindAgent && what != "api" && tenant != p.Tenant {
		return nil, fmt.Errorf("credential %q is for tenant %s, not %s", p.Name, p.Tenant, tenant)
	}
	if what == "api" && p.Kind == principal.KindAgent && !slices.Contains(principal.AgentAPI, rest) {
		return nil, fmt.Errorf("an agent may not call %s", "ask.v1.api."+rest)
	}
	stamped := what == "api" || what == "cancel" || (what == "question" && p.ActsFor != "")
	if p.Kind == principal.KindAgent && !stamped {
		if what != "gate" && !slices.Contains(principal.AgentPublishes, what) {
			return nil, fmt.Errorf("%s %q may not publish %s", p.Kind, p.Name, "ask.v1."+what)
		}
		return data, nil // the subject names the tenant, and the body is the agent's to say
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil || body == nil {
		if len(strings.TrimSpace(string(data))) == 0 && what == "api" {
			body = map[string]json.RawMessage{}
		} else {
			return nil, fmt.Errorf("the body is not a JSON object")
		}
	}
	set := func(k, v string) {
		drop(body, k)
		body[k], _ = json.Marshal(v)
	}
	switch {
	case p.Kind == principal.KindAgent && what == "api":
		for k, t := range body {
			var named string
			if strings.EqualFold(k, "tenant") && (json.Unmarshal(t, &named) != nil || (named != "" && named != p.Tenant)) {
				return nil, fmt.Errorf("credential %q is for tenant %s only", p.Name, p.Tenant)
			}
		}
		set("tenant", p.Tenant)
		drop(body, "as", "roles")
	case p.Kind == principal.KindAgent && what == "question" && p.ActsFor != "":
		set("owner", p.ActsFor)
	case p.Kind == principal.KindAgent && what == "cancel":
		// Who cancels, with what roles, and where a refusal is told are
		// a front-end's to say, of a person's /ask cancel: an agent's
		// cancel is the agent's, which may end its own questions.
		drop(body, "by", "roles", "reply_to")
	case p.Kind == principal.KindPerson && what == "answer":
		set("by", p.Identity())
		set("via", bridge.PlatformCLI)
		drop(body, "by_name", "roles")
	case p.Kind == principal.KindPerson && what == "api":
		set("as", p.Identity())
		drop(body, "roles")
	default:
		return nil, fmt.Errorf("%s %q may not publish %s", p.Kind, p.Name, "ask.v1."+what)
	}
	return json.Marshal(body)
}

// drop removes the members of body that encoding/json would read into a
// field named one of names: it matches a key to a field whatever its case
// ("Roles", "ROLES", even "roleſ", whose long s folds to s), so deleting
// the lower-case key alone would leave a claim standing.
func drop(body map[string]json.RawMessage, names ...string) {
	for k := range body {
		for _, name := range names {
			if strings.EqualFold(k, name) {
				delete(body, k)
			}
		}
	}
}
