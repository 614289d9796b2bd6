package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// queue prints a job's pending questions in queue order (docs/contract.md
// "The queue and nudges").
func (c *cli) queue(ctx context.Context, args []string) int {
	fs, url := c.flags("queue")
	tenant := fs.String("tenant", "", "the job's tenant (default: the one tenant where you see the job)")
	asJSON := fs.Bool("json", false, "print the API's reply, in JSON")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.usageError("queue", "takes one job: JOB (or TENANT/JOB)")
	}
	job := fs.Arg(0)
	if t, j, ok := strings.Cut(job, "/"); ok && *tenant == "" {
		*tenant, job = t, j
	}
	if err := checkTokens([]string{job}, "job"); err != nil {
		return c.usageError("queue", "%v", err)
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	var reply bridge.QueueReply
	if err := c.request(nc, bridge.APIQueue, bridge.QueueRequest{Tenant: *tenant, JobID: job, As: c.identity}, &reply); err != nil {
		return c.fail("%v", err)
	}
	if reply.Error != "" {
		return c.fail("%s", reply.Error)
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(reply)
		return exitOK
	}
	if len(reply.Questions) == 0 {
		fmt.Fprintf(c.stdout, "No questions wait in job %s that you can see.\n", job)
		return exitOK
	}
	for i := range reply.Questions {
		reply.Questions[i].Text = printable(reply.Questions[i].Text, false)
	}
	fmt.Fprintln(c.stdout, card.QueueTable(reply.Questions, time.Now(), 60))
	return exitOK
}
