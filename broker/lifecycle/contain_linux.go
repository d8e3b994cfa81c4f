package lifecycle

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/broker/internal/audit"
	"warrant/broker/internal/egress"
	"warrant/broker/internal/metadata"
	"warrant/wire"
)

// osState is the Linux containment of one action: its cgroups, when the
// broker has any, and the server that answers its metadata calls.
type osState struct {
	cg         *actionCgroup
	meta       *metadata.Server // prepared once the launcher has its request; serving from Ready
	metaErr    error            // why there is no meta
	metaServed bool             // meta answered the target's listener: its denials are the target's
	session    *egress.Session  // the action's session of the egress proxy, opened with meta
	audit      *audit.Watch     // the kernel's records of Landlock's refusals, where the broker reads them
	scanned    bool             // the last survey looked at every process in /proc (else the cgroups held none)
}

// prepareMetadata makes the server that will answer the target's metadata
// calls for its writable scope: the workspace, HOME, TMPDIR and the
// policy's read-write paths, each of these only while it is its pin
// (broker/internal/metadata). It runs once the launcher has its request,
// while it confines itself.
func (s *supervisor) prepareMetadata() {
	q := s.spec.Request
	var pins []wire.PathPin
	for _, p := range q.Policy.ReadWrite {
		if pin, ok := q.Policy.Pin(p); ok { // every policy path has one (wire.Policy.validate)
			pins = append(pins, pin)
		}
	}
	s.meta, s.metaErr = metadata.Prepare(int(s.spec.Workspace.Fd()), []string{q.Home, q.Tmp}, pins)
	if s.meta != nil && q.ObserveWrites { // the launcher loads the filter that notifies write-intent opens
		s.meta.ObserveWrites()
	}
	if s.meta != nil && q.AuditDenials { // the launcher asks Landlock to log them (AuditDenials)
		if r, err := audit.Shared(); err == nil { // the launcher's pid creates the domain
			s.meta.WatchKernelAudit()
			s.audit = r.Watch(s.l.pid, s.meta.RecordAudit)
		}
	}
	if e := &s.spec.Egress; s.meta != nil && len(e.Granted) > 0 { // Egress.check: Proxy is set
		s.session = e.Proxy.Open(e.Lease, e.Granted, s.meta.Record)
		s.meta.AllowEgress(s.session)
	}
}

// serveMetadata takes the seccomp listener sent with Ready (exactly one
// descriptor, which must be a listener) and starts answering the target's
// metadata calls.
func (s *supervisor) serveMetadata(fds []int) error {
	if len(fds) != 1 {
		closeFDs(fds)
		return fmt.Errorf("the Ready reply carried %d descriptors, want the listener alone", len(fds))
	}
	if s.meta == nil {
		unix.Close(fds[0])
		return s.metaErr
	}
	if err := s.meta.Serve(fds[0]); err != nil {
		return err
	}
	s.metaServed = true
	return nil
}

// stopMetadata stops the metadata server once the action is over (its
// group is gone) and records what it answered; then, with no connect
// left to admit, closes the action's egress session and records what it
// carried. The denials are taken last: the proxy may refuse a request
// (Record) until the session has closed.
func (s *supervisor) stopMetadata() {
	if s.meta == nil {
		return
	}
	if s.audit != nil { // the group is gone: its last records are on their way
		s.audit.Close()
	}
	st := s.meta.Stop()
	s.r.MetadataDone, s.r.MetadataRefused = st.Done, st.Refused
	s.r.MetadataCPU, s.r.MetadataHeld = st.CPU, st.Held
	if s.session != nil {
		s.r.Egress = s.session.Close()
		s.session = nil
	}
	if s.metaServed {
		s.r.Denials = s.meta.Denials()
	}
	s.meta = nil
}

// noEgress is empty: the broker answers every connect of the target
// (broker/internal/metadata), so an egress grant is offered.
const noEgress = ""

// BecomeSubreaper makes this process the reaper of every orphaned
// descendant (PR_SET_CHILD_SUBREAPER). The broker calls it once at start.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// setup takes a warm launcher with its cgroups (Warm), or creates the
// action's cgroups, with the profile's memory and process-count limits,
// when the broker has cgroups; undo removes them, in the background, once
// the action is over and its counters were read.
func (s *supervisor) setup() (undo func(), err error) {
	if sl := s.spec.Warm.take(s.spec); sl != nil {
		if err := sl.adopt(s.spec.ID); err != nil {
			sl.discard()
		} else {
			s.warm = sl.l
			if sl.cg == nil {
				return func() {}, nil
			}
			s.cg = sl.cg
			s.r.Enforced = s.spec.Cgroup.enf
			return func() { s.spec.Cgroup.release(sl.cg) }, nil
		}
	}
	if s.spec.Cgroup == nil {
		return func() {}, nil
	}
	cg, err := s.spec.Cgroup.create(s.spec.ID, s.spec.Limits)
	if err != nil {
		return nil, fmt.Errorf("create the action's cgroups: %w", err)
	}
	s.cg = cg
	s.r.Enforced = s.spec.Cgroup.enf
	return func() { s.spec.Cgroup.release(cg) }, nil
}

// launch starts a launcher of path in the action's cgroups.
func (o *osState) launch(path string) (*launcher, error) { return o.cg.launch(path) }

// readUsage reads what the action's cgroups counted.
func (s *supervisor) readUsage() {
	if s.cg != nil {
		s.r.Usage = s.cg.usage()
	}
}

// killContainer kills every process of the action's cgroup at once.
func (s *supervisor) killContainer() {
	if s.cg != nil {
		s.cg.kill()
	}
}

// survey reads whether the action's cgroups are populated and finds the
// group's members other than the root. Descendants cannot leave the group
// here: the launcher's seccomp policy denies setsid and setpgid, and the
// cgroup holds them regardless. While the cgroups hold a process, or
// without cgroups, every process in /proc is looked at. Once they hold
// none, nothing of the group is alive: only zombies can be left, each a
// child of this broker (an orphan re-parented to it) or on its way to
// being one (its parent is exiting), and no process is looked at: settle
// reaps the root, then those zombies as they arrive, until the kernel
// says the group is empty (emptiedGroup).
func (s *supervisor) survey(pgid int) (snapshot, error) {
	var snap snapshot
	var err error
	if s.cg != nil {
		if snap.populated, err = s.cg.populated(); err != nil {
			return snapshot{}, fmt.Errorf("read whether the action's cgroup is populated: %w", err)
		}
		if !snap.populated {
			s.scanned = false
			return snap, nil
		}
	}
	if snap.group, err = groupMembers(pgid); err != nil {
		return snapshot{}, fmt.Errorf("scan /proc for group %d: %w", pgid, err)
	}
	s.scanned = true
	return snap, nil
}

// markGone records the group as gone and how that was confirmed.
func (s *supervisor) markGone(pgid int) {
	s.r.GroupGone = true
	var seen []string // settle adds the kernel's word once it has reaped what is left
	if s.scanned {
		seen = append(seen, fmt.Sprintf("no process of group %d remains in /proc", pgid))
	}
	if s.cg != nil {
		s.r.ByCgroup = true
		seen = append(seen, s.cg.evidence())
	}
	s.r.Evidence = strings.Join(seen, " and ")
}

// AuditDenials reports whether the next action's launcher should have
// Landlock log its refusals for the broker to read (audit.Available).
func AuditDenials() bool { return audit.Available() }
