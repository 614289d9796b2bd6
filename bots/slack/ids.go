package slack

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
)

// threadOf is the thread the card lives in, for ephemeral fallbacks.
func threadOf(cb *slack.InteractionCallback, msgTS string) string {
	if cb.Container.ThreadTs != "" {
		return cb.Container.ThreadTs
	}
	if cb.Message.ThreadTimestamp != "" {
		return cb.Message.ThreadTimestamp
	}
	return msgTS
}

// safeID keeps an id from Slack as it is when it is made of letters,
// digits, '.', '-' and '_' (as Slack's ids are), and otherwise replaces it
// by a hash of itself: it becomes part of a Nats-Msg-Id header, which
// cannot carry spaces or control characters, and must stay the same for
// Slack's retries of one interaction.
func safeID(s string) string {
	ok := s != "" && len(s) <= 200
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if ok {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:16])
}

func validTS(s string) bool {
	_, err := blockkit.ParseModalMeta("a.b.c.0||" + s)
	return err == nil
}
