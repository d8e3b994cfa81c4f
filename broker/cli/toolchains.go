package cli

import (
	"fmt"
	"strconv"
	"strings"

	"warrant/broker"
	"warrant/broker/view"
	"warrant/wire"
)

// maxToolchainPrograms bounds the programs one `broker toolchains` names.
const maxToolchainPrograms = 64

// runToolchains says which toolchain an action of each program would get
// (broker.Toolchains): its layout and root, granted read-only, the
// variables it sets and why; without programs, for a program of each
// toolchain at the known places. It reads the state directory (the
// declared variables) and needs no broker.
func runToolchains(e *env, args []string) error {
	pf := e.pageFlags()
	progs, err := e.parseRange(args, 0, maxToolchainPrograms)
	if err != nil {
		return err
	}
	if err := pf.check(0); err != nil {
		return err
	}
	list, err := broker.Toolchains(e.state, progs)
	if err != nil {
		return err
	}
	page, err := pageOf(list, pf, func(t broker.ToolchainInfo) string { return t.Program })
	if err != nil {
		return err
	}
	if e.json {
		items := make([]toolchainItem, len(page.Items))
		for i, t := range page.Items {
			items[i] = toolchainItemOf(t)
		}
		return e.printJSON("warrant.toolchains/v1", view.List[toolchainItem]{Items: items, Truncated: page.Truncated, NextAfter: page.NextAfter})
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No toolchain at the known places (rustup, pyenv, nvm, Volta, SDKMAN!, asdf, mise, Homebrew, /usr/local/go, ~/sdk, /usr/lib/jvm…).")
	}
	for _, t := range page.Items {
		writeToolchain(e, t)
	}
	e.writeMore("toolchains", page.NextAfter)
	return nil
}

// toolchainItem is one program's toolchain under the JSON convention:
// toolchain and read_path are null when there is none.
type toolchainItem struct {
	Program   string          `json:"program"`
	Toolchain *view.Toolchain `json:"toolchain"`
	ReadPath  *string         `json:"read_path"` // "added", or "covered" by the read paths already
	Env       []view.EnvVar   `json:"env"`
	Why       string          `json:"why"`
}

func toolchainItemOf(t broker.ToolchainInfo) toolchainItem {
	it := toolchainItem{Program: t.Program, Toolchain: view.ToolchainOf(t.Toolchain), Env: []view.EnvVar{}, Why: t.Why}
	if t.Toolchain != nil {
		it.ReadPath = view.Text(readPathWord(t.Added))
	}
	for _, kv := range t.Env {
		it.Env = append(it.Env, view.EnvVar{Name: kv.Name, Value: kv.Value})
	}
	return it
}

func readPathWord(added bool) string {
	if added {
		return "added"
	}
	return "covered"
}

func writeToolchain(e *env, t broker.ToolchainInfo) {
	if t.Toolchain == nil {
		fmt.Fprintf(e.stdout, "%s: no toolchain\n    %s\n", t.Program, t.Why)
		return
	}
	grant := "added to the read paths"
	if !t.Added {
		grant = "the read paths cover it already"
	}
	tc := t.Toolchain
	fmt.Fprintf(e.stdout, "%s: %s %s at %s, read-only (%s)\n", t.Program, tc.Kind, tc.Name, tc.Root, grant)
	if len(t.Env) > 0 {
		var set []string
		for _, kv := range t.Env {
			set = append(set, kv.Name+"="+strconv.Quote(kv.Value))
		}
		fmt.Fprintf(e.stdout, "    sets %s\n", strings.Join(set, " "))
	}
	fmt.Fprintf(e.stdout, "    %s\n", t.Why)
}

// toolchainLine is the card's line on the executable's toolchain.
func toolchainLine(tc *wire.Toolchain) string {
	line := fmt.Sprintf("%s %s at %s, read-only", tc.Kind, tc.Name, tc.Root)
	if len(tc.Vars) > 0 {
		line += "; sets " + strings.Join(tc.Vars, " ")
	}
	return line
}
