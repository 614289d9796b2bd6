package card

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// QueueTable is a job's queue as an aligned table, the same for the CLI,
// /ask queue in Slack and in Discord: one line a question, in queue order,
// with its priority, staleness (ladder rounds without an answer), how long
// it has waited, the tools it blocks and what it asks (for a question the
// reader may not read, that it waits).
func QueueTable(items []bridge.QueueItem, now time.Time, width int) string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tQUESTION\tPRIORITY\tSTALENESS\tWAITING\tBLOCKS\tASKS")
	for i, it := range items {
		blocks := strings.Join(it.BlockedTools, ",")
		if blocks == "" {
			blocks = "-"
		}
		text := oneLine(it.Text, width)
		switch {
		case it.Hidden && it.Restricted:
			text = "(restricted: you may see only that it waits)"
		case it.Hidden:
			text = "(you may see only that it waits)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", i+1, it.QuestionID, it.Priority, it.Staleness, Age(now.Sub(it.AskedAt)), blocks, text)
	}
	tw.Flush()
	return strings.TrimRight(sb.String(), "\n")
}

// Age is a waiting time in at most two units: "45s", "12m", "2h 5m", "3d 1h".
func Age(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}
