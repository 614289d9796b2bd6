package main

import (
	"fmt"
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// questionRef is a question as a command line names it.
type questionRef struct {
	// Job is empty when the question was named alone: the runtime finds
	// it among the questions the CLI user may see, if its id is unique.
	Job, Question string
}

// questionForms says, for a usage line, how show, answer, decline and
// cancel name a question.
const questionForms = "JOB/QUESTION, or QUESTION alone when its id is unique, are read too"

// questionArgs reads the question a command names from the start of its
// arguments, in the one shape show, answer and decline share: JOB
// QUESTION, JOB/QUESTION, or QUESTION alone. rest is what follows it,
// at least minRest and at most maxRest words (maxRest < 0: any number),
// which usage errors call restName.
// A first argument holding "/" is JOB/QUESTION; otherwise JOB QUESTION
// when the arguments are enough for it and minRest more, else QUESTION
// alone. The ids are checked as the runtime checks them.
func questionArgs(args []string, restName string, minRest, maxRest int) (questionRef, []string, error) {
	var ref questionRef
	var rest []string
	jobNamed := true
	switch {
	case len(args) == 0:
		return ref, nil, fmt.Errorf("takes a job and a question")
	case strings.Contains(args[0], "/"):
		ref.Job, ref.Question, _ = strings.Cut(args[0], "/")
		rest = args[1:]
	case len(args) >= 2+minRest:
		ref.Job, ref.Question, rest = args[0], args[1], args[2:]
	default:
		ref.Question, rest, jobNamed = args[0], args[1:], false
	}
	switch {
	case len(rest) < minRest:
		return ref, nil, fmt.Errorf("takes a job, a question and %s", restName)
	case maxRest >= 0 && len(rest) > maxRest:
		return ref, nil, fmt.Errorf("takes a job and a question, not also %q", strings.Join(rest, " "))
	}
	if jobNamed {
		if err := bridge.CheckToken("job", ref.Job); err != nil {
			return ref, nil, err
		}
	}
	return ref, rest, bridge.CheckToken("question", ref.Question)
}

// jobArgs reads cancel's arguments: JOB alone (every question of the
// job), or a question in the forms of questionArgs but for QUESTION
// alone, which would read as a job.
func jobArgs(args []string) (questionRef, error) {
	switch {
	case len(args) == 1 && !strings.Contains(args[0], "/"):
		return questionRef{Job: args[0]}, bridge.CheckToken("job", args[0])
	case len(args) == 0 || len(args) > 2:
		return questionRef{}, fmt.Errorf("takes a job and, to end one question only, the question")
	}
	ref, _, err := questionArgs(args, "", 0, 0)
	return ref, err
}
