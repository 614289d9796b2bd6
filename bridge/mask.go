package bridge

import (
	"regexp"
	"strings"
)

// Masked stands in for text that looked like a secret.
const Masked = "[masked]"

// The shapes of secrets MaskSecrets hides (docs/contract.md, "Notices").
// Each keeps what says where the secret was (the key, the scheme, the word
// Bearer) and hides the secret itself.
var (
	// scheme://user:password@host: the credentials go, the host stays.
	urlCredentials = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:]+:[^\s/@]+@`)
	// password=…, api_key=…, "client_secret": "…": the key stays. A key
	// followed by a colon counts only in JSON ("token": …), so prose such
	// as "the token: revoked" stays.
	keyValueSecret = regexp.MustCompile(`(?i)([A-Za-z0-9_-]*(?:password|passwd|token|secret|api[_-]?key|apikey|credential|private[_-]?key)(?:\s*=|"\s*:)\s*)("[^"]*"|'[^']*'|[^\s&;,"']+)`)
	// Authorization schemes: "Bearer <token>", "Basic <credentials>".
	authScheme = regexp.MustCompile(`(?i)\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/=-]+)`)
	// Slack tokens: xoxb-, xoxp-, xoxa-, xoxs-, xoxr-, xoxe-, xoxe.xoxp-, xapp-.
	slackToken = regexp.MustCompile(`\b(?:xox[a-z](?:\.xox[a-z])?|xapp)-[A-Za-z0-9-]{4,}`)
	// Three dot-separated base64url parts: JWTs (eyJ…) and Discord bot
	// tokens (user id . timestamp . HMAC).
	dottedToken = regexp.MustCompile(`\b(?:eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*|[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{20,})`)
	// Runs of 32 or more base64 or hex characters.
	longRun = regexp.MustCompile(`[A-Za-z0-9+/_=-]{32,}`)
	hexRun  = regexp.MustCompile(`^[0-9a-fA-F]{32,}$`)
)

// MaskSecrets replaces what looks like a secret in s with [masked]: Slack
// and Discord tokens, JWTs, Bearer and Basic credentials, the password of
// a URL, the value of a password=, token=, secret= or api_key= pair, and
// runs of 32 or more base64 or hex characters. Ordinary words, short hex
// such as a commit id, and URLs without credentials stay. It is applied
// to every text of a notice before it is stored, shown or logged; masking
// masked text changes nothing.
func MaskSecrets(s string) string {
	if s == "" {
		return s
	}
	s = urlCredentials.ReplaceAllString(s, "${1}"+Masked+"@")
	s = keyValueSecret.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValueSecret.FindStringSubmatch(m)
		value := strings.Trim(sub[2], `"'`)
		if value == Masked || value == "" {
			return m
		}
		if quote := sub[2][:1]; quote == `"` || quote == "'" {
			return sub[1] + quote + Masked + quote
		}
		return sub[1] + Masked
	})
	s = authScheme.ReplaceAllStringFunc(s, func(m string) string {
		sub := authScheme.FindStringSubmatch(m)
		if !credentialLike(sub[3]) {
			return m // "bearer of bad news"
		}
		return sub[1] + sub[2] + Masked
	})
	s = slackToken.ReplaceAllString(s, Masked)
	s = dottedToken.ReplaceAllString(s, Masked)
	return longRun.ReplaceAllStringFunc(s, func(m string) string {
		if hexRun.MatchString(m) || randomLooking(m) {
			return Masked
		}
		return m
	})
}

// credentialLike says a word after Bearer or Basic is a credential rather
// than prose: eight or more characters with a digit or a symbol in them,
// or upper case after the first letter.
func credentialLike(w string) bool {
	if len(w) < 8 || w == Masked {
		return false
	}
	return strings.ContainsAny(w, "0123456789._~+/=-") || strings.ToLower(w[1:]) != w[1:]
}

// randomLooking says a long run mixes upper case, lower case and digits,
// as base64 of random bytes does and paths and identifiers seldom do.
func randomLooking(s string) bool {
	var upper, lower, digit bool
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	return upper && lower && digit
}
