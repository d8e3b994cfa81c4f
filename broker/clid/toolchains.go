package clid

import (
	"fmt"
	"strconv"
	"strings"
	"warrant/broker/cli"

	"warrant/broker"
	"warrant/broker/view"
)

// maxToolchainPrograms bounds the programs one `broker toolchains` names.
const maxToolchainPrograms = 64

// runToolchains says which toolchain an action of each program would get
// (broker.Toolchains): its layout and root, granted read-only, the
// variables it sets and why; without programs, for a program of each
// toolchain at the known places. It reads the state directory (the
// declared variables) and needs no broker.
func runToolchains(e *cli.Env, args []string) error {
	pf := e.PageFlags()
	progs, err := e.ParseRange(args, 0, maxToolchainPrograms)
	if err != nil {
		return err
	}
	if err := pf.Check(0); err != nil {
		return err
	}
	list, err := broker.Toolchains(e.State, progs)
	if err != nil {
		return err
	}
	page, err := cli.PageOf(list, pf, func(t broker.ToolchainInfo) string { return t.Program })
	if err != nil {
		return err
	}
	if e.JSON {
		items := make([]toolchainItem, len(page.Items))
		for i, t := range page.Items {
			items[i] = toolchainItemOf(t)
		}
		return e.PrintJSON("warrant.toolchains/v1", view.List[toolchainItem]{Items: items, Truncated: page.Truncated, NextAfter: page.NextAfter})
	}
	if len(list) == 0 {
		fmt.Fprintln(e.Stdout, "No toolchain at the known places (rustup, pyenv, nvm, Volta, SDKMAN!, asdf, mise, Homebrew, /usr/local/go, ~/sdk, /usr/lib/jvm…).")
	}
	for _, t := range page.Items {
		writeToolchain(e, t)
	}
	e.WriteMore("toolchains", page.NextAfter)
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

func writeToolchain(e *cli.Env, t broker.ToolchainInfo) {
	if t.Toolchain == nil {
		fmt.Fprintf(e.Stdout, "%s: no toolchain\n    %s\n", t.Program, t.Why)
		return
	}
	grant := "added to the read paths"
	if !t.Added {
		grant = "the read paths cover it already"
	}
	tc := t.Toolchain
	fmt.Fprintf(e.Stdout, "%s: %s %s at %s, read-only (%s)\n", t.Program, tc.Kind, tc.Name, tc.Root, grant)
	if len(t.Env) > 0 {
		var set []string
		for _, kv := range t.Env {
			set = append(set, kv.Name+"="+strconv.Quote(kv.Value))
		}
		fmt.Fprintf(e.Stdout, "    sets %s\n", strings.Join(set, " "))
	}
	fmt.Fprintf(e.Stdout, "    %s\n", t.Why)
}
