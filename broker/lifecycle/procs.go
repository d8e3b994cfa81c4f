package lifecycle

// member is one process found belonging to an action.
type member struct {
	pid, ppid int
	start     uint64 // clock ticks after boot (Linux; 0 where not read)
	zombie    bool
}

// proc is one row of a process table snapshot.
type proc struct {
	pid, ppid, pgid int
	zombie          bool
}

// classify splits one snapshot of the process table into the members of
// group pgid other than the root (pid pgid, kept a zombie by the
// supervisor) and the leavers: descendants of a group member that are no
// longer in the group (they called setsid or setpgid). A leaver's own
// descendants count as leavers too, whatever their group.
//
// Only descendants still linked by parent pid can be found: a process
// whose parent exited has been re-parented to init/launchd and no longer
// shows where it came from.
func classify(table []proc, pgid int) (group, leavers []member) {
	children := make(map[int][]proc)
	var queue []int
	for _, p := range table {
		children[p.ppid] = append(children[p.ppid], p)
		if p.pgid == pgid {
			queue = append(queue, p.pid)
			if p.pid != pgid {
				group = append(group, member{pid: p.pid, ppid: p.ppid, zombie: p.zombie})
			}
		}
	}
	seen := make(map[int]bool, len(queue))
	for _, pid := range queue {
		seen[pid] = true
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if seen[c.pid] {
				continue // in the group, or a loop in a torn snapshot
			}
			seen[c.pid] = true
			leavers = append(leavers, member{pid: c.pid, ppid: c.ppid, zombie: c.zombie})
			queue = append(queue, c.pid)
		}
	}
	return group, leavers
}
