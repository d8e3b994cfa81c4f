package clid

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"warrant/broker/cli"
	"warrant/broker/client"
	"warrant/broker/internal/goals"
	"warrant/broker/view"
	"warrant/wire"
)

// runGoals is `broker goals create|show|verify|revise|pause|resume|cancel|
// attest|list`. create and revise take a goal document (a JSON file,
// docs/goals.md); create fills in a missing workspace with --workspace
// (default: the current directory). verify exits 0 only when the verdict
// it made is VERIFIED_DONE, and 1 otherwise, so a script can gate on it.
func runGoals(e *cli.Env, args []string) error {
	workspace := e.Flags.String("workspace", "", "create: the workspace, when the document names none (default: the current directory)")
	title := e.Flags.String("title", "", "create: the title, when the document has none")
	pf := e.PageFlags()
	pos, err := e.ParseRange(args, 1, 4)
	if err != nil {
		return err
	}
	verb, rest := pos[0], pos[1:]
	arity := map[string]int{"create": 1, "show": 1, "verify": 1, "revise": 2, "pause": 1, "resume": 1, "cancel": 1, "attest": 3, "list": 0}
	n, ok := arity[verb]
	if !ok {
		return cli.UsageError{Msg: fmt.Sprintf("unknown goals command %q", verb)}
	}
	if verb == "revise" && len(rest) == 1 {
		n = 1 // a new revision that keeps the document
	}
	if verb != "list" && pf.Given(e) {
		return cli.UsageError{Msg: "--limit and --after page goals list only"}
	}
	if len(rest) != n {
		return cli.UsageError{Msg: fmt.Sprintf("goals %s: want %d argument(s), got %d", verb, n, len(rest))}
	}
	cl, err := e.Dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	var reply *wire.GoalReply
	switch verb {
	case "list":
		return listGoals(e, cl, pf)
	case "create":
		spec, err := readGoalFile(rest[0], *workspace)
		if err != nil {
			return err
		}
		reply, err = cl.CreateGoal(*title, spec)
		if err != nil {
			return err
		}
	case "revise":
		spec := ""
		if len(rest) == 2 {
			if spec, err = readGoalFile(rest[1], ""); err != nil {
				return err
			}
		}
		if reply, err = cl.ReviseGoal(rest[0], spec); err != nil {
			return err
		}
	case "show":
		if reply, err = cl.ShowGoal(rest[0]); err != nil {
			return err
		}
	case "verify":
		if reply, err = cl.VerifyGoal(rest[0]); err != nil {
			return err
		}
	case "attest":
		if reply, err = cl.AttestGoal(rest[0], rest[1], rest[2]); err != nil {
			return err
		}
	default:
		state := map[string]wire.GoalState{"pause": wire.GoalPaused, "resume": wire.GoalActive, "cancel": wire.GoalCancelled}[verb]
		if reply, err = cl.SetGoalState(rest[0], state); err != nil {
			return err
		}
	}
	v, err := goals.DecodeView(reply.View)
	if err != nil {
		return err
	}
	if e.JSON {
		err = e.PrintJSON("warrant.goals."+verb+"/v1", goalOf(v))
	} else {
		v.Write(e.Stdout)
	}
	if err == nil && verb == "verify" && v.Status != goals.StatusDone {
		return cli.ExitStatus(cli.ExitFailed)
	}
	return err
}

// readGoalFile reads a goal document and fills in its workspace when it
// names none (create only: a revision keeps its own).
func readGoalFile(path, workspace string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the goal document: %w", err)
	}
	if len(b) > wire.MaxGoalJSON {
		return "", cli.UsageError{Msg: fmt.Sprintf("%s is %d bytes; a goal document is at most %d", path, len(b), wire.MaxGoalJSON)}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", cli.UsageError{Msg: fmt.Sprintf("%s is not a JSON object: %v", path, err)}
	}
	if _, ok := doc["workspace"]; ok || workspace == "-" {
		return string(b), nil
	}
	if workspace == "" {
		if workspace, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	if workspace, err = filepath.Abs(workspace); err != nil {
		return "", err
	}
	doc["workspace"], _ = json.Marshal(workspace)
	out, err := json.Marshal(doc)
	return string(out), err
}

// goal is a goal's view under the JSON convention (docs/json.md): what
// every `broker goals VERB --json` but list prints. Document is the goal
// document of the revision (its own schema, docs/goals.md) and Verdict
// the signed goal-verdict.v1 predicate in its own encoding (camelCase,
// times as the receipts' {monoNs, wallUnixNs}): signed bodies keep their
// schema, as receipts show's receipt does. What does not exist is null.
type goal struct {
	Goal            string          `json:"goal"`
	Title           string          `json:"title"`
	Revision        uint64          `json:"revision"`
	State           string          `json:"state"`
	Status          string          `json:"status"`
	GoalDigest      *string         `json:"goal_digest"`
	Document        json.RawMessage `json:"document"`
	Verdict         json.RawMessage `json:"verdict"`
	VerdictLogIndex *int64          `json:"verdict_log_index"`
}

func goalOf(v *goals.View) goal {
	g := goal{Goal: v.Goal, Title: v.Title, Revision: v.Revision, State: v.State, Status: v.Status,
		GoalDigest: view.Text(v.GoalDigest), Document: rawOrNull(v.Document), Verdict: rawOrNull(v.Verdict),
		VerdictLogIndex: v.VerdictIndex}
	return g
}

// rawOrNull is v's JSON, or null when v is nil.
func rawOrNull[T any](v *T) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("clid: internal error: encode a goal's view: " + err.Error())
	}
	return b
}

// goalEntry is one goal of `broker goals list --json`.
type goalEntry struct {
	Goal     string `json:"goal"`
	Revision uint64 `json:"revision"`
	State    string `json:"state"`
}

// listGoals lists the goals, paged by --limit and --after (the cursor is
// a goal id) over what the broker answers: at most wire.MaxList goals.
func listGoals(e *cli.Env, cl *client.Client, pf cli.PageFlags) error {
	if err := pf.Check(0); err != nil {
		return err
	}
	l, err := cl.ListGoals()
	if err != nil {
		return err
	}
	all := make([]goalEntry, 0, len(l.Goals))
	for _, g := range l.Goals {
		all = append(all, goalEntry{g.Goal, g.Revision, g.State.String()})
	}
	page, err := cli.PageOf(all, pf, func(g goalEntry) string { return g.Goal })
	if err != nil {
		return err
	}
	// The broker answers at most wire.MaxList goals: a listing cut there
	// says so, even on its last page, rather than stop early in silence.
	capped := len(all) == wire.MaxList && !page.Truncated
	if capped {
		page.Truncated = true
	}
	if e.JSON {
		return e.PrintJSON("warrant.goals.list/v1", page)
	}
	if capped {
		defer fmt.Fprintf(e.Stderr, "broker goals list: the broker lists at most %d goals; more may exist beyond these\n", wire.MaxList)
	}
	for _, r := range page.Items {
		fmt.Fprintf(e.Stdout, "%s  revision %d  %s\n", r.Goal, r.Revision, r.State)
	}
	e.WriteMore("goals list", page.NextAfter)
	return nil
}
