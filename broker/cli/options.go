package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"warrant/broker/client"

	"warrant/wire"
)

// BrokerOptions configure the broker a command opens: `serve`'s, and
// `run`'s embedded one.
type BrokerOptions struct {
	Launcher    string     // --launcher; "": launcherPath's default
	ReadPaths   StringList // --read-path (serve only)
	Env         StringList // --env NAME=VALUE, after <state>/env
	CargoTarget bool       // --cargo-target-cache
	Witness     string     // --witness DIR (serve only)
	Warm        bool       // keep a launcher started ahead (serve: a daemon runs many actions)
	WriteHints  bool       // --write-hints
}

// BrokerFlags registers the flags serve and run share for the broker they
// open.
func (e *Env) BrokerFlags(o *BrokerOptions) {
	e.Flags.Var(&o.Env, "env", "`NAME=VALUE`: a toolchain variable for every target, shown on the card (repeatable; after <state>/env)")
	e.Flags.BoolVar(&o.CargoTarget, "cargo-target-cache", false, "point CARGO_TARGET_DIR into each workspace's cache")
	e.Flags.BoolVar(&o.WriteHints, "write-hints", false, "record a target's writes outside the writable scope as hints (each write-intent open then waits for the broker: slower builds)")
}

// DialFor dials the daemon on the state directory for a command that
// otherwise opens a broker configured by o (run, mcp): nil, nil when none
// answers. A daemon has its own configuration: o's --env or
// --cargo-target-cache against one is a usage error rather than silently
// ignored.
func (e *Env) DialFor(o BrokerOptions) (*client.Client, error) {
	cl, err := client.Dial(e.State)
	if err != nil {
		return nil, nil
	}
	if len(o.Env) > 0 || o.CargoTarget || o.WriteHints {
		cl.Close()
		return nil, UsageError{fmt.Sprintf("--env, --cargo-target-cache and --write-hints configure the embedded broker, but a daemon answers on %s: "+
			"declare them where it starts (broker serve --env NAME=VALUE --write-hints, or %s)", e.State, filepath.Join(e.State, "env"))}
	}
	return cl, nil
}

// StringList is a repeatable flag's values.
type StringList []string

func (s *StringList) String() string     { return strings.Join(*s, ",") }
func (s *StringList) Set(v string) error { *s = append(*s, v); return nil }

// ToolchainLine is the card's line on the executable's toolchain.
func ToolchainLine(tc *wire.Toolchain) string {
	line := fmt.Sprintf("%s %s at %s, read-only", tc.Kind, tc.Name, tc.Root)
	if len(tc.Vars) > 0 {
		line += "; sets " + strings.Join(tc.Vars, " ")
	}
	return line
}
