package lifecycle

import (
	"bytes"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// groupMembers returns every process in process group pgid except the
// process pgid itself (the root, which supervise keeps as a zombie).
// Processes that vanish during the scan are skipped. It runs at the end of
// every action, so each stat file is read with one buffer and three
// system calls.
func groupMembers(pgid int) ([]member, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []member
	buf := make([]byte, 4096) // a stat line is well under 1 KiB
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == pgid {
			continue
		}
		fd, err := unix.Open("/proc/"+name+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or a kernel thread we may not read
		}
		n, err := unix.Read(fd, buf)
		unix.Close(fd)
		if err != nil {
			continue
		}
		m, group, ok := parseStat(pid, buf[:n])
		if ok && group == pgid {
			out = append(out, m)
		}
	}
	return out, nil
}

// readFile is os.ReadFile for the /proc and cgroup files read as each
// action ends, with bare system calls: open, read until EOF, close. The
// os.File that os.ReadFile builds (and its fstat and poller check) cost
// more than the read of such a file; the end of an action reads one per
// counter.
func readFile(path string) ([]byte, error) {
	var fd int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		var n int
		err := retry.EINTR(func() (err error) {
			n, err = unix.Read(fd, b[len(b):cap(b)])
			return err
		})
		switch {
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// parseStat reads state, ppid, pgrp and starttime from /proc/PID/stat.
// The command name may hold spaces and parentheses, so fields are counted
// from the last ')'.
func parseStat(pid int, st []byte) (m member, pgrp int, ok bool) {
	i := bytes.LastIndexByte(st, ')')
	if i < 0 {
		return m, 0, false
	}
	var f [statStart + 1][]byte // fields 3 (state) to 22 (starttime)
	rest := st[i+1:]
	for k := range f {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			return m, 0, false
		}
		f[k], rest = rest[:end], rest[end:]
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[statStart]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return m, 0, false
	}
	state := string(f[0])
	return member{pid: pid, ppid: ppid, start: start, zombie: state == "Z" || state == "X"}, pgrp, true
}

// statStart is the index of starttime (field 22 of proc_pid_stat(5):
// clock ticks after boot) among the fields that follow the command name.
const statStart = 19
