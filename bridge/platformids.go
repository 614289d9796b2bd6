package bridge

// ValidSlackID reports whether s looks like a Slack id (a channel such as
// C0123, a user such as U0123): upper-case letters and digits. Slack takes
// channel names in some calls, but askbridge sends only to ids, so a name
// is refused where it is given rather than failing later.
func ValidSlackID(s string) bool {
	if len(s) < 2 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ValidSnowflake reports whether s is a Discord id: 1 to 20 digits.
func ValidSnowflake(s string) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
