package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"warrant/broker/lifecycle"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// judge turns what the target printed and what the host objects show into
// the report's checks. A check whose line is missing fails.
func (h *probeHost) judge(run lifecycle.Result, out string) []Check {
	lines := probeprog.ParseLines(out)
	line := func(who, check string) *probeprog.Line {
		for i := range lines {
			if lines[i].Who == who && lines[i].Check == check {
				return &lines[i]
			}
		}
		return nil
	}
	checks := []Check{launchCheck(run)}
	allowed := func(name, from string, ok bool, evidence string) {
		obs := "failed"
		if ok {
			obs = "succeeded"
		}
		checks = append(checks, Check{Name: name, From: from, Allowed: true, Expected: "succeeds",
			Observed: obs, Pass: ok, Evidence: evidence})
	}
	l := line(probeprog.Target, probeprog.ReadInput)
	allowed(probeprog.ReadInput, probeprog.Target, l != nil && l.Done && l.Detail == h.input,
		"target: "+says(l)+"; host: the input holds "+h.input)
	ok, ev := h.hostFile(probeprog.OutFile(probeprog.Target), probeprog.OutContent(probeprog.Target))
	allowed(probeprog.WriteWorkspace, probeprog.Target, ok, "target: "+says(line(probeprog.Target, probeprog.WriteWorkspace))+"; host: "+ev)
	ok, ev = h.hostFile(probeprog.RuntimeFile, probeprog.RuntimeContent)
	l = line(probeprog.Target, probeprog.RunRuntime)
	allowed(probeprog.RunRuntime, probeprog.Target, ok && l != nil && l.Done,
		fmt.Sprintf("target ran %s %s: %s; host: %s", h.plan.Runtime, strings.Join(probeprog.RuntimeArgs, " "), says(l), ev))
	ok, ev = h.hostMetadata()
	allowed(probeprog.MetadataWorkspace, probeprog.Target, ok && line(probeprog.Target, probeprog.MetadataWorkspace) != nil &&
		line(probeprog.Target, probeprog.MetadataWorkspace).Done, "target: "+says(line(probeprog.Target, probeprog.MetadataWorkspace))+"; host: "+ev)
	for _, s := range []struct{ parent, who, check string }{
		{probeprog.Target, probeprog.Child, probeprog.SpawnChild},
		{probeprog.Child, probeprog.Grandchild, probeprog.SpawnGrandchild}} {
		pl, cl := line(s.parent, s.check), line(s.who, s.check)
		ok, ev := h.hostFile(probeprog.OutFile(s.who), probeprog.OutContent(s.who))
		inherited := cl != nil && cl.Done && strings.Contains(cl.Detail, "seccomp=2") && strings.Contains(cl.Detail, "nonewprivs=1")
		allowed(s.check, s.parent, ok && pl != nil && pl.Done && inherited,
			fmt.Sprintf("%s: %s; %s: %s; host: %s", s.parent, says(pl), s.who, says(cl), ev))
	}
	for _, who := range probeprog.Attackers {
		for _, check := range probeprog.Forbidden {
			l := line(who, check)
			hostOK, ev := h.hostForbidden(who, check, l, out)
			c := Check{Name: check, From: who, Expected: "fails", Observed: "not attempted",
				Evidence: who + ": " + says(l) + "; host: " + ev}
			if l != nil {
				c.Observed = "failed"
				if l.Done {
					c.Observed = "succeeded"
				}
			}
			if !hostOK && c.Observed != "succeeded" {
				c.Observed = "succeeded (seen on the host)"
			}
			c.Pass = l != nil && !l.Done && hostOK
			checks = append(checks, c)
		}
		if run.Ready != nil && run.Ready.MountNS {
			l := line(who, probeprog.ProtectedWrite)
			ok, ev := h.hostFile(probeprog.ProtectedFile, probeprog.ProtectedContent)
			if ok {
				ev = probeprog.ProtectedFile + " unchanged (bound read-only)"
			}
			c := Check{Name: probeprog.ProtectedWrite, From: who, Expected: "fails", Observed: "failed",
				Evidence: who + ": " + says(l) + "; host: " + ev, Pass: ok && l != nil && !l.Done}
			if !c.Pass {
				c.Observed = "succeeded"
			}
			checks = append(checks, c)
		}
	}
	return append(checks, h.denialChecks(run)...)
}

// launchCheck is the chain itself: the launcher confined and executed the
// probe program, which exited 0, and its whole group was confirmed gone.
func launchCheck(run lifecycle.Result) Check {
	c := Check{Name: "launch", From: "host", Allowed: true, Expected: "succeeds", Observed: "failed"}
	switch {
	case run.Ready == nil:
		c.Evidence = "the launcher did not confine the program"
	default:
		c.Evidence = fmt.Sprintf("Landlock ABI %d (fs %#x, net %#x, scoped %#x), seccomp %x",
			run.Ready.LandlockABI, run.Ready.HandledFS, run.Ready.HandledNet, run.Ready.Scoped, run.Ready.SeccompDigest)
	}
	if run.Err != nil {
		c.Evidence += fmt.Sprintf("; %s: %s", run.Err.Code, run.Err.Message)
	}
	if run.Ready != nil && run.Outcome == wire.Exited && run.ExitCode != nil && *run.ExitCode == 0 && run.GroupGone {
		c.Observed, c.Pass = "succeeded", true
		c.Evidence += "; exited 0, group confirmed gone"
	} else if run.Outcome != 0 {
		c.Evidence += "; outcome " + run.Outcome.String()
	}
	return c
}

// hostFile reads a workspace file back and compares it with want.
func (h *probeHost) hostFile(name, want string) (bool, string) {
	b, err := os.ReadFile(filepath.Join(h.ws, name))
	switch {
	case err != nil:
		return false, fmt.Sprintf("%s: %v", name, err)
	case string(b) != want:
		return false, fmt.Sprintf("%s holds %q, not %q", name, b, want)
	}
	return true, name + " read back as written"
}

// hostForbidden checks the host object of one forbidden attempt.
func (h *probeHost) hostForbidden(who, check string, l *probeprog.Line, out string) (bool, string) {
	absent := func(dir, name string) (bool, string) {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			return false, name + " exists outside the workspace"
		}
		return true, name + " absent outside the workspace"
	}
	notShown := func(secret, what string) (bool, string) {
		if strings.Contains(out, secret) {
			return false, what + " appears in the output"
		}
		return true, what + " does not appear in the output"
	}
	nothing := func(fd int, stream bool, what string) (bool, string) {
		if got := received(fd, stream); got != "" {
			return false, what + ": " + got
		}
		return true, what + " received nothing"
	}
	switch check {
	case probeprog.WriteOutside:
		return absent(h.outside, probeprog.EscapeFile(who))
	case probeprog.ReadSecret:
		return notShown(h.secret, "the secret")
	case probeprog.SymlinkEscape:
		ok, ev := notShown(h.secret, "the secret")
		ok2, ev2 := absent(h.outside, probeprog.LinkFile(who))
		return ok && ok2, ev + ", " + ev2
	case probeprog.TCPConnect:
		return nothing(h.tcp, true, "the TCP listener")
	case probeprog.UDPSend:
		return nothing(h.udp, false, "the UDP socket")
	case probeprog.UnixPathname:
		return nothing(h.unixPath, true, "the pathname unix listener")
	case probeprog.UnixAbstract:
		return nothing(h.abs, true, "the abstract unix listener")
	case probeprog.Signal, probeprog.Ptrace:
		if s := markerState(h.plan.MarkerPID); s != "" {
			return false, s
		}
		return true, "the marker process is alive, running and untraced"
	case probeprog.LeakedFD:
		st, err := os.Stat(filepath.Join(h.outside, probeprog.LeakFile))
		if err != nil || st.Size() != 0 {
			return false, "the leak marker file was written or is gone"
		}
		return true, "the leak marker file is empty"
	case probeprog.EnvCanary:
		return notShown(h.canaryEnv[0][strings.IndexByte(h.canaryEnv[0], '=')+1:], "the canary value")
	case probeprog.MetadataOutside:
		now, err := statMeta(filepath.Join(h.outside, probeprog.MetaFile))
		if err != nil || now != h.meta {
			return false, fmt.Sprintf("the outside file's metadata changed: %+v -> %+v (%v)", h.meta, now, err)
		}
		return true, "the outside file's mode, owner, xattrs and times are unchanged"
	case probeprog.UserNS:
		if l != nil && !l.Done && lifecycle.UserNamespaces() {
			return true, "the target could not make a user namespace; it stayed in the one its launcher was started in"
		}
		if l == nil || !strings.Contains(l.Detail, "ns="+h.userNS) {
			return false, "the target's user namespace is not the broker's " + h.userNS
		}
		return true, "the target stayed in the broker's user namespace " + h.userNS
	}
	panic("probe: internal error: unknown probe check " + check)
}

// says renders a target's line for the evidence.
func says(l *probeprog.Line) string {
	if l == nil {
		return "no report"
	}
	if l.Done {
		return "done " + l.Detail
	}
	return "failed " + l.Detail
}

// hostMetadata reads back what the target set on its workspace file.
func (h *probeHost) hostMetadata() (bool, string) {
	f := filepath.Join(h.ws, probeprog.OutFile(probeprog.Target))
	m, err := statMeta(f)
	switch {
	case err != nil:
		return false, err.Error()
	case m.mode&0o7777 != probeprog.MetaMode || m.mtime.Sec != probeprog.MetaMtime:
		return false, fmt.Sprintf("%s has mode %o and mtime %d, not %o and %d", probeprog.OutFile(probeprog.Target),
			m.mode&0o7777, m.mtime.Sec, probeprog.MetaMode, probeprog.MetaMtime)
	case h.xattrs && !strings.Contains(m.xattrs, probeprog.MetaXattr):
		return false, fmt.Sprintf("%s lacks the xattr %s", probeprog.OutFile(probeprog.Target), probeprog.MetaXattr)
	}
	return true, "mode, times and xattr read back as set"
}
